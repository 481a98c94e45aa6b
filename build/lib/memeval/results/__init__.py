"""The run directory: the only thing the runner produces, and what every reporter reads."""
