"""Per-class precision and recall: the vectorised resamples agree with one-row-at-a-time."""

from __future__ import annotations

import numpy as np

from memeval.metrics.calibration import bootstrap
from memeval.metrics.classification import per_class_report, precision, recall


def test_the_cis_are_those_of_resampling_one_row_at_a_time() -> None:
    rng = np.random.default_rng(5)
    labels = ["none", "temporal", "semantic"]
    truth = rng.choice(labels, 60)
    guessed = np.where(rng.random(60) < 0.7, truth, rng.choice(labels, 60))
    guessed[guessed == "semantic"] = "none"  # a class never predicted: no precision at all
    report = per_class_report(list(truth), list(guessed), labels[1:], resamples=300, seed=4)
    for offset, cls in enumerate(labels[1:]):
        for name, fn in (("precision", precision), ("recall", recall)):
            expected = bootstrap(lambda a, b, fn=fn, cls=cls: fn(a, b, cls), (truth, guessed),
                                 300, 4 + offset)
            got = [np.nan if v is None else v for v in report[cls][f"{name}_ci95"]]
            assert np.allclose(got, expected, equal_nan=True)
    assert report["semantic"]["precision"] is None and report["semantic"]["recall"] == 0.0
