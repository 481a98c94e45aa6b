"""Ranking quality against graded labels, and agreement between two rankings."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from scipy.stats import kendalltau


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


def rank_agreement(before: Mapping[str, float], after: Mapping[str, float]) -> float | None:
    """Kendall τ-b between two score maps over the items both rank; None with under 2 items or
    when either side is constant."""
    common = sorted(set(before) & set(after))
    if len(common) < 2:
        return None
    tau = kendalltau([before[i] for i in common], [after[i] for i in common]).statistic
    return None if math.isnan(tau) else float(tau)
