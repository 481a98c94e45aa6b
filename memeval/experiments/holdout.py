"""Leakage-free three-pass protocol: learn on one split, evaluate on a disjoint split.

Each pass k: restart, replay the learning split with learning on (the stores grow across passes as
in the seed's protocol), then wipe memories, freeze learning and replay the evaluation split. No
evaluated text ever enters the learned prototypes or the threshold calibration.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from memeval.data.splits import stratified_split
from memeval.experiments.base import EXPERIMENTS, ExperimentResult, RunContext, replay
from memeval.experiments.checkpoint import PassRecord
from memeval.registry import bounded
from memeval.systems.base import Capability, Ingestor


@dataclass
class HoldoutConfig:
    passes: int = bounded(3, 1)
    learn_fraction: float = bounded(0.5, above=0, below=1)

    def validate(self) -> None:
        if self.passes < 1:
            raise ValueError("passes must be at least 1")
        if not 0.0 < self.learn_fraction < 1.0:
            raise ValueError("learn_fraction must be in (0, 1)")


class Holdout:
    resumable = True

    def __init__(self, cfg: HoldoutConfig) -> None:
        self.cfg = cfg

    def run(self, ctx: RunContext) -> ExperimentResult:
        learn, evaluate = stratified_split(ctx.dataset.entries, self.cfg.learn_fraction, ctx.seed)
        gate = ctx.ingestor([Capability.RESET, Capability.FREEZE], "three_pass_holdout")
        learn_items, eval_items = ctx.prepare(gate, learn), ctx.prepare(gate, evaluate)
        records = [ctx.checkpoints.run_pass(
            gate, f"pass-{pass_no}",
            partial(self._pass, ctx, gate, learn_items, eval_items, pass_no))
            for pass_no in range(1, self.cfg.passes + 1)]
        split = {"learn": len(learn), "eval": len(evaluate), "seed": ctx.seed,
                 "learn_fraction": self.cfg.learn_fraction}
        return ExperimentResult([r.metrics for r in records],
                                [d for r in records for d in r.decisions],
                                {"protocol": "three_pass_holdout", "split": split,
                                 "learn_passes": [r.extra["learn"] for r in records]})

    @staticmethod
    def _pass(ctx: RunContext, gate: Ingestor, learn_items: list[Any],
              eval_items: list[Any], pass_no: int) -> PassRecord:
        gate.learning = True
        gate.restart(wipe_memories=True)
        learn_rows = replay(ctx, gate, learn_items, pass_no, "learn")
        learn_metrics = ctx.measure(learn_rows, gate, pass_no)
        gate.restart(wipe_memories=True)
        gate.learning = False
        eval_rows = replay(ctx, gate, eval_items, pass_no, "eval")
        return PassRecord(ctx.measure(eval_rows, gate, pass_no), learn_rows + eval_rows,
                          extra={"learn": learn_metrics})


@EXPERIMENTS.register("three_pass_holdout", HoldoutConfig)
def build_holdout(cfg: HoldoutConfig) -> Holdout:
    return Holdout(cfg)
