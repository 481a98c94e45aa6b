"""memoryd's three-pass protocol: pass 1 fresh; memories wiped, rejection store kept, twice more.

Before each wipe, the pass's stored memories are scored with MQS, and with the learned conflict
detector and content-aware trust score fitted once per run on the development sets
(`stored_memories` table; `experiment.stored_models.enabled=false` leaves the latter out).

Caveat the seed itself notes: from pass 2 on, the learned prototypes contain the very texts being
evaluated (train/test leakage). `three_pass_holdout` is the leakage-free variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from memeval.experiments.base import (
    GATE_REPLAY,
    ExperimentResult,
    Replay,
    RunContext,
    Runs,
    register,
    replay,
)
from memeval.experiments.checkpoint import PassRecord
from memeval.quality.stored import StoredMQSConfig
from memeval.registry import bounded
from memeval.systems.base import Capability, Ingestor
from memeval.systems.reference.stored_models import (
    StoredModels,
    StoredModelsConfig,
    fit_stored_models,
)
from memeval.systems.reference.system import ReferenceIngestor
from memeval.utils.progress import under


@dataclass
class ThreePassConfig:
    passes: int = bounded(3, 1)
    stored_mqs: StoredMQSConfig = field(default_factory=StoredMQSConfig)
    stored_models: StoredModelsConfig = field(default_factory=StoredModelsConfig)

    def validate(self) -> None:
        if self.passes < 1:
            raise ValueError("passes must be at least 1")
        self.stored_mqs.validate()
        self.stored_models.validate()


class ThreePass:
    embeds = True  # its input, as `memeval embed` warms it: the cost is said first
    resumable = True
    runs = Runs.ANY

    def __init__(self, cfg: ThreePassConfig) -> None:
        self.cfg = cfg
        self._models: StoredModels | None = None

    def models(self, ctx: RunContext) -> StoredModels:
        """Fitted on the development sets once per run, when a pass first needs them."""
        if self._models is None:
            self._models = fit_stored_models(self.cfg.stored_models, self.cfg.stored_mqs.mqs,
                                             ctx.fits, under(ctx.progress, "stored_models fit"))
        return self._models

    def run(self, ctx: RunContext) -> ExperimentResult:
        gate = ctx.ingestor([Capability.RESET], "three_pass")
        items = ctx.prepare(gate, ctx.dataset.entries)
        records = [ctx.checkpoints.run_pass(gate, f"pass-{pass_no}",
                                            partial(self._pass, ctx, gate, items, pass_no))
                   for pass_no in range(1, self.cfg.passes + 1)]
        return ExperimentResult([r.metrics for r in records],
                                [d for r in records for d in r.decisions],
                                Replay("three_pass (leaky by design)"),
                                tables={"stored_memories": [row for r in records
                                                            for row in r.tables["stored"]]})

    def _pass(self, ctx: RunContext, gate: Ingestor, items: list[Any],
              pass_no: int) -> PassRecord:
        gate.restart(wipe_memories=True)
        rows = replay(ctx, gate, items, pass_no, "eval")
        metrics = ctx.measure(rows, gate, pass_no)
        if not isinstance(gate, ReferenceIngestor):  # only the reference engine shows its store
            return PassRecord(metrics, rows, {"stored": []})
        common = {"resamples": ctx.resamples, "seed": ctx.seed + pass_no}
        shown = under(ctx.progress, f"pass {pass_no} stored")  # scoring a large store takes a while
        models = self.models(ctx) if self.cfg.stored_models.enabled else None  # fitted apart
        with ctx.scoring.running():
            quality, memories = gate.stored_quality(rows, self.cfg.stored_mqs, **common,
                                                    progress=shown)
            metrics = {**metrics, "stored_mqs": quality}
            if models is not None:
                learned, columns = gate.stored_models(rows, self.cfg.stored_mqs, models,
                                                      **common, progress=shown)
                metrics["stored_models"] = learned
                memories = [{**row, **columns[row["memory_id"]]} for row in memories]
        return PassRecord(metrics, rows, {"stored": memories})


@register("three_pass", ThreePassConfig, GATE_REPLAY)
@register("three_pass_mixed", ThreePassConfig, GATE_REPLAY)
def build_three_pass(cfg: ThreePassConfig) -> ThreePass:
    """`three_pass_mixed` is the same protocol; its config swaps in the mixed dataset."""
    return ThreePass(cfg)
