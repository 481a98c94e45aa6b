"""Metrics computed from per-entry decisions: never from the engine's internals."""
