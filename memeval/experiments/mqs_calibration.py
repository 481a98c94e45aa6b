"""`+experiment=mqs_calibration`: does MQS mean what it claims, and does MAI label scenarios right?

MQS against hand-labelled trust: rank agreement with the three-level label (Spearman, Kendall),
and MQS / 100 read as P(trusted) (Brier, equal-count ECE, reliability curve), each with a bootstrap
CI. The constants are then fitted from the labels and compared out of fold with the seed's, so
the report says how much better-chosen weights would help. MAI: accuracy and confusion matrix
of the rubric's labels on the scenario set.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memeval.data.quality_sets import (
    TRUST_LABELS,
    check_source,
    file_fingerprint,
    load_memory_records,
    load_scenarios,
)
from memeval.engine.quality.mai import MAI_LABELS, MAIRubric, evaluate_mai
from memeval.engine.quality.mqs import MQSConstants, compute_mqs
from memeval.engine.quality.policy import ConfidencePolicy
from memeval.experiments.base import EXPERIMENTS, ExperimentResult, RunContext
from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.calibration import calibration_report
from memeval.metrics.mqs_fit import FITTED, features, fit_constants, out_of_fold_scores


@dataclass
class MQSCalibrationConfig:
    records: str = ""
    scenarios: str = ""
    bins: int = 5
    folds: int = 5
    on_error: str = "skip"
    mqs: MQSConstants = field(default_factory=MQSConstants)
    policy: ConfidencePolicy = field(default_factory=ConfidencePolicy)
    mai: MAIRubric = field(default_factory=MAIRubric)

    def validate(self) -> None:
        check_source(self.records, self.on_error, "records")
        check_source(self.scenarios, self.on_error, "scenarios")
        if self.bins < 2 or self.folds < 2:
            raise ValueError("bins and folds must be at least 2")
        self.mqs.validate()
        self.policy.validate()
        self.mai.validate()


class MQSCalibration:
    resumable = False  # one quick pass: a re-run costs no more than a resume

    def __init__(self, cfg: MQSCalibrationConfig) -> None:
        self.cfg = cfg

    def _mqs(self, ctx: RunContext) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        labelled, report = load_memory_records(self.cfg.records, self.cfg.on_error)
        records = [item.record for item in labelled]
        ledger = {r.id: r for r in records}
        ranks = np.array([item.trust_rank for item in labelled], dtype=float)
        trusted = np.array([item.label == "trusted" for item in labelled], dtype=float)
        breakdowns = [compute_mqs(r, ledger, self.cfg.mqs) for r in records]
        scores = np.array([b.score for b in breakdowns], dtype=float)
        x = features(records, ledger, self.cfg.mqs)
        oof = out_of_fold_scores(records, ledger, x, trusted, self.cfg.mqs, self.cfg.folds,
                                 ctx.seed)
        fitted = fit_constants(x, trusted, self.cfg.mqs)
        common = {"bins": self.cfg.bins, "resamples": int(ctx.cfg.bootstrap), "seed": ctx.seed}
        configured = calibration_report(scores, ranks, trusted, **common)
        out_of_fold = calibration_report(oof, ranks, trusted, **common)
        rows = [{"record_id": b.record_id, "label": item.label, "note": item.note,
                 **{k: v for k, v in b.as_dict().items() if k != "record_id"},
                 "missing_ancestors": list(b.missing_ancestors),
                 "gate_action": str(self.cfg.policy(b.effective_confidence)),
                 "fitted_out_of_fold_score": float(s)}
                for item, b, s in zip(labelled, breakdowns, oof, strict=True)]
        summary = {
            "source": report.source, "fingerprint": file_fingerprint(self.cfg.records),
            "records": len(records), "skipped": report.skipped, "problems": report.problems[:100],
            "labels": dict(Counter(item.label for item in labelled)),
            "outcome": "trusted (questionable and untrusted count as not trusted)",
            "configured": configured,
            "fitted_out_of_fold": out_of_fold,
            "constants": {name: {"configured": getattr(self.cfg.mqs, name),
                                 "fitted": round(getattr(fitted, name), 3)} for name in FITTED},
            "gain_out_of_fold": {m: out_of_fold[m] - configured[m]
                                 for m in ("spearman", "kendall", "brier", "ece")},
            "gate_actions": dict(Counter(row["gate_action"] for row in rows)),
            "mean_score_by_label": {label: float(scores[ranks == i].mean())
                                    for i, label in enumerate(TRUST_LABELS) if (ranks == i).any()},
        }
        return summary, rows

    def _mai(self, ctx: RunContext) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        scenarios, report = load_scenarios(self.cfg.scenarios, self.cfg.on_error)
        results = [evaluate_mai(s.memories, s.ancestors, self.cfg.mai) for s in scenarios]
        correct = np.array([r.label == s.ground_truth
                            for s, r in zip(scenarios, results, strict=True)], dtype=float)
        confusion = {truth: {predicted: sum(s.ground_truth == truth and r.label == predicted
                                            for s, r in zip(scenarios, results, strict=True))
                             for predicted in MAI_LABELS} for truth in MAI_LABELS}
        low, high = bootstrap_ci(correct, int(ctx.cfg.bootstrap), ctx.seed)
        rows = [{"scenario_id": s.id, "ground_truth": s.ground_truth, "predicted": r.label,
                 "score": r.score, "memories": len(s.memories), "note": s.note,
                 **{f"term_{k}": v for k, v in r.terms.items()}}
                for s, r in zip(scenarios, results, strict=True)]
        by_truth = {label: [r.score for s, r in zip(scenarios, results, strict=True)
                            if s.ground_truth == label] for label in MAI_LABELS}
        summary = {
            "source": report.source, "fingerprint": file_fingerprint(self.cfg.scenarios),
            "scenarios": len(scenarios), "skipped": report.skipped,
            "problems": report.problems[:100],
            "accuracy": float(correct.mean()) if correct.size else None,
            "accuracy_ci95": [low, high], "confusion": confusion,
            "mean_score_by_truth": {k: float(np.mean(v)) for k, v in by_truth.items() if v},
            "pass_mark": self.cfg.mai.well_attributed,
        }
        return summary, rows

    def run(self, ctx: RunContext) -> ExperimentResult:
        mqs, record_rows = self._mqs(ctx)
        mai, scenario_rows = self._mai(ctx)
        extra = {"mqs": mqs, "mai": mai, "mqs_constants": asdict(self.cfg.mqs)}
        return ExperimentResult([], [], extra, summary=summarise(mqs, mai),
                                tables={"mqs_records": record_rows, "mai_scenarios": scenario_rows})


def _ci(value: float, bounds: list[float]) -> str:
    return f"{value:.3f} [{bounds[0]:.3f}–{bounds[1]:.3f}]"


def summarise(mqs: dict[str, Any], mai: dict[str, Any]) -> str:
    configured, oof = mqs["configured"], mqs["fitted_out_of_fold"]
    lines = [f"MQS on {mqs['records']} labelled records "
             f"(P(trusted) = MQS/100; {configured['bins']} equal-count bins)",
             f"{'metric':10} {'configured constants':28} {'fitted, out of fold':28}"]
    for metric in ("spearman", "kendall", "brier", "ece"):
        lines.append(f"{metric:10} {_ci(configured[metric], configured[metric + '_ci95']):28} "
                     f"{_ci(oof[metric], oof[metric + '_ci95']):28}")
    lines.append("constants (configured → fitted): " + ", ".join(
        f"{k} {v['configured']:g} → {v['fitted']:g}" for k, v in mqs["constants"].items()))
    accuracy = mai["accuracy"]
    lines.append(f"MAI on {mai['scenarios']} scenarios: accuracy "
                 + (_ci(accuracy, mai["accuracy_ci95"]) if accuracy is not None else "—"))
    return "\n".join(lines)


@EXPERIMENTS.register("mqs_calibration", MQSCalibrationConfig)
def build_mqs_calibration(cfg: MQSCalibrationConfig) -> MQSCalibration:
    return MQSCalibration(cfg)
