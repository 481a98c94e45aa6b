"""Length gate: too short to hold a reusable fact (memoryd: under 80 trimmed characters)."""

from __future__ import annotations

from dataclasses import dataclass

from memeval.engine.gate.base import STAGES, Candidate, StageResult
from memeval.registry import bounded


@dataclass
class LengthConfig:
    min_chars: int = bounded(80, 0)

    def validate(self) -> None:
        if self.min_chars < 0:
            raise ValueError("min_chars must be non-negative")


class LengthGate:
    name = "length"

    def __init__(self, cfg: LengthConfig) -> None:
        self.min_chars = cfg.min_chars

    def __call__(self, item: Candidate) -> StageResult:
        size = len(item.text.strip())
        return StageResult(self.name, passed=size >= self.min_chars, score=float(size),
                           threshold=float(self.min_chars))


@STAGES.register("length", LengthConfig)
def build_length(cfg: LengthConfig, **_: object) -> LengthGate:
    return LengthGate(cfg)
