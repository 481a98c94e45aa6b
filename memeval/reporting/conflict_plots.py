"""Figure of a `conflict_detection` run: the confusion matrix of each detector, side by side."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from memeval.data.quality_sets import CONFLICT_LABELS
from memeval.reporting.figures import confusion_matrix, save
from memeval.results.run_dir import read_metrics

NAMES = ["contra.", "temporal", "semantic", "none"]


def make_conflict_figures(run_dir: str | Path) -> list[Path]:
    conflicts = read_metrics(run_dir)["conflicts"]
    out = Path(run_dir) / "figures"
    out.mkdir(exist_ok=True)
    modes = conflicts.get("detectors", ["memeval", "compat"])  # runs before the key existed
    fig, axes = plt.subplots(1, len(modes), figsize=(5.5 * len(modes), 4.8), squeeze=False)
    for ax, mode in zip(axes[0], modes, strict=True):
        accuracy = conflicts[mode]["accuracy"]
        confusion_matrix(ax, conflicts[mode]["confusion"], CONFLICT_LABELS,
                         f"{mode} (accuracy {accuracy:.3f})", "detected", NAMES)
    return [save(fig, out / "conflict_confusion.png")]
