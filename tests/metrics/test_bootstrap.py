"""Percentile bootstrap CI of a mean: contains the mean, seeded, narrows with n and level."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memeval.metrics.bootstrap import bootstrap_ci, percentile_interval, resample_counts


def flags(n: int, rate: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < rate).astype(float)


def test_contains_the_mean() -> None:
    values = flags(200, 0.8)
    low, high = bootstrap_ci(values, 1000, seed=0)
    assert low < values.mean() < high
    assert low >= 0.0 and high <= 1.0


def test_seeded_deterministic() -> None:
    values = flags(100, 0.6)
    assert bootstrap_ci(values, 500, seed=3) == bootstrap_ci(values, 500, seed=3)
    assert bootstrap_ci(values, 500, seed=3) != bootstrap_ci(values, 500, seed=4)


def test_does_not_touch_global_random_state() -> None:
    np.random.seed(11)
    expected = np.random.random()
    np.random.seed(11)
    bootstrap_ci(flags(50, 0.5), 200, seed=0)
    assert np.random.random() == expected


def test_narrower_with_more_data_and_lower_level() -> None:
    small = bootstrap_ci(flags(40, 0.7), 1000, seed=0)
    large = bootstrap_ci(flags(1000, 0.7), 1000, seed=0)  # 25× the data: ~1/5 the width
    assert large[1] - large[0] < (small[1] - small[0]) / 3
    half = bootstrap_ci(flags(40, 0.7), 1000, seed=0, level=0.5)
    assert half[1] - half[0] < small[1] - small[0]


def test_width_matches_the_normal_approximation() -> None:
    values = flags(1000, 0.5, seed=2)
    low, high = bootstrap_ci(values, 2000, seed=0)
    se = values.std() / math.sqrt(values.size)
    assert (high - low) == pytest.approx(2 * 1.96 * se, rel=0.1)


def test_constant_values_give_a_point() -> None:
    assert bootstrap_ci(np.ones(30), 100, seed=0) == (1.0, 1.0)


def test_empty_is_nan() -> None:
    low, high = bootstrap_ci(np.array([]), 100, seed=0)
    assert math.isnan(low) and math.isnan(high)


def test_resample_counts_are_the_draws_bootstrap_ci_makes() -> None:
    values = flags(80, 0.6)
    counts = resample_counts(values.size, 300, seed=5)
    assert counts.shape == (300, 80) and (counts.sum(axis=1) == 80).all()
    means = counts @ values / values.size
    assert percentile_interval(means, 0.95) == pytest.approx(bootstrap_ci(values, 300, seed=5))
