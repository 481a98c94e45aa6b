"""`+experiment=retrieval_replay`: does usage-based reinforcement (SIP-0001) rank memories better?

1. A three-pass run of the write gate; its last pass's stored memories are the store, each a
   memory record (gate confidence, hedging, conflicts: quality/stored.py) and a graph node
   whose importance is that record's MQS / 100.
2. Labelled queries are split (seeded) into a *usage* half and an *evaluation* half. Usage
   queries, plus the traces' own user prompts, are replayed for several passes in a shuffled
   order; the usage half also gives feedback from its labels (a served memory graded relevant is
   a success, otherwise a failure). Evaluation queries are only ever measured, never fed back:
   the ranking is judged on queries it did not learn from.
3. Two arms over the same store: `off` ranks by cosine alone; `on` ranks by (1 − λ)·cosine +
   λ·PageRank (personalised to the query's cosines over the top `candidates`, normalised to the
   best candidate), and learns recalls, co-occurrence edges, feedback and decay from usage.
   Both arms count accesses and outcomes on the memory records, so MQS evolves in each.

Per pass and arm: nDCG@k and recall@k on the evaluation queries (bootstrap CIs, and the paired
on − off difference), Kendall τ of the global ranking against the previous pass, Gini of recall
counts, PageRank mass in the top 1%, exposure of conflicting or superseded memories in the
top k, and the mean MQS of the top result.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from memeval.data.quality_sets import (
    LabelledQuery,
    check_source,
    file_fingerprint,
    load_queries,
)
from memeval.experiments.base import EXPERIMENTS, ExperimentResult, RunContext, replay
from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.ranking import ndcg_at_k, rank_agreement, recall_at_k
from memeval.quality.graph import GraphConfig, MemoryGraph, gini, top_share
from memeval.quality.mqs import compute_mqs
from memeval.quality.record import MemoryRecord
from memeval.quality.stored import StoredMQSConfig, records_from_store
from memeval.registry import bounded, input_file
from memeval.systems.stored_quality import gate_confidences

ARMS = ("off", "on")
MQS_TERMS = ("confidence", "usage", "access", "conflict_penalty", "hedged_penalty")
START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class RetrievalReplayConfig:
    queries: str = input_file(load_queries, "")
    on_error: str = "skip"
    store_passes: int = bounded(3, 1)
    passes: int = bounded(3, 1)
    k: int = bounded(5, 1)
    candidates: int = bounded(20, 1)
    graph_weight: float = bounded(0.3, 0, 1)
    usage_fraction: float = bounded(0.5, above=0, below=1)
    trace_prompts: bool = True
    graph: GraphConfig = field(default_factory=GraphConfig)
    stored: StoredMQSConfig = field(default_factory=StoredMQSConfig)

    def validate(self) -> None:
        check_source(self.queries, self.on_error, "queries")
        if min(self.store_passes, self.passes, self.k) < 1 or self.candidates < self.k:
            raise ValueError("store_passes, passes and k must be at least 1; candidates >= k")
        if not 0.0 <= self.graph_weight <= 1.0 or not 0.0 < self.usage_fraction < 1.0:
            raise ValueError("graph_weight must be in [0, 1] and usage_fraction in (0, 1)")
        self.graph.validate()
        self.stored.validate()


@dataclass
class Arm:
    """One ranking policy over its own copy of the records (and graph, when reinforced)."""

    name: str
    records: list[MemoryRecord]
    graph: MemoryGraph | None
    exposures: list[float] = field(default_factory=list)


@dataclass
class Replays:
    """The store's ids and vectors and the queries replayed against it, fixed for a whole run.

    `usage_vectors` holds the usage queries' vectors, then the traces' `prompts` prompts' ones.
    """

    ids: list[str]
    entry_of: dict[str, str]  # memory id -> the entry it was stored from
    vectors: np.ndarray
    usage: list[LabelledQuery]
    prompts: int
    evaluation: list[LabelledQuery]
    usage_vectors: np.ndarray
    eval_vectors: np.ndarray


class RetrievalReplay:
    resumable = False  # its passes share in-memory graphs that checkpoints do not hold

    def __init__(self, cfg: RetrievalReplayConfig) -> None:
        self.cfg = cfg

    # the store ----------------------------------------------------------------------------
    def _store(self, ctx: RunContext) -> tuple[list[Any], np.ndarray, list[MemoryRecord]]:
        gate = ctx.reference_ingestor("retrieval_replay")
        items = ctx.prepare(gate, ctx.dataset.entries)
        decisions = []
        for pass_no in range(1, self.cfg.store_passes + 1):
            gate.restart(wipe_memories=True)
            decisions = replay(ctx, gate, items, pass_no, "eval", arm="store")
        memories = list(gate.memories.memories)
        by_entry = {d.entry_id: d for d in decisions}
        confidences = gate_confidences(gate, [by_entry[m.source_id].score for m in memories])
        records = records_from_store(memories, gate.memories.vectors, confidences,
                                     self.cfg.stored)
        return memories, gate.memories.vectors.copy(), records

    # ranking ------------------------------------------------------------------------------
    def _rank(self, arm: Arm, sims: np.ndarray, ids: Sequence[str]) -> list[int]:
        order = np.argsort(-sims)[: self.cfg.candidates]
        if arm.graph is None or self.cfg.graph_weight == 0:
            return [int(i) for i in order[: self.cfg.k]]
        relevance = {ids[i]: max(float(sims[i]), 0.0) for i in order}
        pagerank = arm.graph.rank(relevance)
        best = max((pagerank[ids[i]] for i in order), default=0.0) or 1.0
        weight = self.cfg.graph_weight
        scored = sorted(order, key=lambda i: -((1 - weight) * sims[i]
                                               + weight * pagerank[ids[i]] / best))
        return [int(i) for i in scored[: self.cfg.k]]

    def run(self, ctx: RunContext) -> ExperimentResult:
        queries, report = load_queries(self.cfg.queries, self.cfg.on_error)
        memories, vectors, base_records = self._store(ctx)
        replays = self._replays(ctx, queries, memories, vectors)
        usage, evaluation, entry_of = replays.usage, replays.evaluation, replays.entry_of
        stored_entries = set(entry_of.values())
        arms = {name: self._arm(name, memories, vectors, base_records) for name in ARMS}
        passes, rows = [], []
        previous: dict[str, dict[str, float]] = {name: {} for name in ARMS}
        for pass_no in range(1, self.cfg.passes + 1):
            scores_by_arm = self._pass(pass_no, arms, replays, ctx.seed)
            passes.append(self._measure(pass_no, arms, scores_by_arm, previous, ctx))
            rows += [{"pass": pass_no, "arm": name, **row}
                     for name, scored in scores_by_arm.items() for row in scored]
        reachable = [q for q in evaluation if set(q.relevant) & stored_entries]
        extra = {"retrieval": {
            "queries": {"source": report.source, "fingerprint": file_fingerprint(self.cfg.queries),
                        "labelled": len(queries), "usage": len(usage),
                        "evaluation": len(evaluation), "evaluation_reachable": len(reachable),
                        "trace_prompts": replays.prompts, "skipped": report.skipped,
                        "problems": report.problems[:100]},
            "memories": len(memories),
            "relevant_entries_stored": len({e for q in queries for e in q.relevant}
                                           & stored_entries),
            "relevant_entries": len({e for q in queries for e in q.relevant}),
            "settings": {"k": self.cfg.k, "candidates": self.cfg.candidates,
                         "graph_weight": self.cfg.graph_weight}}}
        return ExperimentResult(passes, [], extra, summary=summarise(passes),
                                tables={"retrieval_queries": rows})

    def _replays(self, ctx: RunContext, queries: list[LabelledQuery], memories: Sequence[Any],
                 vectors: np.ndarray) -> Replays:
        """The seeded usage / evaluation split of the queries, embedded in one batch."""
        rng = random.Random(ctx.seed)
        shuffled = sorted(queries, key=lambda q: q.id)
        rng.shuffle(shuffled)
        cut = round(len(shuffled) * self.cfg.usage_fraction)
        usage, evaluation = shuffled[:cut], shuffled[cut:]
        prompts = [e.user_prompt for e in ctx.dataset.entries] if self.cfg.trace_prompts else []
        texts = [q.query for q in usage] + prompts + [q.query for q in evaluation]
        query_vectors = ctx.embedder.embed(texts) if texts else np.zeros((0, vectors.shape[1]))
        return Replays(ids=[m.id for m in memories], entry_of={m.id: m.source_id for m in memories},
                       vectors=vectors, usage=usage, prompts=len(prompts), evaluation=evaluation,
                       usage_vectors=query_vectors[: len(usage) + len(prompts)],
                       eval_vectors=query_vectors[len(usage) + len(prompts):])

    def _pass(self, pass_no: int, arms: dict[str, Arm], replays: Replays,
              seed: int) -> dict[str, list[dict[str, Any]]]:
        """One day of use: every arm replays the usage in the same shuffled order, then is scored
        on the evaluation queries."""
        now = START + timedelta(days=pass_no)
        order = list(range(len(replays.usage_vectors)))
        random.Random(seed + pass_no).shuffle(order)
        return {name: self._arm_pass(arm, order, now, replays) for name, arm in arms.items()}

    def _arm_pass(self, arm: Arm, order: list[int], now: datetime,
                  replays: Replays) -> list[dict[str, Any]]:
        """One arm's day: usage a minute apart (feedback from labelled queries only), the night's
        decay, then one score per evaluation query, which never feeds back."""
        ids, entry_of, vectors = replays.ids, replays.entry_of, replays.vectors
        for step, i in enumerate(order):
            query = replays.usage[i] if i < len(replays.usage) else None
            self._use(arm, replays.usage_vectors[i] @ vectors.T, ids, entry_of, query,
                      now + timedelta(minutes=step))
        if arm.graph is not None:
            arm.graph.decay(now + timedelta(hours=23))
        return [self._evaluate(arm, replays.eval_vectors[j] @ vectors.T, ids, entry_of, q)
                for j, q in enumerate(replays.evaluation)]

    def _arm(self, name: str, memories: Sequence[Any], vectors: np.ndarray,
             base: Sequence[MemoryRecord]) -> Arm:
        records = [MemoryRecord(**{**vars(r), "conflicts": list(r.conflicts)}) for r in base]
        graph = None
        if name == "on":
            graph = MemoryGraph(self.cfg.graph)
            for memory, vector, record in zip(memories, vectors, records, strict=True):
                importance = compute_mqs(record, None, self.cfg.stored.mqs).score / 100.0
                graph.add(memory.id, vector, importance, START)
        return Arm(name, records, graph)

    def _use(self, arm: Arm, sims: np.ndarray, ids: Sequence[str], entry_of: dict[str, str],
             query: LabelledQuery | None, now: datetime) -> None:
        served = self._rank(arm, sims, ids)
        for i in served:
            arm.records[i].access_count += 1
            if query is not None:
                arm.records[i].record_outcome(entry_of[ids[i]] in query.relevant, now)
        if arm.graph is None:
            return
        served_ids = [ids[i] for i in served]
        arm.graph.record_retrieval(served_ids, now)
        if query is not None:
            for memory_id in served_ids:
                arm.graph.feedback(memory_id, entry_of[memory_id] in query.relevant,
                                   served_ids, now)

    def _evaluate(self, arm: Arm, sims: np.ndarray, ids: Sequence[str],
                  entry_of: dict[str, str], query: LabelledQuery) -> dict[str, Any]:
        served = self._rank(arm, sims, ids)
        ranked = [entry_of[ids[i]] for i in served]
        flagged = [bool(arm.records[i].conflicts) or entry_of[ids[i]] in query.superseded
                   for i in served]
        top = compute_mqs(arm.records[served[0]], None, self.cfg.stored.mqs) if served else None
        breakdown = {f"top_mqs_{term}": getattr(top, term) if top else None
                     for term in MQS_TERMS}
        return {"query_id": query.id, "query": query.query, "kind": query.kind,
                "searched_at": time.time(),
                "ndcg": ndcg_at_k(ranked, query.relevant, self.cfg.k),
                "recall": recall_at_k(ranked, set(query.relevant), self.cfg.k),
                "exposure": float(np.mean(flagged)) if flagged else 0.0,
                "top_memory": ids[served[0]] if served else None,
                "top_mqs": top.score if top else None, **breakdown,
                "served": ranked, "served_memories": [ids[i] for i in served],
                "cosines": [float(sims[i]) for i in served]}

    def _measure(self, pass_no: int, arms: dict[str, Arm],
                 scores_by_arm: dict[str, list[dict[str, Any]]], previous: dict[str, dict],
                 ctx: RunContext) -> dict[str, Any]:
        resamples = int(ctx.cfg.bootstrap)
        out: dict[str, Any] = {"pass": pass_no}
        for name, arm in arms.items():
            scored = scores_by_arm[name]
            summary: dict[str, Any] = {}
            for metric in ("ndcg", "recall", "exposure"):
                values = np.array([row[metric] for row in scored], dtype=float)
                summary[metric] = float(values.mean()) if values.size else None
                summary[f"{metric}_ci95"] = list(bootstrap_ci(values, resamples,
                                                              ctx.seed + pass_no))
            tops = [row["top_mqs"] for row in scored if row["top_mqs"] is not None]
            summary["top_mqs_mean"] = float(np.mean(tops)) if tops else None
            recalls = [n.recall_count for n in arm.graph.nodes.values()] if arm.graph else \
                [r.access_count for r in arm.records]
            summary["gini_recall"] = gini(recalls)
            if arm.graph is not None:
                ranking = arm.graph.rank()
                summary["pagerank_top1pct_share"] = top_share(ranking, 0.01)
                summary["rank_tau_vs_previous"] = rank_agreement(previous[name], ranking)
                previous[name] = ranking
                summary["edges"] = sum(len(n.edges) for n in arm.graph.nodes.values()) // 2
            out[name] = summary
        for metric in ("ndcg", "recall"):
            diff = np.array([a[metric] - b[metric] for a, b in
                             zip(scores_by_arm["on"], scores_by_arm["off"], strict=True)])
            out[f"{metric}_on_minus_off"] = float(diff.mean()) if diff.size else None
            out[f"{metric}_on_minus_off_ci95"] = list(bootstrap_ci(diff, resamples,
                                                                   ctx.seed + pass_no))
        return out


def _ci(value: float | None, bounds: list[float]) -> str:
    if value is None:
        return "—"
    return f"{value:.3f} [{bounds[0]:.3f}–{bounds[1]:.3f}]"


def summarise(passes: list[dict[str, Any]]) -> str:
    from memeval.reporting.table import aligned

    header = ("pass", "nDCG off", "nDCG on", "on − off", "recall off", "recall on",
              "Gini on", "top 1% PR", "τ vs prev", "exposure off/on")
    rows = []
    for p in passes:
        off, on = p["off"], p["on"]
        tau = on.get("rank_tau_vs_previous")
        rows.append((str(p["pass"]), _ci(off["ndcg"], off["ndcg_ci95"]),
                     _ci(on["ndcg"], on["ndcg_ci95"]),
                     _ci(p["ndcg_on_minus_off"], p["ndcg_on_minus_off_ci95"]),
                     f"{off['recall']:.3f}", f"{on['recall']:.3f}", f"{on['gini_recall']:.3f}",
                     f"{on['pagerank_top1pct_share']:.3f}",
                     "—" if tau is None else f"{tau:.3f}",
                     f"{off['exposure']:.3f}/{on['exposure']:.3f}"))
    return aligned(header, rows)


@EXPERIMENTS.register("retrieval_replay", RetrievalReplayConfig)
def build_retrieval_replay(cfg: RetrievalReplayConfig) -> RetrievalReplay:
    return RetrievalReplay(cfg)
