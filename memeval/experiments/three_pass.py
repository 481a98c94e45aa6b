"""memoryd's three-pass protocol: pass 1 fresh; memories wiped, rejection store kept, twice more.

Before each wipe, the pass's stored memories are scored with MQS (`stored_memories` table).

Caveat the seed itself notes: from pass 2 on, the learned prototypes contain the very texts being
evaluated (train/test leakage). `three_pass_holdout` is the leakage-free variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memeval.engine.quality.stored import StoredMQSConfig
from memeval.experiments.base import EXPERIMENTS, ExperimentResult, RunContext, replay
from memeval.experiments.stored_quality import stored_memory_quality


@dataclass
class ThreePassConfig:
    passes: int = 3
    stored_mqs: StoredMQSConfig = field(default_factory=StoredMQSConfig)

    def validate(self) -> None:
        if self.passes < 1:
            raise ValueError("passes must be at least 1")
        self.stored_mqs.validate()


class ThreePass:
    def __init__(self, cfg: ThreePassConfig) -> None:
        self.cfg = cfg

    def run(self, ctx: RunContext) -> ExperimentResult:
        gate = ctx.build_gate()
        items = ctx.prepare(gate, ctx.dataset.entries)
        passes, decisions, stored = [], [], []
        for pass_no in range(1, self.cfg.passes + 1):
            gate.restart(wipe_memories=True)
            rows = replay(ctx, gate, items, pass_no, "eval")
            quality, memories = stored_memory_quality(
                gate, rows, self.cfg.stored_mqs, resamples=int(ctx.cfg.bootstrap),
                seed=ctx.seed + pass_no)
            passes.append({**ctx.measure(rows, gate, pass_no), "stored_mqs": quality})
            decisions.extend(rows)
            stored.extend(memories)
        return ExperimentResult(passes, decisions, {"protocol": "three_pass (leaky by design)"},
                                tables={"stored_memories": stored})


@EXPERIMENTS.register("three_pass", ThreePassConfig)
@EXPERIMENTS.register("three_pass_mixed", ThreePassConfig)
def build_three_pass(cfg: ThreePassConfig) -> ThreePass:
    """`three_pass_mixed` is the same protocol; its config swaps in the mixed dataset."""
    return ThreePass(cfg)
