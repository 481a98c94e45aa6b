"""What `python -m memeval list` and `run --help` show, read from memeval/conf/, the registries and
the schema dataclasses."""
