"""`+experiment=retrieval_replay`: which ranking policy finds the memories a query needs, and
does usage-based reinforcement (SoulScript's SIP-0001, and variants of it) earn its place?

1. A workload (experiments/retrieval_workload.py): a memory corpus (`dataset=locomo`,
   `longmemeval`, `memory_jsonl`), or the store a three-pass write-gate run ended with and the
   bundled labelled queries.
2. Labelled queries are split, seeded, into a *usage* share and an *evaluation* share. Each
   replay pass asks every query once, in time order (queries that carry no time in a seeded
   order; `order: shuffled` reshuffles each pass): a usage query is served and gives feedback
   from its labels, each judgement flipped with probability `feedback_noise`, as a live
   agent's would be; a trace prompt is served without feedback; an evaluation query is only
   measured, never fed back, so each policy is judged on queries it did not learn from.
3. Every arm (`experiment.arms`, policies from quality/rankers.py) replays the same sequence
   with the same feedback over its own copy of the memory records, so MQS evolves in each.

4. Another system under test (`system=`, one with `search`) is searched beside the arms, on the
   same evaluation queries and pools (experiments/system_search.py): its arm, named after it,
   serves what the system's own search returns. The arms are the reference engine's ranking
   policies: the reinforcement they study learns from usage over memeval's copy of the records,
   so they stay reference-only; the system's arm serves the same answers every pass (its search
   is asked once per query, and no feedback is sent back to it).

Per pass and arm: nDCG@k and recall@k on the evaluation queries with bootstrap CIs, the paired
difference to the `baseline` arm with its CI, both per query category too; exposure of memories
in conflict in the top k, the mean MQS of the top result, the Gini of accesses, and the policy's
own figures (a graph's concentration and stability).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memeval.data.base import CORPUS
from memeval.data.quality_sets import check_source, load_queries
from memeval.experiments.base import ExperimentResult, RunContext, Runs, register
from memeval.experiments.retrieval_workload import (
    START,
    Ask,
    Workload,
    corpus_workload,
    store_workload,
)
from memeval.experiments.system_search import Found, search_corpus
from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.ranking import ndcg_at_k, recall_at_k
from memeval.quality.graph import gini
from memeval.quality.mqs import compute_mqs
from memeval.quality.rankers import RANKERS, Ranker, Search
from memeval.quality.record import MemoryRecord
from memeval.quality.stored import StoredMQSConfig
from memeval.registry import bounded, input_file
from memeval.reporting.outputs import RATE, Outputs, Score, Section
from memeval.reporting.phoenix.files import SEARCHES
from memeval.reporting.table import Block, Table, printed
from memeval.results.findings import Findings
from memeval.results.result import as_ci
from memeval.systems.reference.system import ReferenceSystem

if TYPE_CHECKING:
    import pandas as pd

    from memeval.results.run import Run

MQS_TERMS = ("confidence", "usage", "access", "conflict_penalty", "hedged_penalty")
ORDERS = ("time", "shuffled")
METRICS = ("ndcg", "recall")
CATEGORY_CHARS = 11  # a category named as its column's header: six fit in 100 columns


def default_arms() -> dict[str, Any]:
    """The baseline alone; the shipped YAML lists the arms to compare."""
    return {"cosine": {"name": "cosine"}}


@dataclass
class RetrievalReplayConfig:
    queries: str = input_file(load_queries, "")  # the three-pass store's labelled queries
    on_error: str = "skip"
    store_passes: int = bounded(3, 1)
    passes: int = bounded(3, 1)
    k: int = bounded(5, 1)
    usage_fraction: float = bounded(0.5, above=0, below=1)
    trace_prompts: bool = True
    order: str = "time"
    feedback_noise: float = bounded(0.0, 0, 1)
    baseline: str = "cosine"
    arms: dict[str, Any] = field(default_factory=default_arms)
    stored: StoredMQSConfig = field(default_factory=StoredMQSConfig)

    def validate(self) -> None:
        check_source(self.queries, self.on_error, "queries")
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got '{self.order}'")
        if not self.arms:
            raise ValueError("no arms to compare: add experiment.arms.NAME={name: cosine}")
        if self.baseline not in self.arms:
            raise ValueError(f"baseline '{self.baseline}' is not one of the arms "
                             f"({', '.join(self.arms)})")
        for name, node in self.arms.items():
            RANKERS.validate(node, key=f"experiment.arms.{name}")
        self.stored.validate()


@dataclass
class Arm:
    """One ranking policy over its own copy of the memory records."""

    name: str
    ranker: Ranker
    records: list[MemoryRecord]


def _hash_unit(*parts: object) -> float:
    """A number in [0, 1) fixed by `parts`: the same feedback flip for every arm that serves
    the same memory to the same query in the same pass."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class Retrieval(Findings):
    retrieval: Mapping[str, Any]  # the workload, the queries used and the replay's settings


class RetrievalReplay:
    embeds = True  # its input, as `memeval embed` warms it: the cost is said first
    # what costs a resume something is checkpointed: a store's gate passes, a system's searches
    # pool by pool (embeddings are cached); the policies' replay, in memory, is done again
    resumable = True
    runs = Runs.ANY

    def __init__(self, cfg: RetrievalReplayConfig) -> None:
        self.cfg = cfg

    def _workload(self, ctx: RunContext) -> Workload:
        if ctx.input_kind == CORPUS:
            corpus = ctx.corpus  # loaded and checked before the run holds anything to resume
            ctx.checkpoints.begin()  # a resume embeds only what the cache has not kept
            return corpus_workload(ctx, corpus, self.cfg.stored)
        return store_workload(ctx, self.cfg.queries, self.cfg.on_error, self.cfg.store_passes,
                              self.cfg.trace_prompts, self.cfg.stored)

    def _system_rows(self, ctx: RunContext, work: Workload,
                     evaluation: Sequence[Ask]) -> tuple[str, dict[str, dict[str, Any]]] | None:
        """Another system's arm on a memory corpus: each evaluation query's row, by query id;
        None for the reference engine, whose arms are the policies."""
        system = ctx.system
        if isinstance(system, ReferenceSystem):
            return None
        if system.name in self.cfg.arms:
            raise ValueError(f"system {system.name} shares its name with an arm: rename the arm")

        def row(ask: Ask, found: Found) -> dict[str, Any]:
            return {**self._row(ask, found.served, work, None), "search_ms": found.search_ms,
                    "system_scores": found.scores}

        rows = {found["query_id"]: found for found in search_corpus(
            ctx, system, evaluation, work.memories, self.cfg.k, "retrieval_replay", row)}
        return system.name, rows

    def run(self, ctx: RunContext) -> ExperimentResult:
        work = self._workload(ctx)
        shuffled = sorted(work.queries, key=lambda a: a.id)
        random.Random(ctx.seed).shuffle(shuffled)
        cut = round(len(shuffled) * self.cfg.usage_fraction)
        usage, evaluation = shuffled[:cut], shuffled[cut:]
        if not evaluation:
            raise ValueError(f"no evaluation queries: {len(work.queries)} searchable labelled "
                             f"queries and usage_fraction={self.cfg.usage_fraction}")
        held_out = {a.id for a in evaluation}
        arms = [Arm(name, RANKERS.build(node, store=work.store),
                    [MemoryRecord(**{**vars(r), "conflicts": list(r.conflicts)})
                     for r in work.records])
                for name, node in self.cfg.arms.items()]
        beside = self._system_rows(ctx, work, evaluation)
        passes, rows = [], []
        for pass_no in range(1, self.cfg.passes + 1):
            sequence = self._sequence([*usage, *work.prompts, *evaluation], pass_no, ctx.seed)
            scored = {arm.name: self._arm_pass(arm, sequence, held_out, work, pass_no, ctx.seed)
                      for arm in ctx.progress(arms, len(arms), f"replay pass {pass_no}",
                                              unit="arm")}
            if beside is not None:  # in this pass's order: paired query by query
                scored[beside[0]] = [beside[1][row["query_id"]]
                                     for row in scored[self.cfg.baseline]]
            passes.append(self._measure(pass_no, arms, scored, ctx))
            rows += [{"pass": pass_no, "arm": name, **row}
                     for name, mine in scored.items() for row in mine]
        found = Retrieval({
            "workload": work.source,
            "queries": {"labelled": len(work.queries) + len(work.unreachable),
                        "usage": len(usage), "evaluation": len(evaluation),
                        "unreachable": len(work.unreachable),
                        "unreachable_ids": work.unreachable[:100],
                        "trace_prompts": len(work.prompts),
                        "by_category": _counts(evaluation)},
            "memories": len(work.memories),
            "system": None if beside is None else {
                "name": beside[0], "arm": beside[0],
                "served": "the system's own search over each query's pool, asked once per query",
                "policies": "the other arms are the reference engine's ranking policies: "
                            "reinforcement is studied on the reference engine only"},
            "settings": {"k": self.cfg.k, "order": self.cfg.order,
                         "feedback_noise": self.cfg.feedback_noise,
                         "baseline": self.cfg.baseline, "arms": dict(self.cfg.arms)}})
        return ExperimentResult(passes, [], found, summary=summarise(passes, self.cfg.k),
                                tables={SEARCHES: rows})

    def _sequence(self, asks: Sequence[Ask], pass_no: int, seed: int) -> list[Ask]:
        """This pass's order: by time of asking where known (queries without one first, as at
        the replay's start), ties and untimed queries in a seeded order; `shuffled` ignores
        time and reshuffles each pass."""
        order = sorted(asks, key=lambda a: a.id)
        random.Random(seed + pass_no if self.cfg.order == "shuffled" else seed).shuffle(order)
        if self.cfg.order == "time":
            order.sort(key=lambda a: (a.asked_at is not None, a.asked_at or START))
        return order

    def _arm_pass(self, arm: Arm, sequence: Sequence[Ask], held_out: set[str], work: Workload,
                  pass_no: int, seed: int) -> list[dict[str, Any]]:
        """One arm's pass: every query in turn, at its time of asking (untimed ones on the
        pass's own day) plus a minute per step, so the clock never stands still between two
        queries asked at once; the policy's end of day after the last."""
        rows, now = [], START
        for step, ask in enumerate(sequence):
            now = (ask.asked_at or START + timedelta(days=pass_no)) + timedelta(minutes=step)
            search = Search(ask.pool, ask.cosine, ask.lexical, ask.vector, now, ask.group)
            served = arm.ranker.rank(search, self.cfg.k)
            if ask.id in held_out:
                rows.append(self._evaluate(arm, ask, served, work))
                continue
            judged = None
            if ask.grades:
                flip = self.cfg.feedback_noise
                judged = {i: (i in ask.grades) != (_hash_unit(seed, pass_no, ask.id, i) < flip)
                          for i in served}
            for i in served:
                arm.records[i].access_count += 1
                if judged is not None:
                    arm.records[i].record_outcome(judged[i], now)
            arm.ranker.learn(search, served, judged)
        arm.ranker.end_of_day(now + timedelta(hours=23))
        return rows

    def _evaluate(self, arm: Arm, ask: Ask, served: list[int],
                  work: Workload) -> dict[str, Any]:
        return self._row(ask, served, work, arm.records)

    def _row(self, ask: Ask, served: list[int], work: Workload,
             records: Sequence[MemoryRecord] | None) -> dict[str, Any]:
        """An evaluation query's row; `records`: the arm's own copy (None: the workload's, for
        a system's arm, which has none)."""
        ids = work.store.ids
        mine = work.records if records is None else records
        ranked = [ids[i] for i in served]
        grades = {ids[i]: g for i, g in ask.grades.items()}
        flagged = [bool(mine[i].conflicts) for i in served]
        top = compute_mqs(mine[served[0]], None, self.cfg.stored.mqs) \
            if served and records is not None else None
        breakdown = {f"top_mqs_{term}": getattr(top, term) if top else None
                     for term in MQS_TERMS}
        return {"query_id": ask.id, "query": ask.text, "kind": ask.category,
                "searched_at": time.time(),
                "ndcg": ndcg_at_k(ranked, grades, self.cfg.k),
                "recall": recall_at_k(ranked, set(grades), self.cfg.k),
                "exposure": float(np.mean(flagged)) if flagged else 0.0,
                "top_memory": ranked[0] if ranked else None,
                "top_mqs": top.score if top else None, **breakdown,
                "served": ranked, "served_memories": ranked,
                "served_grades": [grades.get(memory, 0) for memory in ranked],
                "served_texts": [work.memories[i].text for i in served],
                "cosines": [float(ask.cosine[np.flatnonzero(ask.pool == i)[0]])
                            for i in served]}

    def _measure(self, pass_no: int, arms: Sequence[Arm],
                 scored: Mapping[str, list[dict[str, Any]]], ctx: RunContext) -> dict[str, Any]:
        resamples, seed = ctx.resamples, ctx.seed + pass_no
        by_name = {arm.name: arm for arm in arms}
        out: dict[str, Any] = {"pass": pass_no, "arms": list(scored),
                               "baseline": self.cfg.baseline}
        for name, mine in scored.items():
            summary = _scores(mine, resamples, seed)
            exposure = np.array([row["exposure"] for row in mine], dtype=float)
            summary["exposure"] = float(exposure.mean()) if exposure.size else None
            tops = [row["top_mqs"] for row in mine if row["top_mqs"] is not None]
            summary["top_mqs_mean"] = float(np.mean(tops)) if tops else None
            arm = by_name.get(name)  # None: a system's arm, which keeps no records
            summary["gini_access"] = gini([r.access_count for r in arm.records]) if arm else None
            out[name] = {**summary, **(arm.ranker.stats() if arm else {})}
        base = scored[self.cfg.baseline]
        out["deltas"] = {name: _deltas(mine, base, resamples, seed)
                         for name, mine in scored.items() if name != self.cfg.baseline}
        categories = sorted({row["kind"] for row in base})
        out["by_category"] = {}
        for category in categories:
            keep = [i for i, row in enumerate(base) if row["kind"] == category]
            picked = {name: [rows[i] for i in keep] for name, rows in scored.items()}
            out["by_category"][category or "(none)"] = {
                "queries": len(keep),
                **{name: _scores(rows, resamples, seed) for name, rows in picked.items()},
                "deltas": {name: _deltas(rows, picked[self.cfg.baseline], resamples, seed)
                           for name, rows in picked.items() if name != self.cfg.baseline}}
        return out


def _counts(asks: Sequence[Ask]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ask in asks:
        counts[ask.category or "(none)"] = counts.get(ask.category or "(none)", 0) + 1
    return dict(sorted(counts.items()))


def _scores(rows: Sequence[Mapping[str, Any]], resamples: int, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric in METRICS:
        values = np.array([row[metric] for row in rows], dtype=float)
        out[metric] = float(values.mean()) if values.size else None
        out[f"{metric}_ci95"] = list(bootstrap_ci(values, resamples, seed))
    return out


def _deltas(rows: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]],
            resamples: int, seed: int) -> dict[str, Any]:
    """Paired per query (every arm scores the same evaluation queries in the same order)."""
    out: dict[str, Any] = {}
    for metric in METRICS:
        diff = np.array([a[metric] - b[metric] for a, b in zip(rows, base, strict=True)])
        out[metric] = float(diff.mean()) if diff.size else None
        out[f"{metric}_ci95"] = list(bootstrap_ci(diff, resamples, seed))
    return out


def _ci(value: float | None, bounds: Sequence[float], signed: bool = False) -> str:
    if value is None:
        return "—"
    number = f"{value:+.3f}" if signed else f"{value:.3f}"
    return f"{number} [{bounds[0]:+.3f}, {bounds[1]:+.3f}]" if signed else \
        f"{number} [{bounds[0]:.3f}–{bounds[1]:.3f}]"


def summarise(passes: Sequence[Mapping[str, Any]], k: int) -> str:
    """The blocks as printed."""
    return printed(retrieval_blocks(passes, k))


def retrieval_blocks(passes: Sequence[Mapping[str, Any]], k: int) -> list[Block]:
    """The last pass: each arm's nDCG@k and recall@k, and its paired difference to the baseline;
    then nDCG@k per query category."""
    last = passes[-1]
    arms, baseline = last["arms"], last["baseline"]
    rows = []
    for name in arms:
        arm, delta = last[name], last["deltas"].get(name)
        rows.append((name, _ci(arm["ndcg"], arm["ndcg_ci95"]),
                     _ci(delta["ndcg"], delta["ndcg_ci95"], True) if delta else "baseline",
                     f"{arm['recall']:.3f}",
                     _ci(delta["recall"], delta["recall_ci95"], True) if delta else "—"))
    table = Table(f"retrieval replay, pass {last['pass']}: held-out queries, k = {k}",
                  ("arm", f"nDCG@{k} [95% CI]", f"Δ vs {baseline} [95% CI]", f"recall@{k}",
                   "Δ recall [95% CI]"), tuple(rows))
    by_category = last["by_category"]
    if len(by_category) < 2:
        return [table]
    # long names (LongMemEval's) would not fit six abreast: numbered columns, named below
    short = all(len(c) <= CATEGORY_CHARS for c in by_category)
    heads = [c if short else f"c{n}" for n, c in enumerate(by_category, 1)]
    category_rows = tuple((name, *(f"{by_category[c][name]['ndcg']:.3f}" for c in by_category))
                          for name in arms)
    legend = "queries: " + ", ".join(
        f"{'' if short else head + ' '}{c} {scores['queries']}"
        for head, (c, scores) in zip(heads, by_category.items(), strict=True))
    return [table, Table(f"nDCG@{k} per query category", ("arm", *heads), category_rows,
                         legend)]


def report(run: Run) -> list[Section]:
    """The tables the run printed; a run written before its passes listed their arms printed
    others, which its metrics.json holds."""
    passes = [p.sections for p in run.result.passes]
    if "arms" not in passes[-1]:
        return [Section("Retrieval", "Written before the passes listed their arms: the "
                                     "numbers are in metrics.json.")]
    k = run.result.of(Retrieval).retrieval["settings"]["k"]
    return [*(block.section() for block in retrieval_blocks(passes, k)), *_by_query(run)]


EVIDENCE_ROWS = 200  # queries the report shows one by one (the per-query table holds all)


def _by_query(run: Run) -> list[Section]:
    """The headline arm's last pass, query by query: what each search served, ✓ where it is
    labelled relevant (its grade), against the query's nDCG and recall."""
    import pandas as pd

    try:
        searches = run.table(SEARCHES)
    except FileNotFoundError:  # a run written before its searches were kept
        return []
    arm, last = _headline_arm(run.result.of(Retrieval).retrieval), run.result.passes[-1].pass_no
    mine = searches[(searches["arm"] == arm) & (searches["pass"] == last)].head(EVIDENCE_ROWS)
    rows = [{"query": r["query"], "kind": r["kind"], "nDCG": r["ndcg"], "recall": r["recall"],
             "served (✓ relevant, its grade)": ", ".join(
                 f"{m}{f' ✓{g}' if g else ''}" for m, g in zip(r["served_memories"],
                                                                 r["served_grades"],
                                                                 strict=True))}
            for r in mine.to_dict("records")]
    return [Section(f"Query by query ({arm}, pass {last})",
                    f"The evaluation queries ({len(rows)} shown; the run's "
                    f"{SEARCHES}.parquet holds every arm and pass).", table=pd.DataFrame(rows))]


def figures(run: Run) -> list[Path]:
    from memeval.reporting.retrieval_plots import make_retrieval_figures

    k = run.result.of(Retrieval).retrieval["settings"]["k"]
    return make_retrieval_figures(run.path, run.result.passes, k)


def _headline_arm(found: Mapping[str, Any]) -> str:
    """The system's arm (the reference's: the baseline, its own search); a run before arms were
    named had `off` (cosine) and `on` (the graph)."""
    return str(found["system"]["arm"] if found.get("system") else
               found["settings"].get("baseline", "off"))


def scores(run: Run) -> list[Score]:
    """The system's arm on the last pass (the reference's: the baseline, its own search), over
    the held-out evaluation queries."""
    found = run.result.of(Retrieval).retrieval
    arm, last = _headline_arm(found), run.result.passes[-1]
    scored = last.sections[arm]
    workload = (found.get("workload") or {}).get("name") or \
        Path(str(found["queries"].get("source", "?"))).stem
    k, bench = found["settings"]["k"], f"retrieval ({workload})"
    where = (f"{found['queries']['evaluation']} evaluation queries, {arm}, pass "
             f"{last.pass_no}")
    return [Score(bench, f"nDCG@{k}", scored["ndcg"], as_ci(scored["ndcg_ci95"]),
                  population=where),
            Score(bench, f"recall@{k}", scored["recall"], as_ci(scored["recall_ci95"]),
                  unit=RATE, population=where)]


def items(run: Run) -> dict[str, pd.Series]:
    """The headline arm's nDCG@k and recall@k on the last pass, query by query."""
    searches = run.table(SEARCHES)
    arm, last = _headline_arm(run.result.of(Retrieval).retrieval), run.result.passes[-1].pass_no
    mine = searches[(searches["arm"] == arm) & (searches["pass"] == last)].set_index("query_id")
    k = run.result.of(Retrieval).retrieval["settings"]["k"]
    return {f"nDCG@{k}": mine["ndcg"].astype(float), f"recall@{k}": mine["recall"].astype(float)}


def headline(run: Run) -> str:
    """The declared figures in a sentence."""
    ndcg, recall = scores(run)
    return (f"On {ndcg.population}, search scored {ndcg.measure} {ndcg.shown} and found "
            f"{recall.shown} of the relevant memories in its top {recall.measure.split('@')[1]} "
            f"(95% CIs in brackets).")


def inputs(run: Run) -> dict[str, str]:
    """The labelled queries the run read besides its dataset (a store workload's file)."""
    queries = run.result.of(Retrieval).retrieval.get("queries") or {}
    source = queries.get("source")
    return {"labelled queries": f"{Path(str(source)).name} ({queries.get('labelled', '?')} "
                                f"queries)"} if source else {}


@register("retrieval_replay", RetrievalReplayConfig,
          Outputs(Retrieval, figures, report, scores, headline, inputs, items))
def build_retrieval_replay(cfg: RetrievalReplayConfig) -> RetrievalReplay:
    return RetrievalReplay(cfg)
