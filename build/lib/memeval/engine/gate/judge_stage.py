"""Judge stage: the expensive value gate. A judge failure never loses the entry by default.

`on_error: store` keeps the entry (as if the gate were off); `on_error: skip` drops it. Either way
the failure's reason is recorded and the judge's rejections feed nothing. A run whose judge failed
on more than `max_error_share` of its calls ends as a failure, after its results are written:
its recall would describe a gate without a judge.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from memeval.backends.judges.base import Judge, JudgeError
from memeval.engine.gate.base import STAGES, Candidate, StageResult
from memeval.registry import bounded
from memeval.utils.redact import redact

ON_ERROR = ("store", "skip")

log = logging.getLogger(__name__)


@dataclass
class JudgeStageConfig:
    on_error: str = "store"
    max_error_share: float = bounded(0.05, 0, 1)

    def validate(self) -> None:
        if self.on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got '{self.on_error}'")
        if not 0.0 <= self.max_error_share <= 1.0:
            raise ValueError("max_error_share must be in [0, 1] (1: never fail the run)")


class JudgeStage:
    name = "judge"

    def __init__(self, cfg: JudgeStageConfig, judge: Judge) -> None:
        self.cfg = cfg
        self.judge = judge
        self.errors = 0
        self._reported: set[str] = set()

    def __call__(self, item: Candidate) -> StageResult:
        """A failure's `detail` is its reason (redacted): the decision records it."""
        try:
            verdict = self.judge.judge(item.entry, item.user_prompt, item.text)
        except JudgeError as err:
            self.errors += 1
            reason = redact(err.reason) or "judge error"
            if reason not in self._reported:  # once per distinct reason, not once per entry
                self._reported.add(reason)
                log.warning("judge error (gate.stages.judge.on_error=%s): %s",
                            self.cfg.on_error, reason)
            return StageResult(self.name, passed=self.cfg.on_error == "store", detail=reason)
        return StageResult(self.name, passed=not verdict.skip, verdict=verdict,
                           detail="SKIP" if verdict.skip else "keep")


@STAGES.register("judge", JudgeStageConfig)
def build_judge_stage(cfg: JudgeStageConfig, *, judge: Judge, **_: object) -> JudgeStage:
    return JudgeStage(cfg, judge)
