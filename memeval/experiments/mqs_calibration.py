"""`+experiment=mqs_calibration`: does MQS mean what it claims, and does MAI label scenarios right?

MQS against hand-labelled trust: rank agreement with the three-level label (Spearman, Kendall),
and MQS / 100 read as P(trusted) (Brier, equal-count ECE, reliability curve), each with a bootstrap
CI. The constants are then fitted from the labels and compared out of fold with the seed's, so
the report says how much better-chosen weights would help. Records may carry a numeric trust
grade in [0, 1] instead of (or as well as) a label: MQS's rank agreement with the grade is
reported too. MAI: accuracy and confusion matrix of the rubric's labels on the scenario set.
Either set may be null (`experiment.records=null`, `experiment.scenarios=null`): that half of
the report is skipped.

The content-aware trust score (quality/trust_terms.py, metrics/trust_fit.py) is scored out of
fold on the development records (`experiment.dev_records`), then fitted on all of them and
scored on the independent split (`experiment.test_records`, null to skip), with memledger's MQS
on the same sets beside it. The test split is read only after the fit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memeval.data.quality_sets import (
    TRUST_GRADE,
    TRUST_LABELS,
    LabelledRecord,
    check_source,
    file_fingerprint,
    load_memory_records,
    load_scenarios,
    trust_band,
)
from memeval.experiments.base import ExperimentResult, RunContext, Runs, register
from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.calibration import calibration_report, grade_agreement
from memeval.metrics.mqs_fit import FITTED, features, fit_constants, out_of_fold_scores
from memeval.metrics.trust_fit import (
    TrustModel,
    TrustScoreConfig,
    fit_trust_model,
    out_of_fold_trust,
)
from memeval.quality.content_signals import ContentSignals
from memeval.quality.mai import MAI_LABELS, MAIRubric, evaluate_mai
from memeval.quality.mqs import MQSConstants, compute_mqs
from memeval.quality.policy import ConfidencePolicy
from memeval.quality.record import MemoryRecord
from memeval.quality.trust_terms import TERMS, term_matrix
from memeval.registry import bounded, input_file
from memeval.reporting.calibration_report import (
    calibration_blocks,
    calibration_headline,
    calibration_inputs,
    calibration_scores,
)
from memeval.reporting.outputs import Outputs, Score, Section
from memeval.reporting.table import Block, printed
from memeval.results.findings import Findings, optional_section
from memeval.results.sections import Mai, Mqs
from memeval.systems.base import Capability, require
from memeval.systems.reference.system import ReferenceSystem

if TYPE_CHECKING:
    from memeval.results.run import Run

AsWritten = Mapping[str, Any] | None  # a section as the run wrote it

METRICS = ("spearman", "kendall", "brier", "ece")


@dataclass
class MQSCalibrationConfig:
    records: str | None = input_file(load_memory_records, None)
    scenarios: str | None = input_file(load_scenarios, None)
    bins: int = bounded(5, 2)
    folds: int = bounded(5, 2)
    on_error: str = "skip"
    mqs: MQSConstants = field(default_factory=MQSConstants)
    policy: ConfidencePolicy = field(default_factory=ConfidencePolicy)
    mai: MAIRubric = field(default_factory=MAIRubric)
    dev_records: list[str] = field(default_factory=list)
    test_records: str | None = None
    trust: TrustScoreConfig = field(default_factory=TrustScoreConfig)
    # memeval's own models (the trust score's cross-validation on dev_records) and its MAI
    # rubric: null runs them for system=reference only, true for any system, false never
    learned: bool | None = None

    def validate(self) -> None:
        if self.records is None and self.scenarios is None:
            raise ValueError("records and scenarios are both null: name at least one set")
        named = [(self.records, "records"), (self.scenarios, "scenarios"),
                 (self.test_records, "test_records"),
                 *((path, "dev_records") for path in self.dev_records)]
        for path, what in named:
            if path is not None:
                check_source(path, self.on_error, what)
        if self.test_records is not None and not self.dev_records:
            raise ValueError("test_records needs dev_records to fit the trust score on")
        if self.bins < 2 or self.folds < 2:
            raise ValueError("bins and folds must be at least 2")
        self.mqs.validate()
        self.policy.validate()
        self.mai.validate()
        if self.dev_records:
            self.trust.validate()


@dataclass
class LabelFit:
    """MQS against the trust labels, and constants fitted to them (when they can be)."""

    configured: dict[str, Any]
    fitted_out_of_fold: dict[str, Any] | None = None
    fitted: MQSConstants | None = None
    oof: np.ndarray | None = None  # each labelled record's out-of-fold score


@dataclass
class TrustSet:
    """Records from one or more files, with their trust terms and what they are judged by."""

    ids: list[str]
    sources: list[str]
    items: list[LabelledRecord]
    x: np.ndarray  # one row of trust terms per record
    mqs: np.ndarray  # memledger's MQS per record
    trusted: np.ndarray  # the label is trusted, else the grade is at least TRUSTED_GRADE
    target: np.ndarray  # what the rank agreement is against: the grade, else the label's rank
    against: str
    skipped: int
    problems: list[str]


def _rank(item: LabelledRecord) -> float:
    """The label's rank, else the grade's band on the cards' scale."""
    if item.label is not None:
        return float(item.trust_rank)
    assert item.trust is not None  # the loader refuses a record with neither
    return float(trust_band(item.trust))


def record_row(record: MemoryRecord) -> dict[str, Any]:
    """A record's content and metadata as the per-record tables keep them."""
    citation = record.citation
    return {"content": record.content, "namespace": record.namespace,
            "record_confidence": record.confidence, "created_by": record.created_by,
            "session_id": record.session_id,
            "created_at": record.created_at.isoformat() if record.created_at else None,
            "updated_at": record.updated_at.isoformat() if record.updated_at else None,
            "success_count": record.success_count, "failure_count": record.failure_count,
            "access_count": record.access_count, "hedged": record.hedged,
            "derived_from": list(record.derived_from), "conflicts": list(record.conflicts),
            "citation": None if citation is None else
            f"{citation.path}:{citation.line_start}-{citation.line_end}"}


@dataclass(frozen=True)
class Calibrated(Findings):
    """MQS and MAI against their hand labels (None: that half was skipped)."""

    mqs: Mqs | None
    mai: Mai | None
    mqs_constants: Mapping[str, Any] | None = None  # the configured constants
    # the learned trust score beside MQS: out of fold on dev, then on the test split
    trust_score: Mapping[str, Any] | None = optional_section()
    # the system whose run left memeval's own models (MAI, the trust score) out
    own_models_left_out_for: str | None = optional_section()

    def written(self) -> tuple[AsWritten, AsWritten, AsWritten]:
        """The MQS, MAI and trust-score sections as the run wrote them."""
        return (self.mqs.to_dict() if self.mqs else None,
                self.mai.to_dict() if self.mai else None, self.trust_score)


class MQSCalibration:
    embeds = False  # fits on its trust sets; it embeds no replay input
    resumable = False  # one quick pass: a re-run costs no more than a resume
    runs = Runs.ANY

    def __init__(self, cfg: MQSCalibrationConfig) -> None:
        self.cfg = cfg

    def _against_labels(self, ctx: RunContext, labelled: list[LabelledRecord],
                        ledger: dict[str, MemoryRecord], scores: np.ndarray,
                        notes: dict[str, str], fit: bool) -> LabelFit:
        """Rank agreement and calibration against the labels, then (`fit`: the reference
        engine's MQS) constants fitted from them and scored out of fold, when each outcome has
        at least two records to split."""
        records = [item.record for item in labelled]
        ranks = np.array([item.trust_rank for item in labelled], dtype=float)
        trusted = np.array([item.label == "trusted" for item in labelled], dtype=float)
        common = {"bins": self.cfg.bins, "resamples": ctx.resamples, "seed": ctx.seed}
        found = LabelFit(calibration_report(scores, ranks, trusted, **common))
        if not fit:
            notes["fitted_out_of_fold"] = (f"system {ctx.system.name} scores records its own "
                                           f"way: MQS's constants are fitted for "
                                           f"system=reference")
            return found
        folds = min(self.cfg.folds, int(trusted.sum()), int((1 - trusted).sum()))
        if folds < 2:
            notes["fitted_out_of_fold"] = "fitting needs 2 trusted and 2 other labelled records"
            return found
        if folds < self.cfg.folds:
            notes["folds"] = f"{folds} folds, not {self.cfg.folds}: too few of one outcome"
        x = features(records, ledger, self.cfg.mqs)
        found.oof = out_of_fold_scores(records, ledger, x, trusted, self.cfg.mqs, folds, ctx.seed)
        found.fitted = fit_constants(x, trusted, self.cfg.mqs)
        found.fitted_out_of_fold = calibration_report(found.oof, ranks, trusted, **common)
        return found

    def _mqs(self, ctx: RunContext, path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        items, report = load_memory_records(path, self.cfg.on_error)
        records = [item.record for item in items]
        ledger = {r.id: r for r in records}
        system = ctx.system
        reference = isinstance(system, ReferenceSystem)  # the experiment's own MQS constants
        if reference:
            breakdowns = [compute_mqs(r, ledger, self.cfg.mqs) for r in records]
            scores = np.array([b.score for b in breakdowns], dtype=float)
        else:
            require(system, [Capability.SCORE], "mqs_calibration")
            scores = np.asarray(system.score_records(records), dtype=float)
        labelled = [i for i, item in enumerate(items) if item.label is not None]
        graded = [i for i, item in enumerate(items) if item.trust is not None]
        notes: dict[str, str] = {}
        beside = None  # another system's score is shown beside the reference engine's MQS
        if not reference and labelled:
            mqs = np.array([compute_mqs(records[i], ledger, self.cfg.mqs).score
                            for i in labelled], dtype=float)
            beside = calibration_report(
                mqs, np.array([items[i].trust_rank for i in labelled], dtype=float),
                np.array([items[i].label == "trusted" for i in labelled], dtype=float),
                bins=self.cfg.bins, resamples=ctx.resamples, seed=ctx.seed)
        fit = None
        if labelled:
            fit = self._against_labels(ctx, [items[i] for i in labelled], ledger,
                                       scores[labelled], notes, fit=reference)
        else:
            notes["configured"] = "no record has a trust label"
        oof = {} if fit is None or fit.oof is None else dict(zip(labelled, fit.oof, strict=True))
        configured = None if fit is None else fit.configured
        out_of_fold = None if fit is None else fit.fitted_out_of_fold
        fitted = None if fit is None else fit.fitted
        rows: list[dict[str, Any]] = [
            {"record_id": item.record.id, **record_row(item.record), "label": item.label,
             "trust": item.trust, "note": item.note, "score": float(scores[i]),
             "fitted_out_of_fold_score": float(oof[i]) if i in oof else None}
            for i, item in enumerate(items)]
        if reference:  # the breakdown, term by term, and the confidence gate's action
            for row, b in zip(rows, breakdowns, strict=True):
                row.update({k: v for k, v in b.as_dict().items() if k != "record_id"},
                           missing_ancestors=list(b.missing_ancestors),
                           gate_action=str(self.cfg.policy(b.effective_confidence)))
        by_label = {label: scores[[i for i in labelled if items[i].label == label]]
                    for label in TRUST_LABELS}
        against_grade = None
        if graded:
            grades = np.array([items[i].trust for i in graded], dtype=float)
            against_grade = {"scale": TRUST_GRADE, **grade_agreement(
                scores[graded], grades, resamples=ctx.resamples, seed=ctx.seed)}
        summary = {
            "source": report.source, "fingerprint": file_fingerprint(path),
            "records": len(records), "skipped": report.skipped, "problems": report.problems[:100],
            "labels": dict(Counter(items[i].label for i in labelled)),
            "outcome": "trusted (questionable and untrusted count as not trusted)",
            "configured": configured,
            "fitted_out_of_fold": out_of_fold,
            "constants": None if fitted is None else {
                name: {"configured": getattr(self.cfg.mqs, name),
                       "fitted": round(getattr(fitted, name), 3)} for name in FITTED},
            "gain_out_of_fold": None if out_of_fold is None or configured is None else {
                m: out_of_fold[m] - configured[m] for m in METRICS},
            "system": system.name,
            "score": "MQS" if reference else f"{system.name}'s trust score",
            "reference_mqs": beside,
            "gate_actions": dict(Counter(row["gate_action"] for row in rows
                                         if "gate_action" in row)),
            "mean_score_by_label": {label: float(s.mean()) for label, s in by_label.items()
                                    if s.size},
            "graded": len(graded),
            "trust_grade": against_grade,
            "notes": notes,
        }
        return summary, rows

    def _trust_set(self, paths: list[str]) -> TrustSet:
        signals = ContentSignals(self.cfg.trust.content)
        ids: list[str] = []
        sources: list[str] = []
        items: list[LabelledRecord] = []
        blocks: list[np.ndarray] = []
        mqs: list[float] = []
        skipped = 0
        problems: list[str] = []
        for path in paths:
            loaded, report = load_memory_records(path, self.cfg.on_error)
            skipped += report.skipped
            problems += report.problems
            records = [item.record for item in loaded]
            blocks.append(term_matrix(records, self.cfg.mqs, signals))  # one file, one ledger
            ledger = {record.id: record for record in records}
            mqs += [compute_mqs(record, ledger, self.cfg.mqs).score for record in records]
            ids += [record.id for record in records]
            sources += [report.source] * len(loaded)
            items += loaded
        graded = all(item.trust is not None for item in items)
        trusted = [item.trusted for item in items]
        target = [item.trust if graded and item.trust is not None else _rank(item)
                  for item in items]
        x = np.vstack(blocks)  # one file at least: the split is named
        return TrustSet(ids, sources, items, x,
                        np.array(mqs, dtype=float), np.array(trusted, dtype=float),
                        np.array(target, dtype=float), "grade" if graded else "label", skipped,
                        problems[:100])

    def _report(self, ctx: RunContext, scores: np.ndarray, data: TrustSet) -> dict[str, Any]:
        return {"against": data.against, **calibration_report(
            scores, data.target, data.trusted, bins=self.cfg.bins,
            resamples=ctx.resamples, seed=ctx.seed)}

    def _rows(self, split: str, data: TrustSet, scores: np.ndarray,
              model: TrustModel) -> list[dict[str, Any]]:
        """Per record: the score, memledger's MQS, and each term's share of the log-odds (of the
        model that scored it: on the development split, the final model's shares)."""
        return [{"split": split, "source": source, "record_id": rid, **record_row(item.record),
                 "label": item.label, "trust": item.trust, "score": float(score), "mqs": float(m),
                 "intercept": model.intercept,
                 **{f"term_{t}": c for t, c in model.contributions(row).items()}}
                for source, rid, item, score, m, row in zip(
                    data.sources, data.ids, data.items, scores, data.mqs, data.x, strict=True)]

    def _trust(self, ctx: RunContext) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        dev = self._trust_set(self.cfg.dev_records)
        counts = (int(dev.trusted.sum()), int((1 - dev.trusted).sum()))
        folds = min(self.cfg.folds, *counts)
        if folds < 2:
            raise ValueError(f"experiment.dev_records: fitting the trust score needs 2 trusted "
                             f"and 2 other records, found {counts[0]} and {counts[1]}")
        oof = out_of_fold_trust(dev.x, dev.trusted, TERMS, self.cfg.trust, folds, ctx.seed)
        model = fit_trust_model(dev.x, dev.trusted, TERMS, self.cfg.trust)
        summary: dict[str, Any] = {
            "terms": list(TERMS), "folds": folds, "intercept": model.intercept,
            "weights": {t: float(w) for t, w in zip(TERMS, model.weights, strict=True)},
            "dev": {"sources": sorted(set(dev.sources)), "records": len(dev.ids),
                    "fingerprints": [file_fingerprint(path) for path in self.cfg.dev_records],
                    "skipped": dev.skipped, "problems": dev.problems,
                    "trust_out_of_fold": self._report(ctx, oof, dev),
                    "mqs": self._report(ctx, dev.mqs, dev)},
            "test": None, "gap": None,
        }
        rows = self._rows("dev", dev, oof, model)
        if self.cfg.test_records is not None:  # read only now: the model is already fitted
            test = self._trust_set([self.cfg.test_records])
            scores = model.score(test.x)
            found: dict[str, Any] = {
                "source": test.sources[0] if test.sources else self.cfg.test_records,
                "fingerprint": file_fingerprint(self.cfg.test_records),
                "records": len(test.ids), "skipped": test.skipped, "problems": test.problems,
                "trust": self._report(ctx, scores, test), "mqs": self._report(ctx, test.mqs, test)}
            summary["test"] = found
            cv = summary["dev"]["trust_out_of_fold"]
            summary["gap"] = {m: found["trust"][m] - cv[m] for m in METRICS}
            rows += self._rows("test", test, scores, model)
        return summary, rows

    def _mai(self, ctx: RunContext, path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        scenarios, report = load_scenarios(path, self.cfg.on_error)
        results = [evaluate_mai(s.memories, s.ancestors, self.cfg.mai) for s in scenarios]
        correct = np.array([r.label == s.ground_truth
                            for s, r in zip(scenarios, results, strict=True)], dtype=float)
        confusion = {truth: {predicted: sum(s.ground_truth == truth and r.label == predicted
                                            for s, r in zip(scenarios, results, strict=True))
                             for predicted in MAI_LABELS} for truth in MAI_LABELS}
        low, high = bootstrap_ci(correct, ctx.resamples, ctx.seed)
        rows = [{"scenario_id": s.id, "ground_truth": s.ground_truth, "predicted": r.label,
                 "score": r.score, "memories": len(s.memories), "note": s.note,
                 **{f"term_{k}": v for k, v in r.terms.items()}}
                for s, r in zip(scenarios, results, strict=True)]
        by_truth = {label: [r.score for s, r in zip(scenarios, results, strict=True)
                            if s.ground_truth == label] for label in MAI_LABELS}
        summary = {
            "source": report.source, "fingerprint": file_fingerprint(path),
            "scenarios": len(scenarios), "skipped": report.skipped,
            "problems": report.problems[:100],
            "accuracy": float(correct.mean()) if correct.size else None,
            "accuracy_ci95": [low, high], "confusion": confusion,
            "mean_score_by_truth": {k: float(np.mean(v)) for k, v in by_truth.items() if v},
            "pass_mark": self.cfg.mai.well_attributed,
        }
        return summary, rows

    def run(self, ctx: RunContext) -> ExperimentResult:
        mqs = mai = trust = None
        tables: dict[str, list[dict[str, Any]]] = {}
        if self.cfg.records is not None:
            mqs, tables["mqs_records"] = self._mqs(ctx, self.cfg.records)
        own = ctx.own_models(self.cfg.learned)  # MAI and the trust score are memeval's own
        if self.cfg.scenarios is not None and own:
            mai, tables["mai_scenarios"] = self._mai(ctx, self.cfg.scenarios)
        if self.cfg.dev_records and own:
            trust, tables["trust_records"] = self._trust(ctx)
        reference = isinstance(ctx.system, ReferenceSystem)
        found = Calibrated(Mqs.from_dict(mqs) if mqs else None,
                           Mai.from_dict(mai) if mai else None,
                           asdict(self.cfg.mqs) if reference else None, trust,
                           None if own else ctx.system.name)
        return ExperimentResult([], [], found, summary=printed(_blocks(found)), tables=tables)


def figures(run: Run) -> list[Path]:
    from memeval.reporting.calibration_plots import make_calibration_figures

    found = run.result.of(Calibrated)
    return make_calibration_figures(run.path, found.mqs, found.mai, found.trust_score)


def _blocks(found: Calibrated) -> list[Block]:
    """What the run prints, and its report shows."""
    return calibration_blocks(*found.written(), found.own_models_left_out_for)


def report(run: Run) -> list[Section]:
    return [block.section() for block in _blocks(run.result.of(Calibrated))]


def headline(run: Run) -> str:
    return calibration_headline(*run.result.of(Calibrated).written())


def inputs(run: Run) -> dict[str, str]:
    return calibration_inputs(*run.result.of(Calibrated).written())


def scores(run: Run) -> list[Score]:
    return calibration_scores(*run.result.of(Calibrated).written())


@register("mqs_calibration", MQSCalibrationConfig,
          Outputs(Calibrated, figures, report, scores, headline, inputs))
def build_mqs_calibration(cfg: MQSCalibrationConfig) -> MQSCalibration:
    return MQSCalibration(cfg)
