"""Which gold answers memory QA can score, for the benchmark loaders (locomo.py, longmemeval.py).

A gold answer is text, or a number read as text (`2022`, `3.5`). Anything else cannot be scored
against an answer: null, a boolean, NaN or infinity, a list (its items could be alternatives or
parts, and F1 against them joined scores neither), an object, blank text. Such a question keeps
its part in retrieval but is left out of memory QA, and the loader counts it (`gold_unscored`)
and names the first few in one problem line, never dropping it unseen.
"""

from __future__ import annotations

import math
from typing import Any

from memeval.data.base import DatasetError, LoadReport
from memeval.data.corpus_jsonl import count
from memeval.utils.redact import redact


def gold_text(value: Any) -> tuple[str | None, str]:
    """(the gold as text, "") or (None, what it is instead: "list", "null", "NaN"…)."""
    if isinstance(value, str):
        return (value, "") if value.strip() else (None, "blank")
    if isinstance(value, bool):
        return None, "boolean"
    if isinstance(value, int):
        return str(value), ""
    if isinstance(value, float):
        if math.isfinite(value):
            return str(value), ""
        return None, "NaN" if math.isnan(value) else "infinity"
    kinds = {type(None): "null", list: "list", dict: "object"}
    return None, kinds.get(type(value), type(value).__name__)


class UnscoredGold:
    """The questions of one file whose gold memory QA cannot score: each counted and told as a
    problem by `close()` (with `on_error: raise`, the first one is a DatasetError)."""

    def __init__(self, report: LoadReport, source: str, on_error: str) -> None:
        self.report, self.source, self.on_error = report, source, on_error
        self.seen: list[tuple[str, str]] = []  # (question, what its gold is)

    def text(self, value: Any, question: str) -> str | None:
        gold, why = gold_text(value)
        if gold is None:
            if self.on_error == "raise":
                raise DatasetError(redact(f"{self.source}: question {question}: its gold "
                                          f"answer ({why}) is not text or a number"))
            self.seen.append((question, why))
        return gold

    def close(self) -> None:
        """Each question counted (`gold_unscored`) and told as a problem, aggregated with the
        others of its kind (the load report keeps the first few and a count)."""
        if self.seen:
            count(self.report, "gold_unscored", len(self.seen))
        for question, why in self.seen:
            self.report.skip(f"{self.source}: question {question}",
                             f"left out of memory QA: its gold answer ({why}) is not text or a "
                             f"number")
