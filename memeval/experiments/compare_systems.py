"""`+experiment=compare_systems`: the same data through several memory systems, side by side.

Each capability the systems share gets one table, every system measured on the same items, and
each system after the first is compared with the first item by item (paired bootstrap CIs of
the difference; McNemar's exact test on the write gate's keep/drop decisions):

- write gate (ingest + reset_memories): the three-pass protocol on the run's dataset (its
  `splits` only, when its entries carry a `split_field`), one arm per system (its decisions,
  spans and Phoenix experiments carry the system's name), the systems ranked by a weighed cost
  of missed findings, noise stored and judge calls (metrics/gate_cost.py);
- trust (score_records): the hand-labelled memory records, score / 100 read as P(trusted);
- conflicts (detect_conflicts): the hand-labelled memory pairs, per type and any conflict;
- search (search): the labelled retrieval queries over the labelled set's substantive rows.

A capability a system lacks leaves its row out of that table, with the reason in `skipped`. A
system that fails on a capability (its daemon went away, an answer outside the protocol) is left
out of that table the same way, named as failed with why; every other system keeps its figures,
and the run fails once its results are written.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memeval.data.base import redacted_names
from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.data.quality_sets import (
    CONFLICT_LABELS,
    load_conflict_pairs,
    load_memory_records,
    load_queries,
)
from memeval.data.splits import field_split
from memeval.entry import Entry
from memeval.experiments.base import ExperimentResult, RunContext, Runs, register, replay
from memeval.experiments.checkpoint import PassRecord
from memeval.metrics.calibration import calibration_report
from memeval.metrics.classification import per_class_report
from memeval.metrics.gate_cost import CostWeights, GateOutcome, Truth, rank_gates
from memeval.metrics.gate_metrics import SystemFailure
from memeval.metrics.paired import mcnemar, paired_delta
from memeval.metrics.ranking import ndcg_at_k, recall_at_k
from memeval.registry import ConfigError, bounded, input_file
from memeval.reporting.outputs import NUMBER, RATE, Outputs, Score, Section, pass_scores
from memeval.reporting.systems_table import systems_blocks, systems_summary
from memeval.results.findings import Findings
from memeval.results.result import as_ci
from memeval.results.sections import Comparison
from memeval.systems.answers import conflict_answer
from memeval.systems.base import (
    SYSTEMS,
    Capability,
    IndexedMemory,
    Ingestor,
    System,
)
from memeval.utils.progress import step
from memeval.utils.redact import redact

if TYPE_CHECKING:
    from memeval.results.run import Run

log = logging.getLogger(__name__)
WRITE_GATE = (Capability.INGEST, Capability.RESET)
CONFLICT_TYPES = CONFLICT_LABELS[:-1]


@dataclass
class CompareSystemsConfig:
    # name → the system's settings (a memeval/conf/system option composed in, see the YAML)
    systems: dict[str, Any] = field(default_factory=dict)
    passes: int = bounded(3, 1)
    # the write gate replays the dataset's entries whose `split_field` is in `splits`; a
    # dataset whose entries have no such field (the bundled turns) is replayed whole
    split_field: str = "split"
    splits: list[str] = field(default_factory=list)  # empty: every entry
    gate_cost: CostWeights = field(default_factory=CostWeights)  # what ranks the gates
    records: str | None = input_file(load_memory_records, None)
    pairs: str | None = input_file(load_conflict_pairs, None)
    queries: str | None = input_file(load_queries, None)
    corpus: str | None = input_file(load_labeled_jsonl, None)  # what search indexes
    k: int = bounded(5, 1)
    bins: int = bounded(5, 2)
    on_error: str = "skip"

    def validate(self) -> None:
        if not self.systems:
            raise ValueError("no systems to compare: add +system@experiment.systems.NAME=OPTION")
        for name, node in self.systems.items():
            SYSTEMS.validate(node, key=f"experiment.systems.{name}")
        if (self.queries is None) != (self.corpus is None):
            raise ValueError("queries and corpus go together: search needs both")
        self.gate_cost.validate()

    def splits_of(self, entries: list[Entry]) -> list[str] | None:
        """The splits the write gate replays; None: every entry, as none has `split_field`."""
        if not self.splits or not any(self.split_field in e.meta for e in entries):
            return None
        return list(self.splits)

    def replayed(self, entries: list[Entry]) -> list[Entry]:
        """The entries the write gate replays (`splits_of`), in order; splits no entry is in,
        or an entry without the field among entries with it, are refused by name."""
        if self.splits_of(entries) is None:
            return entries
        try:
            chosen, _ = field_split(entries, self.split_field, self.splits)
        except ValueError as err:
            raise ConfigError(f"experiment.split_field: {err}") from None
        if not chosen:
            found = sorted({str(e.meta[self.split_field]) for e in entries})
            raise ConfigError(f"experiment.splits {self.splits}: no entry of the dataset has "
                              f"its '{self.split_field}' among them (it has: "
                              f"{', '.join(found)})")
        return chosen


@dataclass(frozen=True)
class Compared(Findings):
    protocol: str
    systems: Sequence[str]  # in the order compared: each later one against the first
    arms: Mapping[str, Sequence[Mapping[str, Any]]]  # each system's write-gate passes
    compare: Comparison  # the tables measured
    skipped: Mapping[str, Mapping[str, str]]  # by capability: system → why it was left out
    notes: Mapping[str, Mapping[str, Any]]  # what a reader must know of each system


class CompareSystems:
    embeds = True  # its input, as `memeval embed` warms it: the cost is said first
    resumable = True
    runs = Runs.LISTED

    def __init__(self, cfg: CompareSystemsConfig) -> None:
        self.cfg = cfg
        self.failed: dict[str, dict[str, str]] = {}  # by capability: system → why it failed

    def _fails(self, what: str, name: str, err: SystemFailure) -> None:
        why = redact(str(err))  # a system's own message: it may quote what it was sent
        log.warning("system %s failed in %s, left out of that table: %s", name, what, why)
        self.failed.setdefault(what, {})[name] = f"failed: {why}"

    def run(self, ctx: RunContext) -> ExperimentResult:
        systems = {name: ctx.build_system(node) for name, node in self.cfg.systems.items()}
        try:
            return self._run(ctx, systems)
        finally:
            for system in systems.values():
                system.close()

    def _run(self, ctx: RunContext, systems: dict[str, System]) -> ExperimentResult:
        measures = {"write_gate": (WRITE_GATE, None), "trust": ((Capability.SCORE,), self._trust),
                    "conflicts": ((Capability.CONFLICTS,), self._conflicts),
                    "search": ((Capability.SEARCH,), self._search)}
        able = {what: {n: s for n, s in systems.items() if set(needed) <= s.capabilities}
                for what, (needed, _) in measures.items()}
        skipped = {what: {n: "lacks " + ", ".join(c for c in needed if c not in s.capabilities)
                          for n, s in systems.items() if n not in able[what]}
                   for what, (needed, _) in measures.items()}
        tables: dict[str, Any] = {}
        entries = ctx.dataset.entries
        arms, decisions = self._write_gate(ctx, able["write_gate"], self.cfg.replayed(entries))
        if arms:
            gate = _write_gate_table(arms, decisions, ctx, self.cfg.gate_cost)
            tables["write_gate"] = {"splits": self.cfg.splits_of(entries), **gate}
        for what, (_, measure) in measures.items():
            if measure is not None and able[what] and self._has_data(what):
                tables[what] = measure(ctx, able[what])
        notes = {n: s.notes for n, s in systems.items() if s.notes}
        for what, failed in self.failed.items():
            skipped.setdefault(what, {}).update(failed)
        compared = Compared("compare_systems", list(systems), arms, Comparison.from_dict(tables),
                            skipped, notes)
        first = next(iter(arms.values()), [])
        failures: list[Exception] = [
            SystemFailure(f"system {name} failed in {what}: {why.removeprefix('failed: ')}")
            for what, failed in self.failed.items() for name, why in failed.items()]
        return ExperimentResult(first, decisions, compared,
                                summary=systems_summary(tables, skipped, notes),
                                failures=failures)

    def _has_data(self, capability: str) -> bool:
        return {"trust": self.cfg.records, "conflicts": self.cfg.pairs,
                "search": self.cfg.queries}[capability] is not None

    # write gate ---------------------------------------------------------------------------
    def _write_gate(self, ctx: RunContext, systems: dict[str, System], entries: list[Entry]
                    ) -> tuple[dict[str, list[dict[str, Any]]], list[Any]]:
        arms: dict[str, list[dict[str, Any]]] = {}
        decisions: list[Any] = []
        for name, system in systems.items():
            mine: list[dict[str, Any]] = []
            rows: list[Any] = []
            try:
                ingestor = system.ingestor(ctx.run_dir / f"state_{name}")
                items = ctx.prepare(ingestor, entries)
                for pass_no in range(1, self.cfg.passes + 1):
                    record = ctx.checkpoints.run_pass(
                        ingestor, f"{name}-pass-{pass_no}",
                        partial(_pass, ctx, ingestor, items, pass_no, name))
                    mine.append(record.metrics)
                    rows.extend(record.decisions)
            except SystemFailure as err:
                self._fails("write_gate", name, err)
                continue
            arms[name] = mine
            decisions.extend(rows)
        return arms, decisions

    # trust --------------------------------------------------------------------------------
    def _trust(self, ctx: RunContext, systems: dict[str, System]) -> dict[str, Any]:
        assert self.cfg.records is not None
        items, _ = load_memory_records(self.cfg.records, self.cfg.on_error)
        labelled = [item for item in items if item.label is not None]
        records = [item.record for item in items]
        keep = [i for i, item in enumerate(items) if item.label is not None]
        ranks = np.array([item.trust_rank for item in labelled], dtype=float)
        trusted = np.array([item.label == "trusted" for item in labelled], dtype=float)
        common = {"bins": self.cfg.bins, "resamples": ctx.resamples, "seed": ctx.seed}
        scores = {}
        for n, s in systems.items():
            try:
                scored = step(ctx.progress, f"{n} trust of {len(records)} records",
                              partial(s.score_records, records))
                scores[n] = np.asarray(scored, dtype=float)[keep]
            except SystemFailure as err:
                self._fails("trust", n, err)
        table = {n: calibration_report(v, ranks, trusted, **common) for n, v in scores.items()}
        errors = {n: (v / 100.0 - trusted) ** 2 for n, v in scores.items()}
        return {"records": len(labelled), "systems": table,
                "brier_vs_first": _against_first(errors, ctx)}

    # conflicts ----------------------------------------------------------------------------
    def _conflicts(self, ctx: RunContext, systems: dict[str, System]) -> dict[str, Any]:
        assert self.cfg.pairs is not None
        pairs, _ = load_conflict_pairs(self.cfg.pairs, self.cfg.on_error)
        truth = [p.conflict for p in pairs]
        common = {"resamples": ctx.resamples, "seed": ctx.seed}
        table: dict[str, Any] = {}
        hits: dict[str, np.ndarray] = {}
        for name, system in systems.items():
            try:
                found = [conflict_answer(system.name, system.detect_conflict(p.a.content,
                                                                        p.b.content),
                                         f"pair '{p.id}'")
                         for p in ctx.progress(pairs, len(pairs), f"{name} conflicts", "pair")]
            except SystemFailure as err:
                self._fails("conflicts", name, err)
                continue
            flagged = ["yes" if f != "none" else "no" for f in found]
            actual = ["yes" if t != "none" else "no" for t in truth]
            table[name] = {
                "any_conflict": per_class_report(actual, flagged, ["yes"], **common)["yes"],
                "per_type": per_class_report(truth, found, CONFLICT_TYPES, **common),
                "typed": any(f in CONFLICT_TYPES for f in found)}
            hits[name] = np.array([(f != "none") == (t != "none") for f, t in zip(
                found, truth, strict=True)], dtype=float)
        return {"pairs": len(pairs), "systems": table,
                "correct_vs_first": _against_first(hits, ctx)}

    # search -------------------------------------------------------------------------------
    def _search(self, ctx: RunContext, systems: dict[str, System]) -> dict[str, Any]:
        assert self.cfg.queries is not None and self.cfg.corpus is not None
        # served as the run's dataset is: redacted, the queries naming the entries as it does
        corpus = redacted_names(load_labeled_jsonl(self.cfg.corpus))
        queries, _ = load_queries(self.cfg.queries, self.cfg.on_error, corpus.names)
        memories = [IndexedMemory(e.id, redact(e.assistant_response)) for e in corpus.entries
                    if e.label == "substantive"]
        k = self.cfg.k
        ndcg: dict[str, np.ndarray] = {}
        recall: dict[str, np.ndarray] = {}
        for name, system in systems.items():
            try:
                step(ctx.progress, f"{name} index of {len(memories)} memories",
                     partial(system.index, memories))
                ranked = [[hit.id for hit in system.search(q.query, k)]
                          for q in ctx.progress(queries, len(queries), f"{name} search", "query")]
            except SystemFailure as err:
                self._fails("search", name, err)
                continue
            ndcg[name] = np.array([ndcg_at_k(r, q.relevant, k)
                                   for r, q in zip(ranked, queries, strict=True)])
            recall[name] = np.array([recall_at_k(r, set(q.relevant), k)
                                     for r, q in zip(ranked, queries, strict=True)])
        return {"queries": len(queries), "memories": len(memories), "k": k,
                "ndcg_vs_first": _against_first(ndcg, ctx),
                "recall_vs_first": _against_first(recall, ctx)}


def _pass(ctx: RunContext, ingestor: Ingestor, items: list[Any], pass_no: int,
          name: str) -> PassRecord:
    ingestor.restart(wipe_memories=True)
    rows = replay(ctx, ingestor, items, pass_no, "eval", arm=name)
    return PassRecord({"arm": name, **ctx.measure(rows, ingestor, pass_no)}, rows)


def _against_first(per_item: dict[str, np.ndarray], ctx: RunContext) -> dict[str, Any]:
    """Each system's mean per-item measure, and every later system's paired difference with the
    first's (bootstrap over items)."""
    names = list(per_item)
    common = {"resamples": ctx.resamples, "seed": ctx.seed}
    return {name: {"mean": float(per_item[name].mean()) if per_item[name].size else None,
                   **({} if i == 0 else {"vs": names[0], **paired_delta(
                       per_item[names[0]], per_item[name], **common)})}
            for i, name in enumerate(names)}


def _write_gate_table(arms: dict[str, list[dict[str, Any]]], decisions: list[Any],
                      ctx: RunContext, weights: CostWeights) -> dict[str, Any]:
    """The last pass of each system, and the paired comparison with the first system on the
    same entries: recall of human-labelled substantive entries with McNemar on them, judge-call
    rate, and McNemar on every keep/drop decision; then every system ranked by its weighed
    cost on those entries, resampled alike."""
    last = {name: passes[-1] for name, passes in arms.items()}
    pass_no = next(iter(last.values()))["pass"]
    by_arm = {name: {d.entry_id: d for d in decisions
                     if d.arm == name and d.pass_no == pass_no and d.phase == "eval"}
              for name in arms}
    ids = sorted(set.intersection(*(set(v) for v in by_arm.values())))
    first = by_arm[next(iter(by_arm))]
    human = np.array([first[i].label_source == "human" for i in ids], dtype=bool)
    truth = Truth(np.array([first[i].label == "substantive" for i in ids], dtype=bool) & human,
                  np.array([first[i].label == "noise" for i in ids], dtype=bool) & human)
    outcomes = {name: GateOutcome(np.array([rows[i].retained for i in ids], dtype=bool),
                                  np.array([rows[i].judge_called for i in ids], dtype=bool))
                for name, rows in by_arm.items()}
    common = {"resamples": ctx.resamples, "seed": ctx.seed + pass_no}
    names = list(outcomes)
    paired = {name: _paired_gate(outcomes[names[0]], outcomes[name], truth, names[0], common)
              for name in names[1:]}
    keys = ("substantive_recall", "substantive_recall_ci95", "noise_stored",
            "prejudge_filter_rate", "judge_calls", "judge_call_saving", "entries")
    return {"pass": pass_no, "systems": {n: {k: p.get(k) for k in keys} for n, p in last.items()},
            "paired": paired, "ranking": rank_gates(truth, outcomes, weights, **common)}


def _paired_gate(a: GateOutcome, b: GateOutcome, truth: Truth, first: str,
                 common: dict[str, int]) -> dict[str, Any]:
    """A later system against the first on the same entries: recall and judge-call rate with
    paired CIs, McNemar on the substantive entries the recall is measured on, beside it, then
    on every keep/drop."""
    substantive = truth.substantive
    return {"vs": first, "entries": truth.size,
            "recall": paired_delta(a.kept[substantive], b.kept[substantive], **common),
            "judge_call_rate": paired_delta(a.judged, b.judged, **common),
            "mcnemar_recall": mcnemar(a.kept[substantive], b.kept[substantive]),
            "mcnemar_decisions": mcnemar(a.kept, b.kept)}


def figures(run: Run) -> list[Path]:
    """A figure per capability compared, and the write gate's own set when one was compared."""
    from memeval.reporting.plots import make_gate_figures
    from memeval.reporting.systems_plots import make_systems_figures

    gate = make_gate_figures(run) if run.result.arms else []
    return [*make_systems_figures(run.path, run.result.of(Compared).compare), *gate]


def report(run: Run) -> list[Section]:
    """The tables the run printed."""
    found = run.result.of(Compared)
    return [block.section() for block in systems_blocks(found.compare, found.skipped,
                                                         found.notes)]


def scores(run: Run) -> list[Score]:
    """Each system's figures, named by the key it was listed under: the write gate's last pass
    (recall, noise stored, pre-judge) and the weighed cost the gates are ranked by, trust
    against the labels (Spearman, Brier), any-conflict precision and recall, and search's mean
    nDCG@k and recall@k; each with its CI where the table has one, on the benchmarks the
    single-capability experiments name alike."""
    written = run.result.of(Compared).compare.written
    found: list[Score] = []
    gate, trust = written.get("write_gate"), written.get("trust")
    conflicts, search = written.get("conflicts"), written.get("search")
    if gate:  # each system's last pass, declared as every gate replay declares it
        dataset = run.result.dataset
        splits = f" {'+'.join(gate['splits'])}" if gate.get("splits") else ""
        replayed = f"{dataset.name if dataset else '?'}{splits}, pass {gate['pass']}"
        bench = f"write gate ({replayed})"
        for system in gate["systems"]:
            found += [replace(s, system=system)
                      for s in pass_scores(run.result.arms[system][-1], bench)]
        found += _ranking_scores(gate.get("ranking"), f"gate ranking ({replayed})")
    if trust:
        bench = f"trust ({Path(str(run.setting('experiment.records'))).stem})"
        for system, row in trust["systems"].items():
            where = f"{row['n']} labelled records"
            found += [Score(bench, "Spearman", row["spearman"], as_ci(row["spearman_ci95"]),
                            population=where, system=system),
                      Score(bench, "Brier", row["brier"], as_ci(row["brier_ci95"]),
                            higher_is_better=False, population=where, system=system)]
    if conflicts:
        bench = f"conflicts ({Path(str(run.setting('experiment.pairs'))).stem})"
        for system, row in conflicts["systems"].items():
            any_conflict = row["any_conflict"]
            found += [Score(bench, measure, any_conflict[measure],
                            as_ci(any_conflict[f"{measure}_ci95"]), unit=RATE,
                            population=f"{conflicts['pairs']} pairs", system=system)
                      for measure in ("precision", "recall")]
    if search:
        bench = f"search ({Path(str(run.setting('experiment.queries'))).stem})"
        where = f"{search['queries']} queries over {search['memories']} memories"
        for measure, key, unit in ((f"nDCG@{search['k']}", "ndcg_vs_first", NUMBER),
                                   (f"recall@{search['k']}", "recall_vs_first", RATE)):
            found += [Score(bench, measure, row["mean"], unit=unit, population=where,
                            system=system) for system, row in search[key].items()]
    return found


def _ranking_scores(ranking: Mapping[str, Any] | None, bench: str) -> list[Score]:
    """Each system's weighed write-gate cost (lower is better); none in a run from before the
    ranking."""
    if not ranking:
        return []
    w = ranking["weights"]
    where = (f"{ranking['entries']} entries, cost {w['missed']:g}·missed + {w['noise']:g}·noise "
             f"+ {w['judged']:g}·judged")
    return [Score(bench, "cost", row["cost"], as_ci(row["cost_ci95"]), higher_is_better=False,
                  population=where, system=system)
            for system, row in ranking["systems"].items()]


@register("compare_systems", CompareSystemsConfig, Outputs(Compared, figures, report, scores))
def build_compare_systems(cfg: CompareSystemsConfig) -> CompareSystems:
    return CompareSystems(cfg)
