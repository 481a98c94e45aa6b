"""The reference scoring and filtering engine: no I/O besides its own state files."""
