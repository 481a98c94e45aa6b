"""Judge stage: the expensive value gate. A judge failure never loses the entry by default.

`on_error: store` keeps the entry (as if the gate were off); `on_error: skip` drops it. Either way
the failure is counted and the judge's rejections feed nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from memeval.engine.gate.base import STAGES, Candidate, StageResult
from memeval.engine.judges.base import Judge, JudgeError

ON_ERROR = ("store", "skip")


@dataclass
class JudgeStageConfig:
    on_error: str = "store"

    def validate(self) -> None:
        if self.on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got '{self.on_error}'")


class JudgeStage:
    name = "judge"

    def __init__(self, cfg: JudgeStageConfig, judge: Judge) -> None:
        self.cfg = cfg
        self.judge = judge
        self.errors = 0

    def __call__(self, item: Candidate) -> StageResult:
        try:
            verdict = self.judge.judge(item.entry, item.user_prompt, item.text)
        except JudgeError as err:
            self.errors += 1
            return StageResult(self.name, passed=self.cfg.on_error == "store",
                               detail=f"judge error: {err}")
        return StageResult(self.name, passed=not verdict.skip, verdict=verdict,
                           detail="SKIP" if verdict.skip else "keep")


@STAGES.register("judge", JudgeStageConfig)
def build_judge_stage(cfg: JudgeStageConfig, *, judge: Judge, **_: object) -> JudgeStage:
    return JudgeStage(cfg, judge)
