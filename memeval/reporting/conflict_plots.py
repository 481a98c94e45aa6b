"""Figure of a `conflict_detection` run: confusion matrices side by side. With the learned
detector (the run's headline), it and the rules on the same held-out pairs; without it, each
detector the run scored on the hand-labelled pairs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from memeval.data.quality_sets import CONFLICT_LABELS
from memeval.reporting.figures import confusion_matrix, save
from memeval.results.sections import Conflicts

NAMES = ["contra.", "temporal", "semantic", "none"]
# The learned table's splits, the headline's first: the test split, else the CV on development.
SPLITS = {"test": "test split, never trained on", "dev": "development pairs, out of fold"}
# Its prediction columns: the learned detector, and the rules as memeval reads them.
LEARNED_PANELS = {"learned_predicted": "learned detector", "memeval_predicted": "word rules"}

Confusion = Mapping[str, Mapping[str, int]]


def counts(truth: pd.Series, guessed: pd.Series) -> dict[str, dict[str, int]]:
    """Pairs per hand label and guess, every label present (zero where none)."""
    return {t: {g: int(((truth == t) & (guessed == g)).sum()) for g in CONFLICT_LABELS}
            for t in CONFLICT_LABELS}


def _pairs(confusion: Confusion) -> int:
    return sum(n for row in confusion.values() for n in row.values())


def _accuracy(confusion: Confusion) -> float:
    return sum(confusion[label][label] for label in CONFLICT_LABELS) / max(_pairs(confusion), 1)


def learned_panels(learned: pd.DataFrame) -> tuple[str, dict[str, Confusion]]:
    """The learned detector and the rules on the headline split: which split, and each panel."""
    split = next(s for s in SPLITS if (learned["split"] == s).any())
    rows = learned[learned["split"] == split]
    return SPLITS[split], {name: counts(rows["label"], rows[column])
                           for column, name in LEARNED_PANELS.items()}


def confusion_figure(conflicts: Conflicts, learned: pd.DataFrame | None) -> plt.Figure:
    """`learned`: the run's per-pair table of the learned detector, None when it was not run."""
    if learned is not None and learned["split"].isin(list(SPLITS)).any():
        where, panels = learned_panels(learned)
    else:
        where = "hand-labelled pairs"
        panels = {mode: conflicts.by_detector[mode].confusion for mode in conflicts.detectors}
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5.1), squeeze=False)
    for ax, (name, confusion) in zip(axes[0], panels.items(), strict=True):
        confusion_matrix(ax, confusion, CONFLICT_LABELS,
                         f"{name} (accuracy {_accuracy(confusion):.3f})", "detected", NAMES)
    fig.suptitle(f"Conflict detection on the {where} ({_pairs(next(iter(panels.values())))} "
                 "pairs)")
    return fig


def make_conflict_figures(run_dir: Path, conflicts: Conflicts,
                          learned: pd.DataFrame | None) -> list[Path]:
    out = run_dir / "figures"
    out.mkdir(exist_ok=True)
    return [save(confusion_figure(conflicts, learned), out / "conflict_confusion.png")]
