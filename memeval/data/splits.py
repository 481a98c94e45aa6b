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
