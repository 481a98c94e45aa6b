"""Demonstrates memoryd's feedback-loop bug: the content scorer learning from its own rejections.

Two arms replay the same data for several passes (memories wiped, stores kept): `clean` feeds the
rejection store from judge SKIPs only; `self_feeding` also feeds content-score rejections. The
self-feeding arm's noise prototypes absorb the substantive texts it wrongly rejected, so it
rejects more of them every pass. The only place memeval lets content_score feed the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from memeval.engine.gate.base import Candidate
from memeval.experiments.base import (
    ExperimentResult,
    RunContext,
    Runs,
    gate_figures,
    register,
    replay,
)
from memeval.experiments.checkpoint import PassRecord
from memeval.registry import bounded
from memeval.reporting.outputs import RATE, Outputs, Score, Section
from memeval.reporting.table import Note, pass_blocks, pct, printed
from memeval.results.findings import Findings
from memeval.results.result import PassMetrics
from memeval.systems.base import Ingestor
from memeval.systems.reference.system import reference_ingestor

if TYPE_CHECKING:
    from memeval.results.run import Run


@dataclass
class FeedbackLoopConfig:
    passes: int = bounded(6, 2)
    clean_feed: list[str] = field(default_factory=lambda: ["judge"])
    self_feed: list[str] = field(default_factory=lambda: ["judge", "content_score"])

    def validate(self) -> None:
        if self.passes < 2:
            raise ValueError("passes must be at least 2 to show a trend")
        if "content_score" not in self.self_feed:
            raise ValueError("self_feed must include content_score: that is the loop under test")


@dataclass(frozen=True)
class FeedbackFindings(Findings):
    protocol: str
    arms: Mapping[str, Sequence[Mapping[str, Any]]]  # each arm's passes (the last arm's also
    feeds: Mapping[str, Sequence[str]]  # are `passes`); the stages feeding each arm's store


class FeedbackLoop:
    embeds = True  # its input, as `memeval embed` warms it: the cost is said first
    resumable = True
    runs = Runs.REFERENCE

    def __init__(self, cfg: FeedbackLoopConfig) -> None:
        self.cfg = cfg

    def run(self, ctx: RunContext) -> ExperimentResult:
        arms = {"clean": self.cfg.clean_feed, "self_feeding": self.cfg.self_feed}
        per_arm: dict[str, list[dict[str, Any]]] = {}
        decisions = []
        for arm, feed in arms.items():
            gate_cfg = ctx.gate_config(rejection_store={"feed_stages": feed})
            gate = reference_ingestor(ctx.system, ctx.run_dir / f"state_{arm}", "feedback_loop",
                                      gate_cfg)
            items = ctx.prepare(gate, ctx.dataset.entries)
            per_arm[arm] = []
            for pass_no in range(1, self.cfg.passes + 1):
                record = ctx.checkpoints.run_pass(gate, f"{arm}-pass-{pass_no}",
                                                  partial(_pass, ctx, gate, items, pass_no, arm))
                per_arm[arm].append(record.metrics)
                decisions.extend(record.decisions)
        return ExperimentResult(per_arm["self_feeding"], decisions,
                                FeedbackFindings("feedback_loop", per_arm,
                                                 {k: list(v) for k, v in arms.items()}),
                                summary=_summary(per_arm))


def _summary(per_arm: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """Both arms pass by pass, then what each rejection store holds at the end."""
    return printed([*pass_blocks([PassMetrics.from_dict(m) for passes in per_arm.values()
                                  for m in passes]), _stores(per_arm)])


def _stores(per_arm: Mapping[str, Sequence[Mapping[str, Any]]]) -> Note:
    """The loop's evidence: recall over the passes, and the substantive texts the self-feeding
    store took in."""
    stores = []
    for arm, passes in per_arm.items():
        held = passes[-1].get("rejection_store_by_label") or {}
        parts = ", ".join(f"{n} {label}" for label, n in sorted(held.items()))
        stores.append(f"{arm} {passes[-1].get('rejection_store_size')} ({parts})")
    clean, looping = per_arm["clean"], per_arm["self_feeding"]
    return Note("Recall and rejection stores", (
        f"recall, pass 1 → {len(looping)}: clean {pct(clean[0]['substantive_recall'])} → "
        f"{pct(clean[-1]['substantive_recall'])}, self-feeding "
        f"{pct(looping[0]['substantive_recall'])} → {pct(looping[-1]['substantive_recall'])}; "
        f"rejection stores after the last pass: {'; '.join(stores)}"))


def report(run: Run) -> list[Section]:
    return [_stores(run.result.of(FeedbackFindings).arms).section()]


def _pass(ctx: RunContext, gate: Ingestor, items: list[Candidate], pass_no: int,
          arm: str) -> PassRecord:
    gate.restart(wipe_memories=True)
    rows = replay(ctx, gate, items, pass_no, "eval", arm)
    return PassRecord({"arm": arm, **ctx.measure(rows, gate, pass_no)}, rows)


def scores(run: Run) -> list[Score]:
    """Each arm's recall on its last pass: the loop's cost is the self-feeding arm's loss."""
    arms = run.result.of(FeedbackFindings).arms
    bench = f"feedback loop ({run.result.dataset.name if run.result.dataset else '?'})"
    found = []
    for arm, passes in arms.items():
        last = PassMetrics.from_dict(passes[-1])
        substantive = (last.sections.get("per_label") or {}).get("substantive") or {}
        found.append(Score(bench, f"{arm} recall", last.substantive_recall,
                           last.substantive_recall_ci95, unit=RATE,
                           population=f"{substantive.get('n', '?')} substantive entries, pass "
                                      f"{last.pass_no}"))
    return found


def headline(run: Run) -> str:
    """The declared figures in a sentence."""
    found = scores(run)
    return (f"On {found[0].population}, " + " against ".join(
        f"the {s.measure.removesuffix(' recall').replace('_', '-')} store kept {s.shown}"
        for s in found) + " of the substantive entries (95% CIs in brackets).")


@register("feedback_loop", FeedbackLoopConfig,
          Outputs(FeedbackFindings, gate_figures, report, scores, headline))
def build_feedback_loop(cfg: FeedbackLoopConfig) -> FeedbackLoop:
    return FeedbackLoop(cfg)
