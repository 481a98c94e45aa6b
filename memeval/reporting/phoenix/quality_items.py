"""A quality experiment's labelled items, as Phoenix datasets with one experiment per detector or
scorer, read from the run directory's per-item tables and metrics.json alone.

conflict_detection: the pairs set (`conflict_pairs`) and the development and test splits
(`conflict_learned`), each with the reference rules both ways and the learned detector.
mqs_calibration: the records set (`mqs_records`: MQS with memledger's constants and with
constants fitted out of fold) and the splits (`trust_records`: the trust score and MQS).
memory_qa: the questions (`qa_questions`) with the system's answers; coding_memory: its questions
(`coding_questions`) likewise. mai_calibration: its test
scenarios (`mai_test`, else `mai_development`) with the learned MAI's and the rubric's grades.
Which views a run has is read from which tables it holds: `VIEWS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memeval.data.quality_sets import TRUST_LABELS, trust_band
from memeval.paths import shown_path
from memeval.reporting.outputs import RATE, Score, declared_scores
from memeval.results.result import as_ci
from memeval.results.run_dir import jsonable, read_table

Evaluation = dict[str, Any]  # {"name", "label", "score", "explanation"}


@dataclass
class Detector:
    """One detector or scorer on one set: Phoenix's experiment, one run per item it scored."""

    name: str
    description: str
    metrics: dict[str, Any]
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # item key -> output
    evaluations: dict[str, list[Evaluation]] = field(default_factory=dict)  # item key -> CODE
    scores: tuple[Score, ...] = ()  # its headline figures, pushed as evaluations (headline.py)


@dataclass
class ItemSet:
    """One labelled set: Phoenix's dataset (items keyed in table order) and its detectors."""

    name: str
    description: str
    examples: list[dict[str, Any]]  # {"key", "input", "output", "metadata"}
    detectors: list[Detector]
    evaluation_names: tuple[str, ...]


def _rows(run_dir: Path, table: str) -> list[dict[str, Any]]:
    return [{str(k): jsonable(v) for k, v in row.items()}
            for row in read_table(run_dir, table).to_dict("records")]


def _key(i: int) -> str:
    """An item's key in its set: its place in the table (ids ride, redacted, in metadata)."""
    return str(i)


def _ci_headline(stats: Mapping[str, Any], names: Sequence[str],
                 prefix: str = "") -> dict[str, Any]:
    return {f"{prefix}{name}{suffix}": jsonable(stats.get(f"{name}{suffix}"))
            for name in names for suffix in ("", "_ci95")}


# conflict_detection

def conflict_headline(stats: Mapping[str, Any] | None) -> dict[str, Any]:
    """Any-conflict precision and recall, per-type recall, temporal-newer recall and accuracy
    (when measured), each with its 95% CI."""
    if not stats:
        return {}
    out = _ci_headline(stats["any_conflict"], ("precision", "recall"), "any_conflict_")
    for kind, row in stats["per_type"].items():
        out |= _ci_headline(row, ("recall",), f"{kind}_")
    for name in ("temporal_newer_recall", "accuracy"):
        if name in stats:
            out |= _ci_headline(stats, (name,))
    return out


def conflict_scores(stats: Mapping[str, Any] | None, pairs: int) -> tuple[Score, ...]:
    """Any-conflict precision and recall, as conflict_detection declares them."""
    if not stats:
        return ()
    found = stats["any_conflict"]
    return tuple(Score("conflicts", measure, found.get(measure),
                       as_ci(found.get(f"{measure}_ci95")), unit=RATE,
                       population=f"{pairs} pairs") for measure in ("precision", "recall"))


RULE_MODES = ("memeval", "compat")


def _pair_example(row: Mapping[str, Any]) -> dict[str, Any]:
    side = {s: {"content": row[s], "path": row.get(f"{s}_path"),
                "timestamp": row.get(f"{s}_timestamp")} for s in ("a", "b")}
    return {"input": side,
            "output": {"label": row["label"], "newer": row.get("newer"), "kind": row.get("kind")},
            "metadata": {"pair_id": row["pair_id"], "same_source": row.get("same_source"),
                         "note": row.get("note")}}


def _pair_evaluations(label: str, guessed: str) -> list[Evaluation]:
    right, flagged = guessed == label, guessed != "none"
    any_right = flagged == (label != "none")
    return [{"name": "correct", "label": "correct" if right else "incorrect",
             "score": float(right), "explanation": f"guessed {guessed}, labelled {label}"},
            {"name": "any_conflict_correct", "label": "correct" if any_right else "incorrect",
             "score": float(any_right),
             "explanation": f"{'flagged' if flagged else 'passed'} a pair labelled {label}"}]


def _conflict_set(name: str, description: str, rows: Sequence[Mapping[str, Any]],
                  detectors: Mapping[str, tuple[str, Mapping[str, Any] | None]]) -> ItemSet:
    """`detectors`: the table's column prefix -> (experiment name, its figures)."""
    found = []
    for column, (title, stats) in detectors.items():
        detector = Detector(title, f"{title} on {name}", conflict_headline(stats),
                            scores=conflict_scores(stats, len(rows)))
        for i, row in enumerate(rows):
            guessed = row[f"{column}_predicted"]
            output = {"predicted": guessed, "any_conflict": guessed != "none"}
            for extra in ("newer", "reason"):
                if row.get(f"{column}_{extra}"):
                    output[extra] = row[f"{column}_{extra}"]
            detector.outputs[_key(i)] = output
            detector.evaluations[_key(i)] = _pair_evaluations(row["label"], guessed)
        found.append(detector)
    examples = [{"key": _key(i), **_pair_example(row)} for i, row in enumerate(rows)]
    return ItemSet(name, description, examples, found, ("correct", "any_conflict_correct"))


def _detector_name(mode: str) -> str:
    """The reference rules' two readings, else the system under test's own detector."""
    return f"rules {mode}" if mode in RULE_MODES else f"system {mode}"


def conflict_sets(run_dir: Path, metrics: Mapping[str, Any]) -> list[ItemSet]:
    conflicts = metrics["conflicts"]
    sets = [_conflict_set(
        "conflicts pairs", f"memeval conflict pairs {shown_path(conflicts['source'])}",
        _rows(run_dir, "conflict_pairs"),
        {mode: (_detector_name(mode), conflicts.get(mode)) for mode in conflicts["detectors"]})]
    learned = metrics.get("conflicts_learned")
    if learned and (run_dir / "conflict_learned.parquet").is_file():
        rows = _rows(run_dir, "conflict_learned")
        sources = {"dev": ", ".join(shown_path(d["source"]) for d in learned["dev"]),
                   "test": shown_path((learned.get("test_source") or {}).get("source", ""))}
        fitted = {"dev": ("out of fold", learned.get("cv")),
                  "test": ("fitted on dev", learned.get("test"))}
        for split, (how, stats) in fitted.items():
            members = [row for row in rows if row["split"] == split]
            if not members:
                continue
            modes = learned.get("rules_modes", {}).get(split, {})
            detectors = {mode: (_detector_name(mode), modes.get(mode)) for mode in modes}
            detectors["learned"] = (f"{learned['detector']} ({how})", stats)
            sets.append(_conflict_set(f"conflicts {split}",
                                      f"memeval conflict pairs, {split} split: {sources[split]}",
                                      members, detectors))
    return sets


# mqs_calibration

RECORD_FIELDS = ("namespace", "record_confidence", "created_by", "session_id", "created_at",
                 "updated_at", "success_count", "failure_count", "access_count", "hedged",
                 "derived_from", "conflicts", "citation")
BREAKDOWN = ("declared_confidence", "effective_confidence", "confidence_basis", "confidence",
             "usage", "access", "conflict_penalty", "hedged_penalty", "raw", "missing_ancestors",
             "chain_truncated", "gate_action")
TRUST_METRICS = ("spearman", "kendall", "brier", "ece")
CALIBRATION_SCORES = {"spearman": ("Spearman", True), "brier": ("Brier", False),
                      "ece": ("ECE", False)}  # name, higher is better


def trust_scores(stats: Mapping[str, Any] | None) -> tuple[Score, ...]:
    """Spearman, Brier and ECE, as mqs_calibration declares them."""
    if not stats:
        return ()
    return tuple(Score("trust", name, stats.get(key), as_ci(stats.get(f"{key}_ci95")),
                       higher_is_better=higher, population=f"{stats.get('n')} records")
                 for key, (name, higher) in CALIBRATION_SCORES.items())


def trust_headline(stats: Mapping[str, Any] | None) -> dict[str, Any]:
    """Rank agreement and calibration (Spearman, Kendall, Brier, ECE) with their 95% CIs."""
    if not stats:
        return {}
    return {"n": stats.get("n"), "against": stats.get("against"),
            **_ci_headline(stats, TRUST_METRICS)}


def band(probability: float) -> str:
    return TRUST_LABELS[trust_band(probability)]


def _record_evaluations(row: Mapping[str, Any], score: float) -> list[Evaluation]:
    """The score (0-100, P(trusted) x 100) against the record's grade, else its trusted-or-not
    outcome; and whether its band on the grade scale is the record's label (else grade band)."""
    p, grade, label = score / 100.0, row.get("trust"), row.get("label")
    target, against = (grade, "grade") if grade is not None else \
        (float(label == "trusted"), "trusted-or-not outcome")
    expected = label if label is not None else band(float(grade or 0.0))
    agrees = band(p) == expected
    error = abs(p - float(target))
    return [{"name": "abs_error", "label": f"{error:.2f}", "score": error,
             "explanation": f"P(trusted) {p:.2f} against the {against} {target:g}"},
            {"name": "band_agrees", "label": "agrees" if agrees else "disagrees",
             "score": float(agrees),
             "explanation": f"score band {band(p)}, labelled {expected}"}]


def _record_example(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"input": {"content": row.get("content"),
                      "metadata": {k: row[k] for k in RECORD_FIELDS if k in row}},
            "output": {"label": row.get("label"), "trust": row.get("trust")},
            "metadata": {"record_id": row["record_id"],
                         "source": Path(row["source"]).name if row.get("source") else None,
                         "note": row.get("note")}}


def _record_set(name: str, description: str, rows: Sequence[Mapping[str, Any]],
                scorers: Sequence[tuple[str, Mapping[str, Any] | None, str,
                                        Callable[[Mapping[str, Any]], dict[str, Any]]]]
                ) -> ItemSet:
    """`scorers`: (experiment name, its figures, the score's column, the run's extra output)."""
    found = []
    for title, stats, column, details in scorers:
        detector = Detector(title, f"{title} on {name}", trust_headline(stats),
                            scores=trust_scores(stats))
        for i, row in enumerate(rows):
            if row.get(column) is None:
                continue  # e.g. no out-of-fold score for a record graded only
            key = _key(i)
            detector.outputs[key] = {"score": row[column], "band": band(row[column] / 100.0),
                                     **details(row)}
            detector.evaluations[key] = _record_evaluations(row, float(row[column]))
        found.append(detector)
    examples = [{"key": _key(i), **_record_example(row)}
                for i, row in enumerate(rows)]
    return ItemSet(name, description, examples, found, ("abs_error", "band_agrees"))


def _breakdown(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"breakdown": {k: row[k] for k in BREAKDOWN if k in row}}


def _terms(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"intercept": row.get("intercept"),
            "terms": {k.removeprefix("term_"): v for k, v in row.items()
                      if k.startswith("term_")}}


def _nothing(row: Mapping[str, Any]) -> dict[str, Any]:
    return {}


def trust_sets(run_dir: Path, metrics: Mapping[str, Any]) -> list[ItemSet]:
    sets = []
    mqs = metrics.get("mqs")
    if mqs and (run_dir / "mqs_records.parquet").is_file():
        own = "MQS memledger" if mqs.get("system") == "reference" else f"MQS {mqs.get('system')}"
        sets.append(_record_set(
            "mqs records", f"memeval memory records {shown_path(mqs['source'])}",
            _rows(run_dir, "mqs_records"),
            [(own, mqs.get("configured"), "score", _breakdown),
             ("MQS fitted out of fold", mqs.get("fitted_out_of_fold"),
              "fitted_out_of_fold_score", _nothing)]))
    trust = metrics.get("trust_score")
    if trust and (run_dir / "trust_records.parquet").is_file():
        rows = _rows(run_dir, "trust_records")
        for split, how, scored in (("dev", "out of fold", "trust_out_of_fold"),
                                   ("test", "fitted on dev", "trust")):
            members = [row for row in rows if row["split"] == split]
            figures = trust.get(split) or {}
            if not members:
                continue
            sources = ", ".join(sorted({shown_path(str(row.get("source"))) for row in members}))
            sets.append(_record_set(
                f"trust {split}", f"memeval memory records, {split} split: {sources}", members,
                [(f"trust score ({how})", figures.get(scored), "score", _terms),
                 ("MQS memledger", figures.get("mqs"), "mqs", _nothing)]))
    return sets


# mqs_calibration's attribution scenarios

def _mai_evaluation(row: Mapping[str, Any]) -> list[Evaluation]:
    right = row["predicted"] == row["ground_truth"]
    return [{"name": "correct", "label": "correct" if right else "incorrect",
             "score": float(right),
             "explanation": f"graded {row['predicted']}, labelled {row['ground_truth']}"}]


def mai_sets(run_dir: Path, metrics: Mapping[str, Any]) -> list[ItemSet]:
    """The attribution scenarios and MAI's grade of each, with its accuracy as the headline."""
    mai = metrics.get("mai")
    if not mai:
        return []
    rows = _rows(run_dir, "mai_scenarios")
    system = (metrics.get("system") or {}).get("name", "reference")
    title = "MAI memledger" if system == "reference" else f"MAI {system}"
    detector = Detector(title, f"{title} on mai scenarios",
                        {"scenarios": mai.get("scenarios"), "pass_mark": mai.get("pass_mark"),
                         **_ci_headline(mai, ("accuracy",))},
                        scores=(Score("MAI", "MAI accuracy", mai.get("accuracy"),
                                      as_ci(mai.get("accuracy_ci95")), unit=RATE,
                                      population=f"{mai.get('scenarios')} scenarios"),))
    for i, row in enumerate(rows):
        detector.outputs[_key(i)] = {
            "predicted": row["predicted"], "score": row["score"],
            "terms": {k.removeprefix("term_"): v for k, v in row.items()
                      if k.startswith("term_") and v is not None}}
        detector.evaluations[_key(i)] = _mai_evaluation(row)
    examples = [{"key": _key(i), "input": {"scenario": row.get("note"),
                                           "memories": row.get("memories")},
                 "output": {"ground_truth": row["ground_truth"]},
                 "metadata": {"scenario_id": row["scenario_id"]}} for i, row in enumerate(rows)]
    return [ItemSet("mai scenarios", f"memeval attribution scenarios {shown_path(mai['source'])}",
                    examples, [detector], ("correct",))]


# memory_qa

QA_EVALUATIONS = {"locomo_f1": "LoCoMo F1", "mem0_f1": "mem0 F1", "j": "J"}


def _qa_evaluations(row: Mapping[str, Any],
                    names: Mapping[str, str] = QA_EVALUATIONS) -> list[Evaluation]:
    return [{"name": name, "label": f"{row[key]:.2f}", "score": float(row[key]),
             "explanation": f"{name} of the answer {row.get('answer')!r} against "
                            f"{row.get('gold')!r}"}
            for key, name in names.items() if row.get(key) is not None]


def _answered(rows: Sequence[Mapping[str, Any]], detector: Detector,
              evaluations: Mapping[str, str], lists: Sequence[str], inputs: Sequence[str],
              metadata: Sequence[str]) -> list[dict[str, Any]]:
    """A QA table's questions as examples, each row's answer (with its `lists` of memory ids)
    and scores given to `detector`: what memory_qa and coding_memory push alike."""
    for i, row in enumerate(rows):
        detector.outputs[_key(i)] = {"answer": row.get("answer"),
                                     **{name: list(row.get(name) or []) for name in lists}}
        detector.evaluations[_key(i)] = _qa_evaluations(row, evaluations)
    return [{"key": _key(i),
             "input": {"question": row["question"], **{name: row.get(name) for name in inputs}},
             "output": {"gold": row.get("gold"), "unanswerable": row.get("unanswerable")},
             "metadata": {"question_id": row["question_id"],
                          **{name: row.get(name) for name in metadata},
                          "evidence": list(row.get("evidence") or [])}}
            for i, row in enumerate(rows)]


def qa_sets(run_dir: Path, metrics: Mapping[str, Any]) -> list[ItemSet]:
    """The questions, each with the system's answer, the memories it served and its scores; the
    experiment's headline figures on the first run."""
    rows = _rows(run_dir, "qa_questions")
    qa = metrics.get("qa") or {}
    system = str(qa.get("system", "reference"))
    detector = Detector(f"{system} answers", f"{system}'s answers on {qa.get('corpus')}",
                        {"questions": len(rows), "answerer": qa.get("answerer"),
                         "grader": qa.get("grader")}, scores=declared_scores(run_dir))
    examples = _answered(rows, detector, QA_EVALUATIONS, ("served",), ("category",), ())
    return [ItemSet(f"memory qa {qa.get('corpus')}", f"memeval memory QA on {qa.get('corpus')}",
                    examples, [detector], tuple(QA_EVALUATIONS.values()))]


# coding_memory

CODING_EVALUATIONS = {"f1": "F1", "j": "J", "write_recall": "write recall", "recall": "recall@k",
                      "abstained": "abstained"}


def coding_sets(run_dir: Path, metrics: Mapping[str, Any]) -> list[ItemSet]:
    """The benchmark's questions, each with the system's answer, the evidence its write path
    kept and the memories it served; the experiment's headline figures on the first run."""
    rows = _rows(run_dir, "coding_questions")
    coding = metrics.get("coding") or {}
    system = str(coding.get("system", "reference"))
    detector = Detector(f"{system} answers", f"{system} on the coding memory benchmark",
                        {"questions": len(rows), "answerer": coding.get("answerer"),
                         "k": coding.get("k")}, scores=declared_scores(run_dir))
    examples = _answered(rows, detector, CODING_EVALUATIONS, ("kept", "served"),
                         ("category", "asked_at"), ("split", "project"))
    return [ItemSet("coding memory", "memeval coding memory benchmark", examples, [detector],
                    tuple(CODING_EVALUATIONS.values()))]


# mai_calibration

def mai_split_sets(run_dir: Path, metrics: Mapping[str, Any]) -> list[ItemSet]:
    """The test scenarios (the development ones, out of fold, when there is no test split), the
    learned MAI's and the rubric's grade of each; the headline figures on the learned one."""
    table = "mai_test" if (run_dir / "mai_test.parquet").is_file() else "mai_development"
    rows = _rows(run_dir, table)
    learned = "learned" if table == "mai_test" else "learned_oof"  # development: out of fold
    found = []
    for column, figures in ((learned, declared_scores(run_dir)), ("rubric", ())):
        detector = Detector(f"MAI {column.removesuffix('_oof')}", f"MAI {column} on {table}",
                            {"scenarios": len(rows)}, scores=figures)
        for i, row in enumerate(rows):
            detector.outputs[_key(i)] = {"predicted": row[column]}
            detector.evaluations[_key(i)] = _mai_evaluation(
                {"predicted": row[column], "ground_truth": row["ground_truth"]})
        found.append(detector)
    examples = [{"key": _key(i), "input": {"scenario_id": row["scenario_id"]},
                 "output": {"ground_truth": row["ground_truth"]},
                 "metadata": {"scenario_id": row["scenario_id"]}} for i, row in enumerate(rows)]
    return [ItemSet(f"mai {table.removeprefix('mai_')}", f"memeval MAI calibration, {table}",
                    examples, found, ("correct",))]


# The table that marks a view's run -> the labelled sets it holds.
VIEWS: dict[str, Callable[[Path, Mapping[str, Any]], list[ItemSet]]] = {
    "conflict_pairs": conflict_sets,
    "mqs_records": trust_sets,
    "trust_records": trust_sets,
    "mai_scenarios": mai_sets,
    "qa_questions": qa_sets,
    "coding_questions": coding_sets,
    "mai_development": mai_split_sets,
}


def item_sets(run_dir: Path, metrics: Mapping[str, Any]) -> list[ItemSet]:
    """Every labelled set the run's tables hold, once each."""
    views = {VIEWS[table] for table in VIEWS if (run_dir / f"{table}.parquet").is_file()}
    return [s for view in sorted(views, key=lambda v: v.__name__) for s in view(run_dir, metrics)]
