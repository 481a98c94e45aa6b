"""Ranking policies a retrieval replay compares on the same searches, by name (`RANKERS`).

Baselines rank by what a search alone says: `cosine`, `bm25`, and `hybrid` (the two fused by
reciprocal rank or by normalised score). Reinforced policies also learn from use: `sip0001` is
SoulScript's SIP-0001 memory graph exactly as proposed, with two of its choices open to
variants (positive feedback only; fusing by rank instead of score), and `query_feedback` keeps
what the SIP's global graph cannot: *which* query a memory helped, so a memory is lifted only
for queries like the ones it answered, by at most a bounded amount.

A policy sees a `Search` (the memories it may return, with their cosine and BM25 scores, the
query's vector and the time) and, after serving, what the user's feedback said of each served
memory (`judged`; None for unlabelled use). Graphs are kept per scope (a conversation, a
haystack), since a search never leaves its own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from memeval.quality.graph import GraphConfig, MemoryGraph, gini, rank_agreement, top_share
from memeval.registry import Registry, bounded

FUSIONS = ("rank", "score")


@dataclass(frozen=True)
class Search:
    pool: np.ndarray  # store indices of the memories this search may return
    cosine: np.ndarray  # per pool member
    lexical: np.ndarray  # BM25, per pool member
    vector: np.ndarray  # the query's embedding
    now: datetime
    group: Hashable = None  # the scope the pool was drawn from: one graph per group


@dataclass(frozen=True)
class Store:
    """What a policy may know of the memories: ids, vectors, static importance (MQS / 100)."""

    ids: Sequence[str]
    vectors: np.ndarray
    importance: Sequence[float]
    start: datetime


class Ranker(Protocol):
    def rank(self, search: Search, k: int) -> list[int]:
        """The best `k` store indices, best first."""
        ...

    def learn(self, search: Search, served: Sequence[int],
              judged: Mapping[int, bool] | None) -> None:
        """Served memories, with the user's feedback on each (None: no feedback given)."""
        ...

    def end_of_day(self, now: datetime) -> None: ...

    def stats(self) -> dict[str, Any]:
        """Policy-specific figures for a pass (e.g. a graph's concentration)."""
        ...


def _order(scores: np.ndarray) -> np.ndarray:
    """Positions by score, highest first; ties keep pool order (stable), so runs repeat."""
    return np.argsort(-scores, kind="stable")


def _ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each position under `_order`."""
    ranks = np.empty(scores.size, dtype=float)
    ranks[_order(scores)] = np.arange(1, scores.size + 1)
    return ranks


def _minmax(scores: np.ndarray) -> np.ndarray:
    span = float(scores.max() - scores.min()) if scores.size else 0.0
    return (scores - scores.min()) / span if span > 0 else np.zeros_like(scores)


def fused(first: np.ndarray, second: np.ndarray, fusion: str, weight: float,
          rrf_k: float) -> np.ndarray:
    """`first` and `second` fused: by reciprocal rank (weighted 1 − weight and weight), or by
    min-max normalised score."""
    if fusion == "rank":
        return (1 - weight) / (rrf_k + _ranks(first)) + weight / (rrf_k + _ranks(second))
    return (1 - weight) * _minmax(first) + weight * _minmax(second)


class Stateless:
    """A policy that ranks by the search alone and learns nothing."""

    def scores(self, search: Search) -> np.ndarray:
        raise NotImplementedError

    def rank(self, search: Search, k: int) -> list[int]:
        return [int(search.pool[i]) for i in _order(self.scores(search))[:k]]

    def learn(self, search: Search, served: Sequence[int],
              judged: Mapping[int, bool] | None) -> None:
        return None

    def end_of_day(self, now: datetime) -> None:
        return None

    def stats(self) -> dict[str, Any]:
        return {}


RANKERS: Registry[Ranker] = Registry("ranker")


@dataclass
class NoSettings:
    """A baseline that ranks by one of the search's own scores has nothing to set."""


@dataclass
class Signal(Stateless):
    signal: Callable[[Search], np.ndarray]

    def scores(self, search: Search) -> np.ndarray:
        return self.signal(search)


@RANKERS.register("cosine", NoSettings)
def build_cosine(cfg: NoSettings, **_: Any) -> Ranker:
    return Signal(lambda search: search.cosine)


@RANKERS.register("bm25", NoSettings)
def build_bm25(cfg: NoSettings, **_: Any) -> Ranker:
    return Signal(lambda search: search.lexical)


@dataclass
class HybridConfig:
    fusion: str = "rank"
    lexical_weight: float = bounded(0.5, 0, 1)
    rrf_k: float = bounded(60.0, 0)

    def validate(self) -> None:
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got '{self.fusion}'")


@dataclass
class Hybrid(Stateless):
    cfg: HybridConfig

    def scores(self, search: Search) -> np.ndarray:
        return fused(search.cosine, search.lexical, self.cfg.fusion, self.cfg.lexical_weight,
                     self.cfg.rrf_k)


@RANKERS.register("hybrid", HybridConfig)
def build_hybrid(cfg: HybridConfig, **_: Any) -> Ranker:
    return Hybrid(cfg)


@dataclass
class GraphRankerConfig:
    """SIP-0001 as proposed by default: (1 − weight)·cosine + weight·PageRank (personalised to
    the query's cosines over the cosine top `candidates`, normalised to the best candidate);
    recalls, co-occurrence, feedback of both signs and daily decay learnt from use."""

    weight: float = bounded(0.3, 0, 1)
    candidates: int = bounded(20, 1)
    fusion: str = "score"
    rrf_k: float = bounded(60.0, 0)
    feedback: str = "all"  # all | positive: negative feedback is not applied
    graph: GraphConfig = field(default_factory=GraphConfig)

    def validate(self) -> None:
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got '{self.fusion}'")
        if self.feedback not in ("all", "positive"):
            raise ValueError(f"feedback must be 'all' or 'positive', got '{self.feedback}'")
        self.graph.validate()


class GraphRanker:
    def __init__(self, cfg: GraphRankerConfig, store: Store) -> None:
        self.cfg, self.store = cfg, store
        self.graphs: dict[Hashable, MemoryGraph] = {}
        self.previous: dict[Hashable, dict[str, float]] = {}
        self.agreement: list[float] = []

    def _graph(self, search: Search) -> MemoryGraph:
        """The search's group's graph, its memories added on first use (in store order)."""
        if search.group not in self.graphs:
            graph = MemoryGraph(self.cfg.graph)
            for i in sorted(int(i) for i in search.pool) if search.group is not None \
                    else range(len(self.store.ids)):
                graph.add(self.store.ids[i], self.store.vectors[i], self.store.importance[i],
                          self.store.start)
            self.graphs[search.group] = graph
        return self.graphs[search.group]

    def rank(self, search: Search, k: int) -> list[int]:
        order = _order(search.cosine)[: self.cfg.candidates]
        if self.cfg.weight == 0:
            return [int(search.pool[i]) for i in order[:k]]
        ids = self.store.ids
        relevance = {ids[search.pool[i]]: max(float(search.cosine[i]), 0.0) for i in order}
        pagerank = self._graph(search).rank(relevance)
        graph_scores = np.array([pagerank.get(ids[search.pool[i]], 0.0) for i in order])
        if self.cfg.fusion == "rank":
            scores = fused(search.cosine[order], graph_scores, "rank", self.cfg.weight,
                           self.cfg.rrf_k)
        else:
            best = graph_scores.max() if graph_scores.size and graph_scores.max() > 0 else 1.0
            scores = (1 - self.cfg.weight) * search.cosine[order] + \
                self.cfg.weight * graph_scores / best
        return [int(search.pool[order[i]]) for i in _order(scores)[:k]]

    def learn(self, search: Search, served: Sequence[int],
              judged: Mapping[int, bool] | None) -> None:
        graph = self._graph(search)
        served_ids = [self.store.ids[i] for i in served]
        graph.record_retrieval(served_ids, search.now)
        for i, positive in (judged or {}).items():
            if positive or self.cfg.feedback == "all":
                graph.feedback(self.store.ids[i], positive, served_ids, search.now)

    def end_of_day(self, now: datetime) -> None:
        for graph in self.graphs.values():
            graph.decay(now)

    def stats(self) -> dict[str, Any]:
        """Concentration over every graph: Gini of recall counts, PageRank mass in the top 1%
        (of the largest graph), Kendall τ of each graph's global ranking against the last
        pass's, and the edge count."""
        recalls = [n.recall_count for g in self.graphs.values() for n in g.nodes.values()]
        taus = []
        largest: dict[str, float] = {}
        for group, graph in self.graphs.items():
            ranking = graph.rank()
            tau = rank_agreement(self.previous.get(group, {}), ranking)
            if tau is not None:
                taus.append(tau)
            self.previous[group] = ranking
            largest = ranking if len(ranking) > len(largest) else largest
        return {"gini_recall": gini(recalls) if recalls else None,
                "pagerank_top1pct_share": top_share(largest, 0.01) if largest else None,
                "rank_tau_vs_previous": float(np.mean(taus)) if taus else None,
                "edges": sum(len(n.edges) for g in self.graphs.values()
                             for n in g.nodes.values()) // 2}


@RANKERS.register("sip0001", GraphRankerConfig)
def build_sip0001(cfg: GraphRankerConfig, store: Store, **_: Any) -> Ranker:
    return GraphRanker(cfg, store)


@dataclass
class QueryFeedbackConfig:
    """cosine + boost · max over past queries u that marked the memory relevant of
    [cos(query, u) − similarity_floor]⁺ / (1 − similarity_floor): a memory is lifted only for
    queries like one it answered, by at most `boost`; negative feedback lowers it the same way
    when `penalise` is on."""

    boost: float = bounded(0.2, 0)
    similarity_floor: float = bounded(0.5, -1, below=1)
    penalise: bool = False


class QueryFeedback:
    def __init__(self, cfg: QueryFeedbackConfig) -> None:
        self.cfg = cfg
        self.helped: dict[int, list[np.ndarray]] = {}  # memory -> vectors of queries it answered
        self.misled: dict[int, list[np.ndarray]] = {}

    def _lift(self, memory: int, vector: np.ndarray, seen: dict[int, list[np.ndarray]]) -> float:
        if memory not in seen:
            return 0.0
        closest = float(np.max(np.stack(seen[memory]) @ vector))
        floor = self.cfg.similarity_floor
        return max(closest - floor, 0.0) / (1 - floor)

    def rank(self, search: Search, k: int) -> list[int]:
        """Only the pool's memories with feedback are visited, not the whole pool."""
        scores = search.cosine.copy()
        sides = [(self.helped, 1.0), *([(self.misled, -1.0)] if self.cfg.penalise else [])]
        for seen, sign in sides:
            for position in np.flatnonzero(np.isin(search.pool, list(seen))):
                memory = int(search.pool[position])
                scores[position] += sign * self.cfg.boost * self._lift(memory, search.vector,
                                                                       seen)
        return [int(search.pool[i]) for i in _order(scores)[:k]]

    def learn(self, search: Search, served: Sequence[int],
              judged: Mapping[int, bool] | None) -> None:
        for memory, positive in (judged or {}).items():
            (self.helped if positive else self.misled).setdefault(memory, []).append(
                search.vector)

    def end_of_day(self, now: datetime) -> None:
        return None

    def stats(self) -> dict[str, Any]:
        return {"memories_lifted": len(self.helped)}


@RANKERS.register("query_feedback", QueryFeedbackConfig)
def build_query_feedback(cfg: QueryFeedbackConfig, **_: Any) -> Ranker:
    return QueryFeedback(cfg)
