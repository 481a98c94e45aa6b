"""Fitting MQS's constants: the fit recovers known weights, and out-of-fold never sees the
record it scores."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.metrics.mqs_fit import features, fit_constants, out_of_fold_scores
from memeval.quality.mqs import MQSConstants
from memeval.quality.record import MemoryRecord


def synthetic(n: int, seed: int) -> tuple[list[MemoryRecord], np.ndarray]:
    """Trusted with probability equal to the declared confidence, nothing else informative."""
    rng = np.random.default_rng(seed)
    confidences = rng.uniform(size=n)
    records = [MemoryRecord(f"r{i}", "fact", float(c)) for i, c in enumerate(confidences)]
    trusted = (rng.uniform(size=n) < confidences).astype(float)
    return records, trusted


def test_features_are_what_each_constant_multiplies() -> None:
    records = [MemoryRecord("a", "x", 0.7, success_count=1, failure_count=1, access_count=14,
                            conflicts=["b", "c"], hedged=True)]
    np.testing.assert_allclose(features(records, {}, MQSConstants()),
                               [[0.7, 0.5, 10.0, -2.0, -1.0]])


def test_fit_recovers_a_confidence_only_truth() -> None:
    records, trusted = synthetic(3000, seed=0)
    fitted = fit_constants(features(records, {}, MQSConstants()), trusted, MQSConstants())
    assert fitted.confidence_points == pytest.approx(100, abs=8)
    assert fitted.usage_points < 8  # a constant 0.5 for every record: nearly no weight
    assert fitted.access_cap == 10 and fitted.max_hops == 5  # structure is not fitted


def test_out_of_fold_scores_are_seeded_and_clamped() -> None:
    records, trusted = synthetic(200, seed=1)
    x = features(records, {}, MQSConstants())
    first = out_of_fold_scores(records, {}, x, trusted, MQSConstants(), folds=5, seed=3)
    assert np.array_equal(first, out_of_fold_scores(records, {}, x, trusted, MQSConstants(), 5, 3))
    assert first.min() >= 0 and first.max() <= 100 and np.all(first == np.round(first))
    assert np.corrcoef(first, [r.confidence for r in records])[0, 1] > 0.95
