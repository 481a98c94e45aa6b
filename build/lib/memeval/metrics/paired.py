"""Two systems (or runs) measured on the same items: the difference with a paired bootstrap CI,
and McNemar's exact test on their yes/no decisions.

Pairing by item is what makes a small difference detectable: both saw the same items, so the
question is how often they decided differently, not how two independent rates differ.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memeval.metrics.bootstrap import bootstrap_ci


def mcnemar(first: np.ndarray, second: np.ndarray) -> dict[str, Any]:
    """Exact McNemar test: among items decided differently, is either side's way more common
    than chance (p of a two-sided binomial test at 1/2)?"""
    only_first = int((first & ~second).sum())
    only_second = int((~first & second).sum())
    discordant = only_first + only_second
    from scipy.stats import binomtest  # scipy.stats loads when used

    p = float(binomtest(only_first, discordant, 0.5).pvalue) if discordant else 1.0
    return {"kept_only_by_first": only_first, "kept_only_by_second": only_second,
            "p_value": p}


def paired_delta(first: np.ndarray, second: np.ndarray, *, resamples: int,
                 seed: int) -> dict[str, Any]:
    """Means of two per-item measures and second − first with a paired bootstrap 95% CI."""
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if not a.size:
        return {"first": None, "second": None, "delta": None, "delta_ci95": [None, None]}
    low, high = bootstrap_ci(b - a, resamples, seed)
    return {"first": float(a.mean()), "second": float(b.mean()), "delta": float((b - a).mean()),
            "delta_ci95": [low, high]}
