"""Ranking quality against graded labels."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at_k(ranked: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """Graded nDCG with the standard (2^g − 1) / log2(rank + 1) gain; 0 when nothing is
    relevant (the query cannot score), which callers exclude instead of averaging."""
    gain = sum((2 ** grades.get(item, 0) - 1) / math.log2(rank + 2)
               for rank, item in enumerate(ranked[:k]))
    ideal = sum((2**g - 1) / math.log2(rank + 2)
                for rank, g in enumerate(sorted(grades.values(), reverse=True)[:k]))
    return gain / ideal if ideal > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0
