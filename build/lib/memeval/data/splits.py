"""Seeded, label-stratified splits, so calibration and evaluation never share an entry."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from memeval.entry import Entry


def stratified_split(entries: Sequence[Entry], fraction: float,
                     seed: int) -> tuple[list[Entry], list[Entry]]:
    """(first, second): about `fraction` of each label goes to `first`; original order kept."""
    by_label: dict[str | None, list[int]] = defaultdict(list)
    for index, entry in enumerate(entries):
        by_label[entry.label].append(index)
    rng = np.random.default_rng(seed)
    chosen: set[int] = set()
    for label in sorted(by_label, key=str):
        indices = by_label[label]
        take = round(len(indices) * fraction)
        chosen.update(int(i) for i in rng.permutation(indices)[:take])
    first = [e for i, e in enumerate(entries) if i in chosen]
    second = [e for i, e in enumerate(entries) if i not in chosen]
    return first, second


def field_split(entries: Sequence[Entry], field: str, learn: Sequence[str],
                evaluate: Sequence[str] = ()) -> tuple[list[Entry], list[Entry]]:
    """(learn, evaluate) by an entry field (e.g. `session`): whole groups go one way, so an
    evaluated turn never shares its session with a learned one. Empty `evaluate`: every entry
    whose value is not in `learn`; otherwise entries with a value in neither list are left out
    (e.g. a development fold that must not touch the test sessions). An entry without the field
    is an error, not silently dropped."""
    first: list[Entry] = []
    second: list[Entry] = []
    for entry in entries:
        if field not in entry.meta:
            raise ValueError(f"entry '{entry.id}' has no field '{field}' to split by")
        value = str(entry.meta[field])
        if value in learn:
            first.append(entry)
        elif not evaluate or value in evaluate:
            second.append(entry)
    return first, second
