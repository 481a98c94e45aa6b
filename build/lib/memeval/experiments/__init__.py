"""Protocols that replay datasets through the gate: three_pass, holdout, feedback_loop."""
