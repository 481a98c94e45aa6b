"""The write-gate engine: its stages, content scorers and memory stores. It computes over what
the backends return (embeddings, judge verdicts) and does no I/O besides its own state files."""
