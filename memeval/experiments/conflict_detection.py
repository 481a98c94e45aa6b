"""`+experiment=conflict_detection`: per-type precision and recall of the conflict detector on
hand-labelled memory pairs, memeval's word-boundary rules against the reference's substring ones;
then the learned detector, out of fold on the development pairs and, trained on all of them, on
an independent test split scored beside the rules.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memeval.data.quality_sets import (
    CONFLICT_LABELS,
    LabelledPair,
    check_source,
    file_fingerprint,
    load_conflict_pairs,
)
from memeval.experiments.base import ExperimentResult, RunContext, Runs, register
from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.classification import per_class_report
from memeval.quality.conflict_model import (
    CONFLICT_DETECTORS,
    PairDetector,
    Superseding,
)
from memeval.quality.conflicts import Conflict, ConflictDetector, ConflictRules
from memeval.registry import bounded, input_file
from memeval.reporting.outputs import RATE, Outputs, Score, Section
from memeval.reporting.table import Block, Note, Table, printed
from memeval.results.findings import Findings, optional_section
from memeval.results.result import as_ci
from memeval.results.sections import Conflicts
from memeval.systems.answers import conflict_answer
from memeval.systems.base import Capability, require
from memeval.systems.reference.stored_models import labelled_sides
from memeval.systems.reference.system import ReferenceSystem
from memeval.utils.folds import Split, held_out_splits
from memeval.utils.folds import out_of_fold as held_out_values
from memeval.utils.progress import Progress, quiet, under

if TYPE_CHECKING:
    from memeval.results.run import Run

CONFLICT_TYPES = CONFLICT_LABELS[:-1]
CV_MODES = ("folds", "by_file", "by_source")
CV_KEYS = ("cv", "cv_by_file", "cv_by_source")  # each mode's figures in the section


@dataclass
class ConflictDetectionConfig:
    pairs: str = input_file(load_conflict_pairs, "")
    on_error: str = "skip"
    rules: ConflictRules = field(default_factory=ConflictRules)
    # The learned detector: trained and cross-validated on `dev_pairs`, then scored on
    # `test_pairs` (null skips that), each figure with a bootstrap CI.
    dev_pairs: list[str] = field(default_factory=list)
    test_pairs: str | None = None
    # Sets written outside memeval by other authors: the detector trained on every development
    # pair is scored on each, beside the rules; none is ever fitted or chosen on.
    outside_pairs: list[str] = field(default_factory=list)
    # Each development file's source (an author or a dataset), by file name; a file not named is
    # its own. With two or more sources the detector is also scored leave-one-source-out.
    sources: dict[str, str] = field(default_factory=dict)
    folds: int = bounded(5, 2)
    # The cross-validations run, each a fit per fold: stratified `folds`, leave-one-file-out
    # (`by_file`, with two or more files) and leave-one-source-out (`by_source`, with two or more
    # sources). A detector that takes minutes per fit (pair) runs by_source alone.
    cv: list[str] = field(default_factory=lambda: list(CV_MODES))
    embed: bool = False  # add the run embedder's cosine of the two memories as a feature
    detector: dict[str, Any] = field(default_factory=lambda: {"name": "learned"})
    # memeval's own learned detector (its cross-validation on dev_pairs, minutes on a small
    # machine): null trains it for system=reference only, true for any system, false never
    learned: bool | None = None

    def validate(self) -> None:
        check_source(self.pairs, self.on_error, "pairs")
        self.rules.validate()
        for path in (*self.dev_pairs, *([self.test_pairs] if self.test_pairs else []),
                     *self.outside_pairs):
            check_source(path, self.on_error, "dev_pairs, test_pairs and outside_pairs")
        trained = {Path(path).resolve() for path in self.dev_pairs}
        for path in self.outside_pairs:
            if Path(path).resolve() in trained:
                raise ValueError(f"outside_pairs: {Path(path).name} is also in dev_pairs, so the "
                                 "detector would be scored on pairs it learned; drop it from one "
                                 "(dev_sets=with_outside names its own outside sets)")
        if not self.cv or set(self.cv) - set(CV_MODES):
            raise ValueError(f"experiment.cv must name one or more of {list(CV_MODES)}, "
                             f"got {self.cv}")
        if self.dev_pairs and self.folds < 2:
            raise ValueError(f"experiment.folds must be at least 2, got {self.folds}")
        CONFLICT_DETECTORS.validate(self.detector, "experiment.detector")


@dataclass(frozen=True)
class ConflictFindings(Findings):
    conflicts: Conflicts  # each detector on the hand-labelled pairs
    # the learned detector: out of fold on the development sets, then on the test split
    conflicts_learned: Mapping[str, Any] | None = optional_section()


class ConflictDetection:
    embeds = False  # embeds its pairs only, a few hundred texts
    resumable = False  # one quick pass: a re-run costs no more than a resume
    runs = Runs.ANY

    def __init__(self, cfg: ConflictDetectionConfig) -> None:
        self.cfg = cfg

    def run(self, ctx: RunContext) -> ExperimentResult:
        pairs, report = load_conflict_pairs(self.cfg.pairs, self.cfg.on_error)
        truth = [p.conflict for p in pairs]
        found, guesses = self._detect(ctx, pairs)
        resamples, seed = ctx.resamples, ctx.seed
        results: dict[str, Any] = {}
        for mode, predicted in guesses.items():
            any_conflict, per_type = _reports(truth, predicted, resamples, seed)
            correct = np.array([t == g for t, g in zip(truth, predicted, strict=True)], float)
            results[mode] = {
                "per_type": per_type,
                "any_conflict": any_conflict,
                "accuracy": float(correct.mean()) if correct.size else None,
                "accuracy_ci95": list(bootstrap_ci(correct, resamples, seed)),
                "confusion": {t: {g: sum(1 for a, b in zip(truth, predicted, strict=True)
                                         if a == t and b == g) for g in CONFLICT_LABELS}
                              for t in CONFLICT_LABELS}}
        rows = [{**pair_row(p), **{f"{mode}_predicted": guesses[mode][i] for mode in guesses},
                 **{f"{mode}_reason": found[mode][i] for mode in found}}
                for i, p in enumerate(pairs)]
        learned = None
        tables = {"conflict_pairs": rows}
        if self.cfg.dev_pairs and ctx.own_models(self.cfg.learned):
            learned, tables["conflict_learned"] = self._learned(ctx)
        conflicts = Conflicts.from_dict({
            "source": report.source, "fingerprint": file_fingerprint(self.cfg.pairs),
            "pairs": len(pairs), "skipped": report.skipped, "problems": report.problems[:100],
            "labels": dict(Counter(truth)), "detectors": list(results), **results})
        findings = ConflictFindings(conflicts, learned)
        return ExperimentResult([], [], findings, summary=printed(conflict_blocks(findings)),
                                tables=tables)

    def _load(self, paths: Sequence[str]) -> tuple[list[LabelledPair], list[dict[str, Any]]]:
        pairs, sources = [], []
        for path in paths:
            loaded, report = load_conflict_pairs(path, self.cfg.on_error)
            pairs += loaded
            sources.append({"source": report.source, "fingerprint": file_fingerprint(path),
                            "pairs": len(loaded), "skipped": report.skipped,
                            "problems": report.problems[:100],
                            "author": self.cfg.sources.get(Path(path).stem, Path(path).stem)})
        return pairs, sources

    def _cosines(self, ctx: RunContext, pairs: Sequence[LabelledPair]) -> list[float] | None:
        if not self.cfg.embed:
            return None
        a = ctx.embedder.embed([p.a.content for p in pairs])
        b = ctx.embedder.embed([p.b.content for p in pairs])
        norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        return [float(x) for x in (a * b).sum(axis=1) / np.maximum(norms, 1e-12)]

    def _learned(self, ctx: RunContext) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Out-of-fold figures on the development pairs, then the model trained on all of them
        scored on the test split beside the reference rules; with each pair's guess by every
        detector (the rules both ways too), so each can be looked at pair by pair."""
        dev, dev_sources = self._load(self.cfg.dev_pairs)
        resamples, seed = ctx.resamples, ctx.seed
        learned = CONFLICT_DETECTORS.build(self.cfg.detector, fits=ctx.fits)
        rules = CONFLICT_DETECTORS.build({"name": "rules", **asdict(self.cfg.rules)})
        dev_cos = self._cosines(ctx, dev)

        def bar(what: str) -> Callable[[list[Split]], Iterable[Split]]:
            return lambda splits: ctx.progress(splits, len(splits), f"conflict detector, {what}",
                                               unit="fold")

        section: dict[str, Any] = {
            "detector": self.cfg.detector["name"], "dev": dev_sources, "folds": self.cfg.folds,
            "embed": self.cfg.embed, "labels": dict(Counter(p.conflict for p in dev)),
            "rules_dev": score(dev, rules.predict(labelled_sides(dev)), None, resamples, seed),
            "rules_modes": {}}
        sizes, authors = [s["pairs"] for s in dev_sources], [s["author"] for s in dev_sources]
        held_out: dict[str, list[np.ndarray] | None] = {
            "folds": None, "by_file": by_file(sizes) if len(dev_sources) > 1 else None,
            "by_source": by_source(sizes, authors) if len(set(authors)) > 1 else None}
        runs: dict[str, list[tuple[str, str | None]]] = {}
        for mode, key, what in zip(CV_MODES, CV_KEYS, ("CV", "by file", "by source"),
                                   strict=True):
            if mode in self.cfg.cv and (mode == "folds" or held_out[mode] is not None):
                runs[key] = out_of_fold(
                    learned, dev, self.cfg.folds, seed, dev_cos, held_out[mode], bar(what),
                    under(ctx.progress, f"conflict detector, {what}"))
                section[key] = _scored(dev, runs[key], range(len(dev)), resamples, seed)
        if "cv_by_source" in runs:  # each source on its own, as a new author's data would be
            section["by_source"] = {
                name: _scored(dev, runs["cv_by_source"], held, resamples, seed)
                for name, held in zip(dict.fromkeys(authors), held_out["by_source"] or [],
                                      strict=True)}
        # the first cross-validation run: each pair's guess and newer side for the table, and the
        # development figures a held-out set's gap is taken from
        section["gap_from"] = next(iter(runs), None)
        first = next(iter(runs.values()), None)
        oof = None if first is None else [guess for guess, _ in first]
        dev_newer = None if first is None else _sides([side for _, side in first])
        rows = self._split_rows("dev", dev, oof, dev_newer, section, resamples, seed)
        if self.cfg.test_pairs or self.cfg.outside_pairs:
            learned.fit(labelled_sides(dev), [p.conflict for p in dev], dev_cos,
                        under(ctx.progress, "conflict detector, final fit"),
                        [p.newer for p in dev])
        if self.cfg.test_pairs:
            test, test_sources = self._load([self.cfg.test_pairs])
            scored, test_rows = self._held_out(ctx, "test", test, learned, rules, section)
            section["test_source"] = test_sources[0]
            section["test"], section["rules_test"] = scored["learned"], scored["rules"]
            section["gap"] = scored["gap"]
            rows += test_rows
        outside = []
        for path in self.cfg.outside_pairs:
            pairs, (source,) = self._load([path])
            name = Path(path).stem
            scored, outside_rows = self._held_out(ctx, f"outside {name}", pairs, learned, rules,
                                                  section)
            outside.append({"name": name, "source": source, **scored})
            rows += outside_rows
        if outside:
            section["outside"] = outside
        return section, rows

    def _held_out(self, ctx: RunContext, split: str, pairs: Sequence[LabelledPair],
                  learned: PairDetector, rules: PairDetector, section: dict[str, Any]
                  ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """A set no model was fitted on, scored by the fitted detector and by the rules, with the
        gap from the development CV to it."""
        resamples, seed = ctx.resamples, ctx.seed
        guessed = learned.predict(labelled_sides(pairs), self._cosines(ctx, pairs),
                                  under(ctx.progress, split))
        newer = _newer(learned, pairs)
        figures = score(pairs, guessed, newer, resamples, seed)
        cv = section[section["gap_from"]]["headline"] if section["gap_from"] else {}
        gap = {k: _minus(cv[k], figures["headline"][k]) for k in cv}
        scored = {"learned": figures,
                  "rules": score(pairs, rules.predict(labelled_sides(pairs)), None, resamples,
                                 seed), "gap": gap}
        return scored, self._split_rows(split, pairs, guessed, newer, section, resamples, seed)

    def _split_rows(self, split: str, pairs: Sequence[LabelledPair],
                    learned: Sequence[str] | None,
                    newer: Sequence[str] | None, section: dict[str, Any], resamples: int,
                    seed: int) -> list[dict[str, Any]]:
        """One split's pairs with the learned detector's guess and both rule modes' (whose
        figures go to `section["rules_modes"][split]`)."""
        modes = {mode: [c.kind.value if c else "none" for c in found]
                 for mode, found in self._rules_both_ways(pairs).items()}
        section["rules_modes"][split] = {mode: score(pairs, guessed, None, resamples, seed)
                                         for mode, guessed in modes.items()}
        return [{"split": split, **pair_row(p),
                 "learned_predicted": None if learned is None else learned[i],
                 "learned_newer": None if newer is None else newer[i],
                 **{f"{mode}_predicted": guessed[i] for mode, guessed in modes.items()}}
                for i, p in enumerate(pairs)]

    def _rules_both_ways(self, pairs: Sequence[LabelledPair]
                         ) -> dict[str, list[Conflict | None]]:
        """The reference engine's rules as memeval reads them and as the reference code does."""
        detectors = {"memeval": ConflictDetector(replace(self.cfg.rules, compat=False)),
                     "compat": ConflictDetector(replace(self.cfg.rules, compat=True))}
        return {mode: [d.detect(p.a.content, p.b.content, p.same_source) for p in pairs]
                for mode, d in detectors.items()}

    def _detect(self, ctx: RunContext, pairs: list[LabelledPair]
                ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Per detector, each pair's reason and guessed type ("none" when it saw no conflict):
        the reference engine's rules both ways (memeval's and the reference code's); another
        system under test's detector first, then the reference engine's rules beside it."""
        system = ctx.system
        found = self._rules_both_ways(pairs)
        reasons = {mode: [c.reason if c else "" for c in conflicts]
                   for mode, conflicts in found.items()}
        guesses = {mode: [c.kind.value if c else "none" for c in conflicts]
                   for mode, conflicts in found.items()}
        if isinstance(system, ReferenceSystem):
            return reasons, guesses
        require(system, [Capability.CONFLICTS], "conflict_detection")
        theirs = [conflict_answer(system.name, system.detect_conflict(p.a.content, p.b.content),
                                  f"pair '{p.id}'")
                  for p in ctx.progress(pairs, len(pairs), f"{system.name} conflicts", "pair")]
        return ({system.name: [""] * len(pairs), "reference": reasons["memeval"]},
                {system.name: theirs, "reference": guesses["memeval"]})


def pair_row(pair: LabelledPair) -> dict[str, Any]:
    """A pair as the per-pair tables keep it: both memories with their paths and timestamps."""
    return {"pair_id": pair.id, "label": pair.conflict, "newer": pair.newer, "kind": pair.kind,
            "same_source": pair.same_source, "a": pair.a.content, "a_path": pair.a.path,
            "a_timestamp": pair.a.timestamp, "b": pair.b.content, "b_path": pair.b.path,
            "b_timestamp": pair.b.timestamp, "note": pair.note}


def _sides(newer: Sequence[str | None]) -> list[str] | None:
    """Each pair's newer side, or None when the detector said none."""
    return None if any(side is None for side in newer) else [str(side) for side in newer]


def _scored(pairs: Sequence[LabelledPair], found: Sequence[tuple[str, str | None]],
            rows: Iterable[int], resamples: int, seed: int) -> dict[str, Any]:
    """`score` of the given rows of one cross-validation's (guess, newer side) per pair."""
    picked = list(rows)
    return score([pairs[i] for i in picked], [found[i][0] for i in picked],
                 _sides([found[i][1] for i in picked]), resamples, seed)


def _newer(detector: PairDetector, pairs: Sequence[LabelledPair]) -> list[str] | None:
    return detector.newer(labelled_sides(pairs)) if isinstance(detector, Superseding) else None


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def folds_of(labels: Sequence[str], folds: int, seed: int) -> list[np.ndarray]:
    """Each fold's held-out indices: stratified by label, seeded, every index in one fold."""
    rng = np.random.default_rng(seed)
    assigned = np.empty(len(labels), dtype=int)
    for label in sorted(set(labels)):
        where = np.flatnonzero(np.asarray(labels) == label)
        rng.shuffle(where)
        assigned[where] = np.arange(where.size) % folds
    return [np.flatnonzero(assigned == k) for k in range(folds)]


def by_file(sizes: Sequence[int]) -> list[np.ndarray]:
    """One fold per development file, in order: each file's pairs held out in turn."""
    return by_source(sizes, range(len(sizes)))


def by_source(sizes: Sequence[int], sources: Iterable[object]) -> list[np.ndarray]:
    """One fold per source, in order of first appearance: the pairs of every file of that source
    (files given in order, `sizes` pairs each) held out together."""
    edges = np.cumsum([0, *sizes])
    folds: dict[object, list[np.ndarray]] = {}
    for source, (start, stop) in zip(sources, pairwise(edges), strict=True):
        folds.setdefault(source, []).append(np.arange(start, stop))
    return [np.concatenate(parts) for parts in folds.values()]


def out_of_fold(detector: PairDetector, pairs: Sequence[LabelledPair], folds: int, seed: int,
                cosines: Sequence[float] | None = None,
                held_out: Sequence[np.ndarray] | None = None,
                progress: Callable[[list[Split]], Iterable[Split]] = iter,
                fitting: Progress = quiet) -> list[tuple[str, str | None]]:
    """Each pair's label from a model fitted on the other folds only (stratified, seeded folds,
    or the given ones, e.g. `by_file`; `progress` wraps the folds, a bar), with its newer side
    from the same model (None when the detector does not say): a learned newer side is scored
    only on pairs it never saw. `fitting` shows each fold's fit inside the folds' bar (a pair
    model's takes minutes)."""
    sides, labels = labelled_sides(pairs), [p.conflict for p in pairs]

    def predict(train: np.ndarray, held: np.ndarray) -> list[tuple[str, str | None]]:
        detector.fit([sides[i] for i in train], [labels[i] for i in train],
                     None if cosines is None else [cosines[i] for i in train], fitting,
                     [pairs[i].newer for i in train])
        asked = [sides[i] for i in held]
        guessed = detector.predict(asked, None if cosines is None else [cosines[i] for i in held])
        newer = detector.newer(asked) if isinstance(detector, Superseding) else [None] * len(held)
        return [(str(label), side) for label, side in zip(guessed, newer, strict=True)]

    splits = held_out_splits(len(pairs), held_out if held_out is not None
                             else folds_of(labels, folds, seed))
    return held_out_values(progress(splits), len(pairs), predict)


def _reports(truth: Sequence[str], predicted: Sequence[str], resamples: int,
             seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Precision and recall of "is there a conflict" and of each conflict type, with CIs."""
    actual = ["yes" if t != "none" else "no" for t in truth]
    flagged = ["yes" if g != "none" else "no" for g in predicted]
    any_conflict = per_class_report(actual, flagged, ["yes"], resamples=resamples,
                                    seed=seed)["yes"]
    return any_conflict, per_class_report(truth, predicted, CONFLICT_TYPES,
                                          resamples=resamples, seed=seed)


def score(pairs: Sequence[LabelledPair], predicted: Sequence[str], newer: Sequence[str] | None,
          resamples: int, seed: int) -> dict[str, Any]:
    """Any-conflict precision and recall, per-type report, and temporal recall with the newer
    side right, each with a 95% bootstrap CI."""
    any_conflict, per_type = _reports([p.conflict for p in pairs], predicted, resamples, seed)
    out: dict[str, Any] = {"pairs": len(pairs), "any_conflict": any_conflict,
                           "per_type": per_type}
    headline = {"any_precision": any_conflict["precision"],
                "any_recall": any_conflict["recall"],
                **{f"{t}_recall": per_type[t]["recall"] for t in CONFLICT_TYPES}}
    if newer is not None:
        right = np.array([g == "temporal" and n == p.newer
                          for p, g, n in zip(pairs, predicted, newer, strict=True)
                          if p.conflict == "temporal" and p.newer], float)
        out["temporal_newer_recall"] = float(right.mean()) if right.size else None
        out["temporal_newer_recall_ci95"] = list(bootstrap_ci(right, resamples, seed))
        out["temporal_newer_support"] = int(right.size)
        headline["temporal_newer_recall"] = out["temporal_newer_recall"]
    out["headline"] = headline
    return out


def _with_ci(stats: Mapping[str, Any], key: str) -> str:
    low, high = stats.get(f"{key}_ci95") or (None, None)
    if stats.get(key) is None:
        return "—"
    if low is None or high is None or np.isnan(low) or np.isnan(high):
        return f"{stats[key]:.2f}"
    return f"{stats[key]:.2f} [{low:.2f}–{high:.2f}]"


HEADLINE_NAMES = {"any_precision": "any-conflict precision", "any_recall": "any-conflict recall",
                  **{f"{t}_recall": f"{t} recall" for t in CONFLICT_TYPES},
                  "temporal_newer_recall": "temporal + newer right"}


def _learned_rows(columns: Mapping[str, Mapping[str, Any]]) -> tuple[tuple[str, ...], ...]:
    """One row per figure, one column per detector and split."""
    rows = [("any-conflict precision", *(_with_ci(c["any_conflict"], "precision")
                                         for c in columns.values())),
            ("any-conflict recall", *(_with_ci(c["any_conflict"], "recall")
                                      for c in columns.values()))]
    rows += [(f"{t} recall", *(_with_ci(c["per_type"][t], "recall") for c in columns.values()))
             for t in CONFLICT_TYPES]
    rows.append(("temporal + newer right", *(_with_ci(c, "temporal_newer_recall")
                                             for c in columns.values())))
    return tuple(rows)


def learned_blocks(section: Mapping[str, Any]) -> list[Block]:
    """The development figures (CV and the rules'), then the test split's beside the rules' (two
    tables, as one would not fit a terminal), then the CV − test gap and the outside sets."""
    dev_columns = {f"{section['detector']} CV": section["cv"]} if "cv" in section else {}
    if "cv_by_file" in section:
        dev_columns[f"{section['detector']} by file"] = section["cv_by_file"]
    if "cv_by_source" in section:
        dev_columns["by source"] = section["cv_by_source"]
    dev_columns["rules dev"] = section["rules_dev"]
    dev = sum(d["pairs"] for d in section["dev"])
    test = f"{section['test']['pairs']} pairs" if "test" in section else "skipped"
    ways = [f"{section['folds']}-fold CV on {dev} development pairs"] if "cv" in section \
        else [f"{dev} development pairs"]
    if "cv_by_file" in section:
        ways.append(f"leave-one-file-out over its {len(section['dev'])} files")
    if "cv_by_source" in section:
        ways.append(f"leave-one-source-out over its "
                    f"{len({d['author'] for d in section['dev']})} sources")
    blocks: list[Block] = [Table(
        f"{section['detector']} detector: {' and '.join(ways)}, test split {test}",
        ("", *dev_columns), _learned_rows(dev_columns))]
    if "test" in section:
        columns = {f"{section['detector']} test": section["test"],
                   "rules test": section["rules_test"]}
        blocks.append(Table(f"{section['detector']} detector on the test split ({test}), the "
                            f"rules beside it", ("", *columns), _learned_rows(columns)))
    if "by_source" in section:
        blocks.append(Note("Each source held out", (
            "each source held out (any-conflict precision / recall): " + ", ".join(
                f"{name} {_two(h['headline']['any_precision'])} / "
                f"{_two(h['headline']['any_recall'])}"
                for name, h in section["by_source"].items()))))
    if "gap" in section:
        blocks.append(Note("CV − test gap", "CV − test gap: " + ", ".join(
            f"{HEADLINE_NAMES.get(k, k)} {v:+.2f}" for k, v in section["gap"].items()
            if v is not None)))
    if section.get("outside"):
        blocks.append(_outside_table(section))
    return blocks


def _outside_table(section: Mapping[str, Any]) -> Table:
    """One row per outside set: a table each would bury the comparison across authors."""
    rows = []
    for outside in section["outside"]:
        learned, rules = outside["learned"]["any_conflict"], outside["rules"]["any_conflict"]
        recall_gap = outside["gap"]["any_recall"]
        rows.append((outside["name"], _with_ci(learned, "precision"), _with_ci(learned, "recall"),
                     f"{_two(rules['precision'])} / {_two(rules['recall'])}",
                     "—" if recall_gap is None else f"{recall_gap:+.2f}"))
    return Table("sets written outside memeval, never fitted on: any-conflict precision and "
                 "recall, the rules' beside them, and the CV − set recall gap (per-type figures "
                 "in metrics.json)", ("set", "precision", "recall", "rules", "gap"), tuple(rows))


def _two(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def rules_table(results: Mapping[str, Any], pairs: int) -> Table:
    """The reference rules per type, as fractions with their CIs like every other table here."""
    modes = list(results)
    header = ("type", "support", *(f"{m} {k}" for m in modes for k in ("precision", "recall")))
    rows = []
    for cls in (*CONFLICT_TYPES, "any conflict"):
        cells = []
        for mode in modes:
            stats = results[mode]["any_conflict"] if cls == "any conflict" else \
                results[mode]["per_type"][cls]
            cells += [_with_ci(stats, "precision"), _with_ci(stats, "recall")]
        first = results[modes[0]]
        support = first["any_conflict"]["support"] if cls == "any conflict" else \
            first["per_type"][cls]["support"]
        rows.append((cls, str(support), *cells))
    accuracy = "  ".join(f"{m} accuracy {_with_ci(results[m], 'accuracy')}" for m in modes)
    return Table(f"reference rules on {pairs} pairs (memeval: word-boundary matching; compat: "
                 "the reference's substring matching)", header, tuple(rows), accuracy)


def conflict_blocks(found: ConflictFindings) -> list[Block]:
    """What the run prints, and its report shows."""
    conflicts = found.conflicts
    rules = rules_table({m: conflicts.written[m] for m in conflicts.detectors},
                        int(conflicts.written["pairs"]))
    learned = found.conflicts_learned
    return [rules, *(learned_blocks(learned) if learned is not None else [])]


def report(run: Run) -> list[Section]:
    return [block.section() for block in conflict_blocks(run.result.of(ConflictFindings))]


def figures(run: Run) -> list[Path]:
    from memeval.reporting.conflict_plots import make_conflict_figures

    findings = run.result.of(ConflictFindings)
    learned = run.table("conflict_learned") if findings.conflicts_learned is not None else None
    return make_conflict_figures(run.path, findings.conflicts, learned)


def scores(run: Run) -> list[Score]:
    """Any-conflict precision and recall of the system's detector on the hand-labelled pairs
    (the reference engine's: its rules as memeval reads them, what its detect_conflict
    answers); then, when memeval's learned detector ran, its figures on the test split."""
    findings = run.result.of(ConflictFindings)
    written = findings.conflicts.written
    found = written[findings.conflicts.detectors[0]]["any_conflict"]
    bench = f"conflicts ({Path(str(written.get('source', '?'))).stem})"
    where = f"{written.get('pairs', '?')} pairs"
    figures = [Score(bench, measure, found[measure], as_ci(found[f"{measure}_ci95"]), unit=RATE,
                     population=where) for measure in ("precision", "recall")]
    learned_section = findings.conflicts_learned or {}
    test = learned_section.get("test")
    if test is not None:
        source = Path(str((learned_section.get("test_source") or {}).get("source", "?")))
        learned = test["any_conflict"]
        figures += [Score(f"conflicts ({source.stem})", f"learned {measure}", learned[measure],
                          as_ci(learned[f"{measure}_ci95"]), unit=RATE,
                          population=f"{test['pairs']} test pairs")
                    for measure in ("precision", "recall")]
    return figures


def headline(run: Run) -> str:
    """The declared figures in a sentence: the system's detector, then the learned one."""
    found = scores(run)
    who = run.result.system.name if run.result.system else "reference"
    own = (f"System {who}'s detector found {found[1].shown} of the conflicts in "
           f"{found[1].population} "
           f"at precision {found[0].shown}")
    learned = (f"; memeval's learned detector {found[3].shown} at precision {found[2].shown} on "
               f"{found[3].population}" if len(found) == 4 else "")
    return f"{own}{learned} (95% CIs in brackets)."


def inputs(run: Run) -> dict[str, str]:
    """The labelled pairs the run read, and its learned detector's test split."""
    findings = run.result.of(ConflictFindings)
    written = findings.conflicts.written
    used = {"conflict pairs": f"{Path(str(written.get('source', '?'))).name} "
                              f"({written.get('pairs', '?')} pairs)"}
    test = (findings.conflicts_learned or {}).get("test_source")
    if test:
        used["learned detector's test pairs"] = f"{Path(str(test['source'])).name} " \
                                                f"({test.get('pairs', '?')} pairs)"
    return used


@register("conflict_detection", ConflictDetectionConfig,
          Outputs(ConflictFindings, figures, report, scores, headline, inputs))
def build_conflict_detection(cfg: ConflictDetectionConfig) -> ConflictDetection:
    return ConflictDetection(cfg)
