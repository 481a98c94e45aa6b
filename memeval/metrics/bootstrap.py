"""Percentile bootstrap confidence intervals with a local, seeded generator."""

from __future__ import annotations

import numpy as np


def bootstrap_ci(values: np.ndarray, resamples: int, seed: int,
                 level: float = 0.95) -> tuple[float, float]:
    """CI of the mean of `values` (e.g. 0/1 retained flags); (nan, nan) when empty."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return float("nan"), float("nan")
    return percentile_interval(values[_draws(values.size, resamples, seed)].mean(axis=1), level)


def _draws(size: int, resamples: int, seed: int) -> np.ndarray:
    """Each resample's item indices, drawn with replacement: one row per resample."""
    return np.random.default_rng(seed).integers(0, size, size=(resamples, size))


def resample_counts(size: int, resamples: int, seed: int) -> np.ndarray:
    """How often each of `size` items is drawn in each resample (one row per resample), the
    draws `bootstrap_ci` makes with the same seed: several measures weighted by the same rows
    are resampled together, paired, and a ratio of two sums is one matrix product away."""
    draws = _draws(size, resamples, seed)
    rows = np.repeat(np.arange(resamples), size)
    return np.bincount(rows * size + draws.ravel(), minlength=resamples * size).reshape(
        resamples, size)


def percentile_interval(estimates: np.ndarray | list[float],
                        level: float) -> tuple[float, float]:
    """The central `level` share of bootstrap estimates."""
    tail = (1.0 - level) / 2.0
    return float(np.quantile(estimates, tail)), float(np.quantile(estimates, 1.0 - tail))
