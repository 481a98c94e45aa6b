"""memoryd's three-pass protocol: pass 1 fresh; memories wiped, rejection store kept, twice more.

Caveat the seed itself notes: from pass 2 on, the learned prototypes contain the very texts being
evaluated (train/test leakage). `three_pass_holdout` is the leakage-free variant.
"""

from __future__ import annotations

from dataclasses import dataclass

from memeval.experiments.base import EXPERIMENTS, ExperimentResult, RunContext, replay


@dataclass
class ThreePassConfig:
    passes: int = 3

    def validate(self) -> None:
        if self.passes < 1:
            raise ValueError("passes must be at least 1")


class ThreePass:
    def __init__(self, cfg: ThreePassConfig) -> None:
        self.cfg = cfg

    def run(self, ctx: RunContext) -> ExperimentResult:
        gate = ctx.build_gate()
        items = ctx.prepare(gate, ctx.dataset.entries)
        passes, decisions = [], []
        for pass_no in range(1, self.cfg.passes + 1):
            gate.restart(wipe_memories=True)
            rows = replay(ctx, gate, items, pass_no, "eval")
            passes.append(ctx.measure(rows, gate, pass_no))
            decisions.extend(rows)
        return ExperimentResult(passes, decisions, {"protocol": "three_pass (leaky by design)"})


@EXPERIMENTS.register("three_pass", ThreePassConfig)
@EXPERIMENTS.register("three_pass_mixed", ThreePassConfig)
def build_three_pass(cfg: ThreePassConfig) -> ThreePass:
    """`three_pass_mixed` is the same protocol; its config swaps in the mixed dataset."""
    return ThreePass(cfg)
