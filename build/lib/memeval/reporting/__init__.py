"""Reporters read run directories; a reporter that fails never loses the run."""
