"""Figures of a `mai_calibration` run: a confusion matrix per scorer (the rubric, the learned
MAI) for each set scored."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from memeval.quality.mai import MAI_LABELS
from memeval.reporting.figures import confusion_matrix, save

SETS = {"development": "development, out of fold", "test": "test split",
        "golden_style": "golden-style test split", "golden": "memledger's golden set"}


def make_mai_figures(run_dir: Path, scored: Mapping[str, Mapping[str, Any] | None]) -> list[Path]:
    """`scored`: each set's section by key (development, test…); None where it was skipped."""
    out = run_dir / "figures"
    out.mkdir(exist_ok=True)
    names = [label.replace("_attributed", "") for label in MAI_LABELS]
    paths = []
    for key, title in SETS.items():
        block = scored.get(key)
        if not block or "rubric" not in block:  # skipped
            continue
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, scorer in zip(axes, ("rubric", "learned"), strict=True):
            scores = block[scorer]
            confusion_matrix(ax, scores["confusion"], MAI_LABELS,
                             f"{scorer}, {title} (accuracy {scores['accuracy']:.3f})",
                             f"{scorer} label", names)
        paths.append(save(fig, out / f"mai_confusion_{key}.png"))
    return paths
