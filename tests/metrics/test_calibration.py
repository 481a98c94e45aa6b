"""Calibration metrics on cases small enough to compute by hand."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.metrics import calibration
from memeval.metrics.calibration import (
    bootstrap,
    brier,
    calibration_report,
    expected_calibration_error,
    kendall,
    reliability_curve,
    spearman,
)


def test_rank_correlations() -> None:
    scores = np.array([0.1, 0.4, 0.35, 0.8])
    ranks = np.array([0, 1, 1, 2])
    assert spearman(scores, ranks) == pytest.approx(0.9486833, abs=1e-6)
    # pairs: 5 concordant, 0 discordant, one tied in ranks: tau-b = 5 / sqrt(6 * 5)
    assert kendall(scores, ranks) == pytest.approx(5 / np.sqrt(30))
    assert spearman(-scores, ranks) == pytest.approx(-0.9486833, abs=1e-6)


def test_brier() -> None:
    assert brier(np.array([1.0, 0.0, 0.5]), np.array([1, 0, 1])) == pytest.approx(0.25 / 3)


def test_equal_count_bins_and_ece() -> None:
    p = np.array([0.9, 0.1, 0.2, 0.8, 0.3, 0.7])
    y = np.array([1, 0, 1, 1, 0, 0])
    curve = reliability_curve(p, y, bins=3)
    assert [b["n"] for b in curve] == [2, 2, 2]
    assert [b["predicted"] for b in curve] == pytest.approx([0.15, 0.5, 0.85])
    assert [b["observed"] for b in curve] == pytest.approx([0.5, 0.0, 1.0])
    assert expected_calibration_error(p, y, bins=3) == pytest.approx(
        (0.35 + 0.5 + 0.15) / 3)


def test_a_perfectly_calibrated_score_has_near_zero_ece() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=20000)
    y = (rng.uniform(size=p.size) < p).astype(float)
    assert expected_calibration_error(p, y, bins=10) < 0.02
    assert expected_calibration_error(np.clip(p + 0.2, 0, 1), y, bins=10) > 0.15


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(1)
    scores = rng.normal(size=80)
    ranks = scores + rng.normal(scale=0.5, size=80)
    low, high = bootstrap(spearman, (scores, ranks), 300, seed=4)
    assert low < spearman(scores, ranks) < high
    assert bootstrap(spearman, (scores, ranks), 300, seed=4) == (low, high)


def test_report_reads_scores_as_percent() -> None:
    scores = np.array([10.0, 40.0, 35.0, 80.0, 90.0, 20.0])
    ranks = np.array([0, 1, 1, 2, 2, 0])
    outcomes = (ranks == 2).astype(float)
    report = calibration_report(scores, ranks, outcomes, bins=3, resamples=100, seed=0)
    assert report["brier"] == pytest.approx(brier(scores / 100, outcomes))
    assert report["n"] == 6 and len(report["reliability"]) == 3
    assert report["spearman_ci95"][0] <= report["spearman"] <= report["spearman_ci95"][1]


@pytest.mark.parametrize("n", [7, 80, calibration.KENDALL_PAIRWISE_UP_TO + 1])
def test_each_row_statistic_equals_its_one_record_set_form(n: int) -> None:
    """The vectorised resample statistics give, row by row, what the scalar ones give (ties,
    constant rows and both tau-b paths included), so CIs do not move."""
    rng = np.random.default_rng(n)
    p = rng.random((40, n))
    p[:, :3] = p[:, [3]]  # ties
    p[0] = 0.5  # a constant row: undefined rank agreement
    grade = rng.integers(0, 3, (40, n)).astype(float)
    outcome = (rng.random((40, n)) < p).astype(float)
    pairs = [(calibration.spearman, calibration.spearman_rows, grade),
             (calibration.kendall, calibration.kendall_rows, grade),
             (calibration.brier, calibration.brier_rows, outcome),
             (lambda a, b: calibration.expected_calibration_error(a, b, 5),
              lambda a, b: calibration.ece_rows(a, b, 5), outcome)]
    for scalar, rows, other in pairs:
        with np.errstate(all="ignore"):
            expected = np.array([scalar(a, b) for a, b in zip(p, other, strict=True)])
        assert np.allclose(rows(p, other), expected, rtol=0, atol=1e-12, equal_nan=True)
    assert np.isnan(calibration.spearman_rows(p, grade)[0])
