"""`+experiment=conflict_detection`: per-type precision and recall of the conflict detector on
hand-labelled memory pairs, memeval's word-boundary rules against the reference's substring ones.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from memeval.data.quality_sets import (
    CONFLICT_LABELS,
    LabelledPair,
    check_source,
    file_fingerprint,
    load_conflict_pairs,
)
from memeval.experiments.base import EXPERIMENTS, ExperimentResult, RunContext
from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.classification import per_class_report
from memeval.quality.conflicts import ConflictDetector, ConflictRules
from memeval.registry import input_file
from memeval.reporting.table import aligned
from memeval.systems.base import Capability, require
from memeval.systems.reference import ReferenceSystem

CONFLICT_TYPES = CONFLICT_LABELS[:-1]


@dataclass
class ConflictDetectionConfig:
    pairs: str = input_file(load_conflict_pairs, "")
    on_error: str = "skip"
    rules: ConflictRules = field(default_factory=ConflictRules)

    def validate(self) -> None:
        check_source(self.pairs, self.on_error, "pairs")
        self.rules.validate()


class ConflictDetection:
    resumable = False  # one quick pass: a re-run costs no more than a resume

    def __init__(self, cfg: ConflictDetectionConfig) -> None:
        self.cfg = cfg

    def run(self, ctx: RunContext) -> ExperimentResult:
        pairs, report = load_conflict_pairs(self.cfg.pairs, self.cfg.on_error)
        truth = [p.conflict for p in pairs]
        found, guesses = self._detect(ctx, pairs)
        resamples, seed = int(ctx.cfg.bootstrap), ctx.seed
        results: dict[str, Any] = {}
        for mode, predicted in guesses.items():
            flagged = [g != "none" for g in predicted]
            actual = [t != "none" for t in truth]
            any_conflict = per_class_report(["yes" if a else "no" for a in actual],
                                            ["yes" if f else "no" for f in flagged], ["yes"],
                                            resamples=resamples, seed=seed)["yes"]
            correct = np.array([t == g for t, g in zip(truth, predicted, strict=True)], float)
            results[mode] = {
                "per_type": per_class_report(truth, predicted, CONFLICT_TYPES,
                                             resamples=resamples, seed=seed),
                "any_conflict": any_conflict,
                "accuracy": float(correct.mean()) if correct.size else None,
                "accuracy_ci95": list(bootstrap_ci(correct, resamples, seed)),
                "confusion": {t: {g: sum(1 for a, b in zip(truth, predicted, strict=True)
                                         if a == t and b == g) for g in CONFLICT_LABELS}
                              for t in CONFLICT_LABELS}}
        rows = [{"pair_id": p.id, "label": p.conflict, "same_source": p.same_source,
                 "a": p.a.content, "b": p.b.content, "note": p.note,
                 **{f"{mode}_predicted": guesses[mode][i] for mode in guesses},
                 **{f"{mode}_reason": found[mode][i] for mode in found}}
                for i, p in enumerate(pairs)]
        extra = {"conflicts": {"source": report.source,
                               "fingerprint": file_fingerprint(self.cfg.pairs),
                               "pairs": len(pairs), "skipped": report.skipped,
                               "problems": report.problems[:100],
                               "labels": dict(Counter(truth)), "detectors": list(results),
                               **results}}
        return ExperimentResult([], [], extra, summary=summarise(results),
                                tables={"conflict_pairs": rows})

    def _detect(self, ctx: RunContext, pairs: list[LabelledPair]
                ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Per detector, each pair's reason and guessed type ("none" when it saw no conflict):
        the reference engine's rules both ways (memeval's and the reference code's), or the
        system under test's detector."""
        system = ctx.system
        if not isinstance(system, ReferenceSystem):
            require(system, [Capability.CONFLICTS], "conflict_detection")
            guessed = [system.detect_conflict(p.a.content, p.b.content) or "none" for p in pairs]
            return {system.name: [""] * len(pairs)}, {system.name: guessed}
        detectors = {"memeval": ConflictDetector(replace(self.cfg.rules, compat=False)),
                     "compat": ConflictDetector(replace(self.cfg.rules, compat=True))}
        found = {mode: [d.detect(p.a.content, p.b.content, p.same_source) for p in pairs]
                 for mode, d in detectors.items()}
        return ({mode: [c.reason if c else "" for c in conflicts]
                 for mode, conflicts in found.items()},
                {mode: [c.kind.value if c else "none" for c in conflicts]
                 for mode, conflicts in found.items()})


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def summarise(results: dict[str, Any]) -> str:
    modes = list(results)
    header = ("type", "support", *(f"{m} {k}" for m in modes for k in ("precision", "recall")))
    rows = []
    for cls in (*CONFLICT_TYPES, "any conflict"):
        cells = []
        for mode in modes:
            stats = results[mode]["any_conflict"] if cls == "any conflict" else \
                results[mode]["per_type"][cls]
            cells += [_pct(stats["precision"]), _pct(stats["recall"])]
        first = results[modes[0]]
        support = first["any_conflict"]["support"] if cls == "any conflict" else \
            first["per_type"][cls]["support"]
        rows.append((cls, str(support), *cells))
    accuracy = "  ".join(f"{m} accuracy {_pct(results[m]['accuracy'])}" for m in modes)
    return f"{aligned(header, rows)}\n{accuracy}"


@EXPERIMENTS.register("conflict_detection", ConflictDetectionConfig)
def build_conflict_detection(cfg: ConflictDetectionConfig) -> ConflictDetection:
    return ConflictDetection(cfg)
