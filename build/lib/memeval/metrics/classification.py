"""Per-class precision and recall over labelled items; nan where a class is never predicted
(precision) or never labelled (recall), never a silent 0."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memeval.metrics.calibration import bootstrap_rows


def precision(truth: np.ndarray, predicted: np.ndarray, cls: str) -> float:
    chosen = predicted == cls
    return float((truth[chosen] == cls).mean()) if chosen.any() else float("nan")


def recall(truth: np.ndarray, predicted: np.ndarray, cls: str) -> float:
    actual = truth == cls
    return float((predicted[actual] == cls).mean()) if actual.any() else float("nan")


def precision_rows(actual: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Per row of resampled is-this-class flags: the share of chosen items that are the class
    (nan where none is chosen), as `precision` gives for one row."""
    with np.errstate(all="ignore"):
        return (actual & chosen).sum(axis=1) / chosen.sum(axis=1)


def recall_rows(actual: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    return precision_rows(chosen, actual)


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None


def per_class_report(truth: Sequence[str], predicted: Sequence[str], classes: Sequence[str], *,
                     resamples: int, seed: int) -> dict[str, Any]:
    """Precision, recall and F1 per class, each with a bootstrap CI over items."""
    t, p = np.asarray(truth), np.asarray(predicted)
    report: dict[str, Any] = {}
    for offset, cls in enumerate(classes):
        row: dict[str, Any] = {"support": int((t == cls).sum()),
                               "predicted": int((p == cls).sum())}
        for name, fn, rows in (("precision", precision, precision_rows),
                               ("recall", recall, recall_rows)):
            low, high = bootstrap_rows(rows, (t == cls, p == cls), resamples, seed + offset)
            row[name] = _finite(fn(t, p, cls))
            row[f"{name}_ci95"] = [_finite(low), _finite(high)]
        pr, rc = row["precision"], row["recall"]
        row["f1"] = 2 * pr * rc / (pr + rc) if pr and rc else (0.0 if pr == 0 or rc == 0
                                                                else None)
        report[cls] = row
    return report
