"""A figure a doc states, read off it by a regex, and whether it is what an artefact says."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a figure as the docs write it: thousands commas, a sign (− or -), decimals
NUMBER = r"([−+-]?\d[\d,]*(?:\.\d+)?)"


@dataclass(frozen=True)
class Claim:
    """A figure in `doc`: `pattern` (NUM marks the figure) and what the artefact says it is."""

    doc: str
    pattern: str
    truth: Callable[[], float]

    def figures(self) -> dict[str, str]:
        """Each figure the doc states, by the words that state it (up to the figure)."""
        regex = re.compile(self.pattern.replace("NUM", NUMBER), re.MULTILINE)
        return {found[0][-80:]: found[1] for found in regex.finditer(text(self.doc))}


@cache
def text(doc: str) -> str:
    return (ROOT / doc).read_text()


def value(figure: str) -> float:
    return float(figure.replace(",", "").replace("−", "-"))


def agrees(figure: str, truth: float) -> bool:
    """The figure is the truth rounded to the figure's own decimals (either way on a tie)."""
    decimals = len(figure.partition(".")[2])
    return abs(value(figure) - truth) <= 0.5 * 10 ** -decimals + 1e-9


def cell(row: str, column: int, part: int = 0, table: str = "") -> str:
    """The figure in a Markdown table's row starting `row` (a regex), `column` cells after the
    first, in the `part`-th ` / `-separated piece of that cell; `table` (the start of its header
    row) picks the table where a row title is in several."""
    within = rf"^\| {table}[^\n]*\n(?:\|[^\n]*\n)*?" if table else ""
    end = r"\b(?![-.])" if re.search(r"\w$", row) else ""  # `0` is not the row `0.5`
    return (within + rf"^\| [*`]*{row}{end}[^|\n]*\|" + r"[^|\n]*\|" * (column - 1)
            + rf"(?:[^|/\n]*/){{{part}}}[^|/\d\n]*?NUM")
