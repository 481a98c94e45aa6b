"""Leakage-free three-pass protocol: learn on one split, evaluate on a disjoint split.

The split is label-stratified by row (`learn_fraction`), or by an entry field (`split_field`,
e.g. a session id or a labelled set's own `split` column) so whole sessions go one way and the
figure says how the gate does on work it never saw.

Each pass k: restart, replay the learning split with learning on (the stores grow across passes as
in the seed's protocol), then wipe memories, freeze learning and replay the evaluation split. No
evaluated text ever enters the learned prototypes or the threshold calibration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from memeval.data.splits import field_split, stratified_split
from memeval.entry import Entry
from memeval.experiments.base import (
    ExperimentResult,
    RunContext,
    Runs,
    gate_figures,
    gate_headline,
    gate_items,
    gate_scores,
    register,
    replay,
)
from memeval.experiments.checkpoint import PassRecord
from memeval.registry import ConfigError, bounded
from memeval.reporting.outputs import Outputs
from memeval.results.findings import Findings
from memeval.systems.base import Capability, Ingestor


@dataclass
class HoldoutConfig:
    passes: int = bounded(3, 1)
    learn_fraction: float = bounded(0.5, above=0, below=1)
    # Split by this entry field instead of by row: entries whose value is in `learn_values`
    # learn, those in `eval_values` (empty: all the others) are evaluated, the rest left out.
    split_field: str | None = None
    learn_values: list[str] = field(default_factory=list)
    eval_values: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if self.passes < 1:
            raise ValueError("passes must be at least 1")
        if not 0.0 < self.learn_fraction < 1.0:
            raise ValueError("learn_fraction must be in (0, 1)")
        if self.split_field is not None and not self.learn_values:
            raise ValueError(f"split_field '{self.split_field}' needs learn_values")
        if set(self.learn_values) & set(self.eval_values):
            raise ValueError("learn_values and eval_values overlap")

    def split(self, entries: list[Entry], seed: int) -> tuple[list[Entry], list[Entry]]:
        if self.split_field is None:
            return stratified_split(entries, self.learn_fraction, seed)
        try:
            learn, evaluate = field_split(entries, self.split_field, self.learn_values,
                                          self.eval_values)
        except ValueError as err:
            raise ConfigError(f"experiment.split_field: {err}") from None
        if not learn or not evaluate:
            raise ConfigError(f"experiment.split_field '{self.split_field}' leaves the "
                              f"{'learn' if not learn else 'evaluation'} split empty "
                              f"(learn_values: {self.learn_values}, eval_values: "
                              f"{self.eval_values or 'the rest'})")
        return learn, evaluate

    def described(self, seed: int) -> dict[str, Any]:
        if self.split_field is None:
            return {"by": "row, label-stratified", "seed": seed,
                    "learn_fraction": self.learn_fraction}
        return {"by": self.split_field, "learn_values": self.learn_values,
                "eval_values": self.eval_values or "the rest"}


@dataclass(frozen=True)
class HoldoutFindings(Findings):
    protocol: str
    split: Mapping[str, Any]  # sizes and how the entries were split
    learn_passes: Sequence[Mapping[str, Any]]  # each pass's metrics on the learn split


class Holdout:
    embeds = True  # its input, as `memeval embed` warms it: the cost is said first
    resumable = True
    runs = Runs.ANY

    def __init__(self, cfg: HoldoutConfig) -> None:
        self.cfg = cfg

    def run(self, ctx: RunContext) -> ExperimentResult:
        learn, evaluate = self.cfg.split(ctx.dataset.entries, ctx.seed)
        gate = ctx.ingestor([Capability.RESET, Capability.FREEZE], "three_pass_holdout")
        learn_items, eval_items = ctx.prepare(gate, learn), ctx.prepare(gate, evaluate)
        records = [ctx.checkpoints.run_pass(
            gate, f"pass-{pass_no}",
            partial(self._pass, ctx, gate, learn_items, eval_items, pass_no))
            for pass_no in range(1, self.cfg.passes + 1)]
        split = {"learn": len(learn), "eval": len(evaluate),
                 "left_out": len(ctx.dataset.entries) - len(learn) - len(evaluate),
                 **self.cfg.described(ctx.seed)}
        return ExperimentResult([r.metrics for r in records],
                                [d for r in records for d in r.decisions],
                                HoldoutFindings("three_pass_holdout", split,
                                                [r.extra["learn"] for r in records]))

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


HOLDOUT = Outputs(HoldoutFindings, gate_figures, scores=gate_scores, headline=gate_headline,
                  items=gate_items)


@register("three_pass_holdout", HoldoutConfig, HOLDOUT)
@register("three_pass_sessions", HoldoutConfig, HOLDOUT)
def build_holdout(cfg: HoldoutConfig) -> Holdout:
    """`three_pass_sessions` is the same protocol; its config splits real turns by session."""
    return Holdout(cfg)
