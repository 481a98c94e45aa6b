"""What flows through the gate and what each stage says about it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from memeval.backends.judges.base import Verdict
from memeval.entry import Entry
from memeval.registry import Registry


@dataclass
class Candidate:
    """An entry as the gate sees it: texts already redacted, embedded once. `vector` embeds
    `view` (the content stage's view of `text`), which is `text` itself unless set."""

    entry: Entry
    user_prompt: str
    text: str
    vector: np.ndarray | None
    view: str | None = None

    @property
    def embedded(self) -> str:
        """The text `vector` embeds."""
        return self.text if self.view is None else self.view


@dataclass
class StageResult:
    stage: str
    passed: bool
    score: float | None = None
    threshold: float | None = None
    detail: str = ""
    verdict: Verdict | None = None


class Stage(Protocol):
    name: str

    def __call__(self, item: Candidate) -> StageResult: ...


STAGES: Registry[Stage] = Registry("gate stage")
