"""Percentile bootstrap confidence intervals with a local, seeded generator."""

from __future__ import annotations

import numpy as np


def bootstrap_ci(values: np.ndarray, resamples: int, seed: int,
                 level: float = 0.95) -> tuple[float, float]:
    """CI of the mean of `values` (e.g. 0/1 retained flags); (nan, nan) when empty."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, values.size, size=(resamples, values.size))
    return percentile_interval(values[draws].mean(axis=1), level)


def percentile_interval(estimates: np.ndarray | list[float],
                        level: float) -> tuple[float, float]:
    """The central `level` share of bootstrap estimates."""
    tail = (1.0 - level) / 2.0
    return float(np.quantile(estimates, tail)), float(np.quantile(estimates, 1.0 - tail))
