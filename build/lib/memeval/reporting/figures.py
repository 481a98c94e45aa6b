"""Writing a figure: laid out to fit, one resolution for every report, closed (runs are headless
and draw many figures)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def confusion_matrix(ax: plt.Axes, counts: Mapping[str, Mapping[str, int]], labels: Sequence[str],
                     title: str, predicted: str, names: Sequence[str] | None = None) -> None:
    """Hand labels down, predictions across, each cell counted."""
    matrix = np.array([[counts[truth][guess] for guess in labels] for truth in labels])
    ax.imshow(matrix, cmap="Blues")
    for (i, j), count in np.ndenumerate(matrix):
        ax.text(j, i, str(count), ha="center", va="center")
    ticks = list(names or labels)
    ax.set_xticks(range(len(labels)), ticks)
    ax.set_yticks(range(len(labels)), ticks)
    ax.set_xlabel(predicted)
    ax.set_ylabel("hand label")
    ax.set_title(title)
