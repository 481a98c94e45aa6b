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
    """An entry as the gate sees it: texts already redacted, whole text embedded once."""

    entry: Entry
    user_prompt: str
    text: str
    vector: np.ndarray | None


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
