"""Writing a figure: laid out to fit, one resolution for every report, closed (runs are headless
and draw many figures); and the drawing helpers several figures share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba_array
from matplotlib.typing import ColorType
from numpy.typing import ArrayLike

Colour = ColorType | ArrayLike  # a name, or RGB(A) values as an image gives them


def save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _luminance(colour: Colour) -> float:
    """Relative luminance (WCAG 2): sRGB channels linearised, weighted as the eye sees them."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
              for c in to_rgba_array(colour)[0, :3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: Colour, b: Colour) -> float:
    """WCAG contrast ratio of two colours, 1 (none) to 21 (black on white)."""
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def ink_on(background: Colour) -> str:
    """Black or white, whichever reads better on `background`: at least 4.5:1 on any colour."""
    return max(("black", "white"), key=lambda ink: contrast(ink, background))


def confusion_matrix(ax: plt.Axes, counts: Mapping[str, Mapping[str, int]], labels: Sequence[str],
                     title: str, predicted: str, names: Sequence[str] | None = None) -> None:
    """Hand labels down, predictions across, each cell counted."""
    matrix = np.array([[counts[truth][guess] for guess in labels] for truth in labels])
    cells = ax.imshow(matrix, cmap="Blues").to_rgba(matrix)
    for (i, j), count in np.ndenumerate(matrix):
        ax.text(j, i, str(count), ha="center", va="center", color=ink_on(cells[i, j]))
    ticks = list(names or labels)
    ax.set_xticks(range(len(labels)), ticks)
    ax.set_yticks(range(len(labels)), ticks)
    ax.set_xlabel(predicted)
    ax.set_ylabel("hand label")
    ax.set_title(title)
