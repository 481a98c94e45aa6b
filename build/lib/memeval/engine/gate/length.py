"""Length gate: too short to hold a reusable fact (memoryd: under 80 trimmed characters).

`measure: claims` counts only what the turn claims once its narration is set aside
(narration.py): "Perfect! Now let me run the full benchmark:" claims nothing, however long,
while "The issue is `\\qedhere` inside an align environment. Let me fix it." keeps a 50-character
finding that an 80-character cut on the whole turn would drop.
"""

from __future__ import annotations

from dataclasses import dataclass

from memeval.engine.gate.base import STAGES, Candidate, StageResult
from memeval.engine.gate.narration import VIEWS, Narration, check_view
from memeval.registry import bounded


@dataclass
class LengthConfig:
    min_chars: int = bounded(80, 0)
    measure: str = "whole"

    def validate(self) -> None:
        if self.min_chars < 0:
            raise ValueError("min_chars must be non-negative")
        check_view(self.measure)


class LengthGate:
    name = "length"

    def __init__(self, cfg: LengthConfig, narration: Narration | None = None) -> None:
        self.min_chars = cfg.min_chars
        self.measure = cfg.measure
        self.narration = narration

    def __call__(self, item: Candidate) -> StageResult:
        text = item.text if self.narration is None else VIEWS[self.measure](self.narration,
                                                                            item.text)
        size = len(text.strip())
        return StageResult(self.name, passed=size >= self.min_chars, score=float(size),
                           threshold=float(self.min_chars))


@STAGES.register("length", LengthConfig)
def build_length(cfg: LengthConfig, *, narration: Narration | None = None,
                 **_: object) -> LengthGate:
    return LengthGate(cfg, narration)
