"""Where memeval's bundled data lives, for every layer that reads it."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "data"


def data_path(relative: str) -> str:
    """`${memeval_data:labeled/x.jsonl}` → a bundled data file, wherever memeval is checked out."""
    return str(DATA_DIR / relative)
