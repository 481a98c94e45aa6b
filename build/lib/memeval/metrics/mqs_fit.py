"""Fit MQS's constants to trust labels, and measure the gain out of fold.

MQS is linear before rounding and clamping: points × effective confidence + points × Laplace
success rate + points × capped accesses − penalty × conflicts − penalty × hedged. So its five
constants are the weights of a non-negative least-squares fit of 100 × [trusted] on those five
features — the Brier-optimal constants for reading MQS / 100 as P(trusted). Structure (the
access cap, the hop limit, Laplace smoothing) stays the seed's; only the weights are fitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from memeval.quality.mqs import MQSConstants, compute_mqs
from memeval.quality.record import MemoryRecord
from memeval.utils.folds import out_of_fold, stratified_splits

FITTED = ("confidence_points", "usage_points", "access_points_each", "conflict_penalty",
          "hedged_penalty")


def features(records: Sequence[MemoryRecord], ledger: Mapping[str, MemoryRecord],
             constants: MQSConstants) -> np.ndarray:
    """Per record, the factor each fitted constant multiplies (penalties with their sign)."""
    ones: dict[str, Any] = dict.fromkeys(FITTED, 1.0)
    unit = replace(constants, **ones)
    rows = []
    for record in records:
        b = compute_mqs(record, ledger, unit)
        rows.append([b.effective_confidence, b.usage, b.access,
                     -b.conflict_penalty, -b.hedged_penalty])
    return np.array(rows, dtype=float)


def fit_constants(x: np.ndarray, trusted: np.ndarray, base: MQSConstants) -> MQSConstants:
    from sklearn.linear_model import LinearRegression  # loaded on the first fit

    model = LinearRegression(positive=True, fit_intercept=False).fit(x, 100.0 * trusted)
    weights: dict[str, Any] = {name: float(w) for name, w in zip(FITTED, model.coef_, strict=True)}
    return replace(base, **weights)


def out_of_fold_scores(records: Sequence[MemoryRecord], ledger: Mapping[str, MemoryRecord],
                       x: np.ndarray, trusted: np.ndarray, base: MQSConstants, folds: int,
                       seed: int) -> np.ndarray:
    """Each record scored (rounded, clamped, as compute_mqs does) with constants fitted on the
    other folds only; `x` is `features(records, ledger, base)`."""
    def predict(train: np.ndarray, held: np.ndarray) -> list[float]:
        fitted = fit_constants(x[train], trusted[train], base)
        return [compute_mqs(records[i], ledger, fitted).score for i in held]

    return np.asarray(out_of_fold(stratified_splits(trusted, folds, seed), len(records),
                                  predict), dtype=float)
