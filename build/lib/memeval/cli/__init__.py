"""The commands behind `python -m memeval …` that are more than a run: listing, bench, the
regression gate, sweeps, the redaction scan."""
