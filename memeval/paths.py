"""Where memeval's bundled data and its configs live, for every layer that reads them."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
CONF_DIR = Path(__file__).resolve().parent / "conf"  # the package Hydra reads, memeval.conf


def data_path(relative: str) -> str:
    """`${memeval_data:labeled/x.jsonl}` → a bundled data file, wherever memeval is checked out."""
    return str(DATA_DIR / relative)


def shown_path(path: str) -> str:
    """A data file as a user may see it in anything sent off the machine: relative to the
    repository (`data/mqs/x.jsonl`) when it lies inside it, else its name alone, never an
    absolute path that tells where and under whose home memeval runs."""
    if not path:
        return path
    resolved = Path(path).expanduser().resolve()
    root = DATA_DIR.parent
    return str(resolved.relative_to(root)) if resolved.is_relative_to(root) else resolved.name
