"""AUROC of substantive against low-value memories, with its bootstrap CI."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.metrics.separation import auroc, separation


def test_auroc_reads_as_a_pairwise_win_rate() -> None:
    positives = np.array([True, True, False, False])
    assert auroc(np.array([4, 3, 2, 1]), positives) == 1.0
    assert auroc(np.array([1, 2, 3, 4]), positives) == 0.0
    assert auroc(np.array([3, 1, 2, 0]), positives) == 0.75  # 3 of 4 pairs won
    assert auroc(np.array([1, 1, 1, 1]), positives) == 0.5  # ties count half


def test_auroc_is_undefined_with_one_class() -> None:
    assert np.isnan(auroc(np.array([1.0, 2.0]), np.array([True, True])))


def test_noise_and_low_value_are_both_low_value_and_unlabelled_rows_are_counted() -> None:
    report = separation([9, 8, 3, 2, 100], ["substantive", "substantive", "low_value", "noise",
                                            None], resamples=200, seed=0)
    assert report["auroc"] == 1.0  # the unlabelled 100 is left out
    assert (report["substantive"], report["low_value"], report["unlabelled"]) == (2, 2, 1)
    low, high = report["auroc_ci95"]
    assert low is not None and high is not None and low <= 1.0 <= high


def test_no_low_value_memories_gives_none_not_a_number() -> None:
    report = separation([9, 8], ["substantive", "substantive"], resamples=50, seed=0)
    assert report["auroc"] is None and report["auroc_ci95"] == [None, None]


def test_the_ci_covers_an_imperfect_auroc() -> None:
    rng = np.random.default_rng(1)
    labels = ["substantive"] * 60 + ["low_value"] * 40
    scores = np.concatenate([rng.normal(1, 1, 60), rng.normal(0, 1, 40)])
    report = separation(scores.tolist(), labels, resamples=500, seed=0)
    low, high = report["auroc_ci95"]
    assert 0.5 < low < report["auroc"] < high < 1.0
    assert report["auroc"] == pytest.approx(auroc(scores, np.array(labels) == "substantive"))


def test_auroc_agrees_with_sklearn_including_ties() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    scores = rng.integers(0, 6, 80).astype(float)  # many ties
    positives = rng.random(80) < 0.6
    assert auroc(scores, positives) == pytest.approx(roc_auc_score(positives, scores))
