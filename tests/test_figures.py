"""Figures that read at full size: numbers legible on their cells, the headline detector shown,
legends that hide nothing and list only what is drawn, axes from zero that name their k, and
counts and points that say what they are."""

from __future__ import annotations

import matplotlib.pyplot as plt

from memeval.reporting.figures import confusion_matrix, contrast


def _cell_contrasts(ax: plt.Axes) -> list[float]:
    """Each count's contrast against the colour of the cell it is printed on."""
    image = ax.get_images()[0]
    matrix = image.get_array()
    assert matrix is not None
    cells = image.to_rgba(matrix)
    return [contrast(text.get_color(), cells[round(text.get_position()[1]),
                                             round(text.get_position()[0])])
            for text in ax.texts]


def test_every_count_of_a_confusion_matrix_reads_on_its_cell() -> None:
    labels = ["a", "b", "c"]
    counts = {"a": {"a": 30, "b": 0, "c": 14}, "b": {"a": 3, "b": 22, "c": 8},
              "c": {"a": 1, "b": 17, "c": 26}}
    fig, ax = plt.subplots()
    confusion_matrix(ax, counts, labels, "t", "guess")
    contrasts = _cell_contrasts(ax)
    assert len(contrasts) == 9 and min(contrasts) >= 4.5  # WCAG AA for normal text
    assert {t.get_color() for t in ax.texts} == {"black", "white"}  # dark cells get white
    plt.close(fig)
