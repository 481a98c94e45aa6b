"""`+experiment=mai_calibration`: does a learned MAI label attribution better than the rubric?

The rubric (memeval/quality/mai.py) and a multinomial logistic regression over the rubric's terms
plus the metadata and decision-text signals it ignores (memeval/quality/mai_features.py) are
each scored out of fold on the development scenarios (stratified, seeded folds). The learned
model is then fitted on every development scenario, once, and scored on the independent split
(`test_scenarios`, null to skip) beside the rubric, on an independent split in memledger's
golden-set convention (`golden_style_scenarios`) and on memledger's own golden set. Every figure
carries a 95% bootstrap CI; the CV − test gap says how far cross-validation flattered.

The development scenarios' decisions name the memories they used ("per m1, …"); a set whose
decisions name none (memledger's golden set, many systems' logs) follows another convention, so
its decision text is not read the same way: such a set is scored by the learned model over the
metadata features alone (mai_features.METADATA), also fitted on the development scenarios.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memeval.data.quality_sets import Scenario, check_source, file_fingerprint, load_scenarios
from memeval.experiments.base import ExperimentResult, RunContext, Runs, register
from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.calibration import bootstrap
from memeval.metrics.classification import per_class_report
from memeval.quality.mai import MAI_LABELS, AttributedMemory, MAIRubric, evaluate_mai
from memeval.quality.mai_features import (
    FEATURES,
    METADATA,
    MAIFeatures,
    MAIFeatureWords,
    names_a_memory,
)
from memeval.quality.mai_learned import LearnedMAI, LearnedMAIConfig, out_of_fold
from memeval.registry import bounded, input_file
from memeval.reporting.outputs import RATE, Outputs, Score, Section
from memeval.reporting.table import Block, Note, Table, printed
from memeval.results.findings import Findings, optional_section
from memeval.results.result import as_ci

SCORERS = ("rubric", "learned")

if TYPE_CHECKING:

    from memeval.results.run import Run


@dataclass
class MAICalibrationConfig:
    scenarios: list[str] = field(default_factory=list)  # development sets, pooled
    test_scenarios: str | None = input_file(load_scenarios, None)
    # Written apart in memledger's golden-set convention (decisions name no memory): the
    # metadata model's figure on such data, which nothing was chosen on (null to skip).
    golden_style_scenarios: str | None = input_file(load_scenarios, None)
    golden: bool = True  # also score memledger's 30 golden scenarios (needs memledger)
    folds: int = bounded(5, 2)
    on_error: str = "skip"
    mai: MAIRubric = field(default_factory=MAIRubric)
    features: MAIFeatureWords = field(default_factory=MAIFeatureWords)
    learned: LearnedMAIConfig = field(default_factory=LearnedMAIConfig)

    def validate(self) -> None:
        if not self.scenarios:
            raise ValueError("scenarios must list at least one development scenario file")
        held_out = {"test_scenarios": self.test_scenarios,
                    "golden_style_scenarios": self.golden_style_scenarios}
        for source in [*self.scenarios, *(p for p in held_out.values() if p)]:
            check_source(source, self.on_error, "scenarios")
        for key, split in held_out.items():
            if split in self.scenarios:
                raise ValueError(f"{key} {split} is also a development set: a test split must "
                                 f"be kept out of training")
        if self.folds < 2:
            raise ValueError("folds must be at least 2")
        self.mai.validate()
        self.features.validate()
        self.learned.validate()


def macro_f1(truth: np.ndarray, predicted: np.ndarray) -> float:
    """Mean F1 over the three labels (0 for a label never predicted or never present)."""
    scores = []
    for label in MAI_LABELS:
        hits = float(((truth == label) & (predicted == label)).sum())
        total = float((truth == label).sum() + (predicted == label).sum())
        scores.append(2 * hits / total if total else 0.0)
    return float(np.mean(scores))


def scored(truth: Sequence[str], predicted: Sequence[str], resamples: int,
           seed: int) -> dict[str, Any]:
    """Accuracy, macro-F1 and per-label recall, each with a 95% bootstrap CI; the confusion."""
    t, p = np.asarray(truth), np.asarray(predicted)
    correct = (t == p).astype(float)
    per_class = per_class_report(truth, predicted, MAI_LABELS, resamples=resamples, seed=seed)
    return {
        "n": len(t),
        "accuracy": float(correct.mean()),
        "accuracy_ci95": list(bootstrap_ci(correct, resamples, seed)),
        "macro_f1": macro_f1(t, p),
        "macro_f1_ci95": list(bootstrap(macro_f1, (t, p), resamples, seed)),
        "recall": {label: per_class[label]["recall"] for label in MAI_LABELS},
        "recall_ci95": {label: per_class[label]["recall_ci95"] for label in MAI_LABELS},
        "confusion": {a: {b: int(((t == a) & (p == b)).sum()) for b in MAI_LABELS}
                      for a in MAI_LABELS},
    }


@dataclass(frozen=True)
class MaiFindings(Findings):
    """Each set scored by the rubric and the learned MAI (None: the set was skipped)."""

    development: Mapping[str, Any]  # out of fold
    features: Sequence[str]
    metadata_features: Sequence[str]
    test: Mapping[str, Any] | None
    golden_style: Mapping[str, Any] | None
    cv_minus_test: Mapping[str, Mapping[str, float]] | None = optional_section()
    golden: Mapping[str, Any] | None = None
    chosen_c: float | None = None  # the learned model's inverse L2 strength, by inner CV
    coefficients: Mapping[str, Any] | None = None  # by view, by label, by feature


class MAICalibration:
    embeds = False  # scores scenarios; it embeds no replay input
    resumable = False  # one quick pass: a re-run costs no more than a resume
    runs = Runs.REFERENCE

    def __init__(self, cfg: MAICalibrationConfig) -> None:
        self.cfg = cfg
        self.features = MAIFeatures(cfg.features, cfg.mai)

    def matrix(self, cases: Sequence[Scenario]) -> np.ndarray:
        rows = [self.features(c.memories, c.ancestors, c.decision) for c in cases]
        return np.array([[row[name] for name in FEATURES] for row in rows], dtype=float)

    def rubric(self, cases: Sequence[Scenario]) -> list[str]:
        return [evaluate_mai(c.memories, c.ancestors, self.cfg.mai).label for c in cases]

    def _load(self, path: str) -> tuple[list[Scenario], dict[str, Any]]:
        cases, report = load_scenarios(path, self.cfg.on_error)
        return cases, {"source": report.source, "fingerprint": file_fingerprint(path),
                       "scenarios": len(cases), "skipped": report.skipped,
                       "problems": report.problems[:100]}

    def run(self, ctx: RunContext) -> ExperimentResult:
        resamples, seed = ctx.resamples, ctx.seed
        dev: list[Scenario] = []
        sources = []
        for path in self.cfg.scenarios:
            cases, source = self._load(path)
            dev += cases
            sources.append(source)
        truth = [c.ground_truth for c in dev]
        folds = min(self.cfg.folds, *Counter(truth).values())
        if folds < 2:
            raise ValueError("the development scenarios need at least 2 of each label")
        x = self.matrix(dev)
        oof = out_of_fold(x, truth, self.cfg.learned, folds, seed)
        oof_metadata = out_of_fold(x, truth, self.cfg.learned, folds, seed, METADATA)
        rubric_dev = self.rubric(dev)
        extra: dict[str, Any] = {
            "development": {"sources": sources, "scenarios": len(dev), "folds": folds,
                            "labels": dict(Counter(truth)),
                            "rubric": scored(truth, rubric_dev, resamples, seed),
                            "learned": scored(truth, oof, resamples, seed),
                            "learned_metadata": scored(truth, oof_metadata, resamples, seed)},
            "features": list(FEATURES), "metadata_features": list(METADATA),
        }
        models = {"all": LearnedMAI(self.cfg.learned, seed).fit(x, truth),
                  "metadata": LearnedMAI(self.cfg.learned, seed, METADATA).fit(x, truth)}
        tables = {"mai_development": [
            {"scenario_id": c.id, "ground_truth": c.ground_truth, "rubric": r, "learned_oof": o,
             "learned_metadata_oof": m}
            for c, r, o, m in zip(dev, rubric_dev, oof, oof_metadata, strict=True)]}
        extra["test"] = extra["golden_style"] = None
        for key, split in (("test", self.cfg.test_scenarios),
                           ("golden_style", self.cfg.golden_style_scenarios)):
            if split is not None:
                cases, source = self._load(split)
                extra[key], tables[f"mai_{key}"] = self._held_out(models, cases, resamples, seed)
                extra[key]["source"] = source
        if extra["test"] is not None:
            extra["cv_minus_test"] = {
                scorer: {m: extra["development"][scorer][m] - extra["test"][scorer][m]
                         for m in ("accuracy", "macro_f1")} for scorer in SCORERS}
        extra["golden"] = self._golden(models, resamples, seed) if self.cfg.golden else None
        model = models["all"]
        extra["chosen_c"] = float(model.model.C)  # by inner CV on every development scenario
        extra["coefficients"] = {
            view: {str(label): dict(zip(fitted.features, map(float, coef), strict=True))
                   for label, coef in zip(fitted.model.classes_, fitted.model.coef_,
                                          strict=True)}
            for view, fitted in models.items()}
        found = MaiFindings(**extra)
        return ExperimentResult([], [], found, summary=printed(mai_blocks(found)), tables=tables)

    def _held_out(self, models: dict[str, LearnedMAI], cases: list[Scenario], resamples: int,
                  seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Scores the models fitted on the development scenarios alone; nothing here is fitted.
        A set whose decisions name none of their memories is read by the metadata model."""
        truth = [c.ground_truth for c in cases]
        x = self.matrix(cases)
        view = "all" if any(names_a_memory(c.memories, c.decision) for c in cases) \
            else "metadata"
        model = models[view]
        learned, rubric = model.predict(x), self.rubric(cases)
        rows = [{"scenario_id": c.id, "ground_truth": c.ground_truth, "rubric": r, "learned": p,
                 **{f"contribution_{name}": value for name, value
                    in model.contributions(row)[p].items()}}
                for c, r, p, row in zip(cases, rubric, learned, x, strict=True)]
        return {"rubric": scored(truth, rubric, resamples, seed),
                "learned": scored(truth, learned, resamples, seed), "features": view}, rows

    def _golden(self, models: dict[str, LearnedMAI], resamples: int,
                seed: int) -> dict[str, Any]:
        try:
            from memeval.systems.conformance import as_memeval, golden_set

            cases = [Scenario(str(case["scenario_id"]), str(case["ground_truth"]),
                              str(case.get("agent_decision") or ""),
                              [as_memeval(m) for m in case["retrieved_memories"]],
                              list[AttributedMemory]())
                     for case in golden_set()]
        except ImportError as err:
            return {"skipped": f"memledger is not installed ({err})"}
        scores, _ = self._held_out(models, cases, resamples, seed)
        return scores


def _ci(value: float | None, bounds: Sequence[float | None]) -> str:
    if value is None:
        return "—"
    low, high = bounds
    return f"{value:.3f} [{low:.3f}–{high:.3f}]" if low is not None and high is not None \
        else f"{value:.3f}"


LEGEND = {"learned": "learned: fitted on the development scenarios (out of fold on them)",
          "learned_metadata": "learned_metadata: the same on metadata features only"}


def _tables(title: str, block: Mapping[str, Any],
            scorers: Sequence[str] = SCORERS) -> list[Block]:
    """Accuracy and macro-F1, then recall per label: one table would not fit a terminal."""
    scores = [(scorer, block[scorer]) for scorer in scorers]
    overall = tuple((scorer, _ci(s["accuracy"], s["accuracy_ci95"]),
                     f"{round(s['accuracy'] * s['n'])}/{s['n']}",
                     _ci(s["macro_f1"], s["macro_f1_ci95"])) for scorer, s in scores)
    recall = tuple((scorer, *(_ci(s["recall"][label], s["recall_ci95"][label])
                              for label in MAI_LABELS)) for scorer, s in scores)
    return [Table(title, ("scorer", "accuracy [95% CI]", "correct", "macro-F1 [95% CI]"),
                  overall),
            Table(f"{title}: recall per label", ("scorer", *MAI_LABELS), recall,
                  "; ".join([*(LEGEND[s] for s in scorers if s in LEGEND), "[lo–hi]: 95% CI"]))]


_VIEWS = {"all": "every feature",
          "metadata": "metadata features: no decision names a memory"}


def mai_blocks(found: MaiFindings) -> list[Block]:
    """What the run prints, and its report shows."""
    dev = found.development
    blocks = _tables(f"MAI on {dev['scenarios']} development scenarios "
                     f"({dev['folds']}-fold out of fold for the learned models)", dev,
                     (*SCORERS, "learned_metadata"))
    notes = [f"learned model for the test split: fitted on all {dev['scenarios']} development "
             f"scenarios, inverse L2 strength {found.chosen_c:g} (chosen by inner CV)"]
    test = found.test
    if test is None:
        notes.append("test split: skipped (experiment.test_scenarios=null)")
    blocks.append(Note("The learned model", "\n".join(notes)))
    if test is not None:
        blocks += _tables(f"MAI on the test split ({test['source']['scenarios']} scenarios; "
                          f"learned model fitted on the development scenarios, "
                          f"{_VIEWS[test['features']]})", test)
        blocks.append(Note("CV − test gap", "CV − test: " + "; ".join(
            f"{scorer} accuracy {gap['accuracy']:+.3f}, macro-F1 {gap['macro_f1']:+.3f}"
            for scorer, gap in (found.cv_minus_test or {}).items())))
    style = found.golden_style
    if style is not None:
        blocks += _tables(f"MAI on the golden-style test split ({style['source']['scenarios']} "
                          f"scenarios, memledger's convention; {_VIEWS[style['features']]})",
                          style)
    golden = found.golden
    if golden is None:
        blocks.append(Note("memledger's golden set",
                           "memledger golden set: skipped (experiment.golden=false)"))
    elif "skipped" in golden:
        blocks.append(Note("memledger's golden set",
                           f"memledger golden set: skipped: {golden['skipped']}"))
    else:
        blocks += _tables(f"memledger's golden set (30 scenarios; "
                          f"{_VIEWS[golden['features']]})", golden)
    return blocks


def report(run: Run) -> list[Section]:
    return [block.section() for block in mai_blocks(run.result.of(MaiFindings))]


def figures(run: Run) -> list[Path]:
    from memeval.reporting.mai_plots import make_mai_figures

    found = run.result.of(MaiFindings)
    return make_mai_figures(run.path, {"development": found.development, "test": found.test,
                                       "golden_style": found.golden_style,
                                       "golden": found.golden})


def scores(run: Run) -> list[Score]:
    """The learned MAI's accuracy and macro-F1 on the test split (out of fold on the
    development scenarios when there is none), the rubric's accuracy beside it."""
    found = run.result.of(MaiFindings)
    split, where = (found.test, "test scenarios") if found.test is not None else \
        (found.development, "development scenarios, out of fold")
    learned, rubric = split["learned"], split["rubric"]
    bench, population = "MAI", f"{learned['n']} {where}"
    return [Score(bench, "accuracy", learned["accuracy"], as_ci(learned["accuracy_ci95"]),
                  unit=RATE, population=population),
            Score(bench, "macro-F1", learned["macro_f1"], as_ci(learned["macro_f1_ci95"]),
                  population=population),
            Score(bench, "rubric accuracy", rubric["accuracy"], as_ci(rubric["accuracy_ci95"]),
                  unit=RATE, population=population)]


def headline(run: Run) -> str:
    """The declared figures in a sentence."""
    accuracy, macro_f1, rubric = scores(run)
    return (f"On {accuracy.population} the learned MAI graded {accuracy.shown} right (macro-F1 "
            f"{macro_f1.shown}), against the rubric's {rubric.shown} (95% CIs in brackets).")


def inputs(run: Run) -> dict[str, str]:
    """The scenario sets the run read."""
    found = run.result.of(MaiFindings)
    sets = {"MAI test scenarios": found.test, "golden-style scenarios": found.golden_style}
    return {name: f"{Path(str(split['source']['source'])).name} "
                  f"({split['source'].get('scenarios', '?')} scenarios)"
            for name, split in sets.items() if split and isinstance(split.get("source"), dict)}


@register("mai_calibration", MAICalibrationConfig,
          Outputs(MaiFindings, figures, report, scores, headline, inputs))
def build_mai_calibration(cfg: MAICalibrationConfig) -> MAICalibration:
    return MAICalibration(cfg)
