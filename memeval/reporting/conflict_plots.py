"""Figure of a `conflict_detection` run: the confusion matrix of each detector, side by side."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from memeval.data.quality_sets import CONFLICT_LABELS
from memeval.reporting.figures import confusion_matrix, save
from memeval.results.sections import Conflicts

NAMES = ["contra.", "temporal", "semantic", "none"]


def make_conflict_figures(run_dir: Path, conflicts: Conflicts) -> list[Path]:
    out = run_dir / "figures"
    out.mkdir(exist_ok=True)
    modes = conflicts.detectors
    fig, axes = plt.subplots(1, len(modes), figsize=(5.5 * len(modes), 4.8), squeeze=False)
    for ax, mode in zip(axes[0], modes, strict=True):
        scores = conflicts.by_detector[mode]
        confusion_matrix(ax, scores.confusion, CONFLICT_LABELS,
                         f"{mode} (accuracy {scores.accuracy:.3f})", "detected", NAMES)
    return [save(fig, out / "conflict_confusion.png")]
