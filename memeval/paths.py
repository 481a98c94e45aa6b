"""Where memeval's bundled data and its configs live, for every layer that reads them."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
CONF_DIR = Path(__file__).resolve().parent / "conf"  # the package Hydra reads, memeval.conf


def data_path(relative: str) -> str:
    """`${memeval_data:labeled/x.jsonl}` → a bundled data file, wherever memeval is checked out."""
    return str(DATA_DIR / relative)
