"""The usage-reinforced memory graph of SoulScript's SIP-0001, with every open choice in config.

Nodes are memories with a static `importance` (0..1) and a `recall_count`; edges are weighted,
undirected connections. What the SIP leaves open, and what memeval chooses (all `GraphConfig`):

- **edges from semantic similarity:** on add, links to the `neighbours` most similar memories
  with cosine ≥ `similarity_floor`, weight = cosine × `similarity_weight`. Up to
  `exact_below` earlier memories they are found exactly; past it, by an HNSW index (faiss, when
  installed: `pip install memeval[ann]`; else still exactly), so adding n memories costs
  about n log n instead of n²;
- **co-occurrence:** memories retrieved together gain `co_occurrence_step` on their edge
  (created if absent) and count the co-occurrence;
- **feedback:** positive adds one recall and `positive_step` on the edges to the memories it was
  retrieved with; negative takes `negative_step` off them; an edge below `drop_below` is dropped;
- **decay:** edges touching a memory idle for d days are multiplied by (1 − `decay_per_day`)^d;
  weights are clipped to [0, `max_weight`];
- **node weight** = α·importance + β·ln(1 + recall_count) (the SIP's composite, natural log);
- **ranking:** PageRank by power iteration (`damping`, `iterations`, `tolerance`) over
  edge weights normalised per node; the teleport vector is node weight × query relevance, so
  the ranking is personalised to the query, over a sparse matrix of the edges (a node has a
  few). Importance in [0, 1] against an unbounded log term is left as the SIP has it; α and β
  set the balance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memeval.quality.neighbours import NeighbourIndex
from memeval.registry import bounded

DENSE_UP_TO = 2048  # nodes ranked over a dense matrix; a larger graph, over a sparse one


@dataclass
class GraphConfig:
    alpha: float = bounded(1.0, 0)
    beta: float = bounded(1.0, 0)
    damping: float = bounded(0.85, 0, below=1)
    iterations: int = bounded(100, 1)
    tolerance: float = bounded(1e-9, above=0)
    neighbours: int = bounded(5, 0)
    similarity_floor: float = bounded(0.5, -1, 1)
    similarity_weight: float = bounded(1.0, 0)
    co_occurrence_step: float = bounded(0.1, 0)
    positive_step: float = bounded(0.2, 0)
    negative_step: float = bounded(0.3, 0)
    drop_below: float = bounded(0.05, 0)
    max_weight: float = bounded(2.0, 0)
    decay_per_day: float = bounded(0.02, 0, below=1)
    exact_below: int = bounded(4096, 1)  # memories searched exactly; past it, approximately
    hnsw_links: int = bounded(32, 2)  # links per HNSW node (faiss's M)
    hnsw_search: int = bounded(64, 1)  # candidates an HNSW search keeps (faiss's efSearch)

    def validate(self) -> None:
        if self.alpha < 0 or self.beta < 0 or self.alpha + self.beta == 0:
            raise ValueError("alpha and beta must be non-negative and not both 0")
        if not 0.0 <= self.damping < 1.0:
            raise ValueError("damping must be in [0, 1)")
        if self.iterations < 1 or self.neighbours < 0:
            raise ValueError("iterations must be at least 1 and neighbours non-negative")
        if not 0.0 <= self.decay_per_day < 1.0:
            raise ValueError("decay_per_day must be in [0, 1)")
        steps = (self.similarity_weight, self.co_occurrence_step, self.positive_step,
                 self.negative_step, self.drop_below, self.max_weight)
        if min(steps) < 0:
            raise ValueError("edge steps and bounds must be non-negative")


@dataclass
class Edge:
    weight: float
    last_updated: datetime
    co_occurrences: int = 0


@dataclass
class Node:
    id: str
    importance: float
    created_at: datetime
    recall_count: int = 0
    last_accessed: datetime | None = None
    edges: dict[str, Edge] = field(default_factory=dict)


class MemoryGraph:
    def __init__(self, cfg: GraphConfig) -> None:
        self.cfg = cfg
        self.nodes: dict[str, Node] = {}
        self.index = NeighbourIndex(cfg.exact_below, cfg.hnsw_links, cfg.hnsw_search)
        self.rows: list[str] = []  # memory ids by index row (in order of adding)

    def add(self, memory_id: str, vector: np.ndarray, importance: float, now: datetime) -> None:
        if not 0.0 <= importance <= 1.0:
            raise ValueError(f"memory '{memory_id}': importance {importance} is not in [0, 1]")
        if memory_id in self.nodes:
            raise ValueError(f"memory '{memory_id}' is already in the graph")
        node = Node(memory_id, importance, now)
        vector = np.asarray(vector, dtype=np.float32)
        if self.rows and self.cfg.neighbours:
            for row, sim in self.index.nearest(vector, self.cfg.neighbours):
                if sim >= self.cfg.similarity_floor:
                    self._set(node, self.nodes[self.rows[row]],
                              sim * self.cfg.similarity_weight, now)
        self.index.add(vector)
        self.rows.append(memory_id)
        self.nodes[memory_id] = node

    def _set(self, a: Node, b: Node, weight: float, now: datetime,
             co_occurred: bool = False) -> None:
        weight = min(self.cfg.max_weight, max(0.0, weight))
        if weight < self.cfg.drop_below:
            a.edges.pop(b.id, None)
            b.edges.pop(a.id, None)
            return
        count = (a.edges[b.id].co_occurrences if b.id in a.edges else 0) + int(co_occurred)
        a.edges[b.id] = Edge(weight, now, count)
        b.edges[a.id] = Edge(weight, now, count)

    def _shift(self, a: Node, b: Node, step: float, now: datetime, co_occurred: bool) -> None:
        current = a.edges[b.id].weight if b.id in a.edges else 0.0
        self._set(a, b, current + step, now, co_occurred)

    def record_retrieval(self, ids: list[str], now: datetime) -> None:
        """Memories served together: each is recalled once; each pair co-occurred."""
        served = [self.nodes[i] for i in ids if i in self.nodes]
        for node in served:
            node.recall_count += 1
            node.last_accessed = now
        for i, a in enumerate(served):
            for b in served[i + 1 :]:
                self._shift(a, b, self.cfg.co_occurrence_step, now, co_occurred=True)

    def feedback(self, memory_id: str, positive: bool, context: list[str],
                 now: datetime) -> None:
        """A user confirmed (or corrected) a memory served with `context`."""
        node = self.nodes[memory_id]
        if positive:
            node.recall_count += 1
        step = self.cfg.positive_step if positive else -self.cfg.negative_step
        for other in context:
            if other != memory_id and other in self.nodes:
                self._shift(node, self.nodes[other], step, now, co_occurred=False)

    def decay(self, now: datetime) -> None:
        """Weaken the edges of idle memories by the days since each edge was last touched."""
        for node in self.nodes.values():
            idle_since = node.last_accessed or node.created_at
            idle_days = (now - idle_since).total_seconds() / 86400.0
            if idle_days <= 0:
                continue
            for other_id, edge in list(node.edges.items()):
                days = min(idle_days, (now - edge.last_updated).total_seconds() / 86400.0)
                if days > 0:
                    factor = (1.0 - self.cfg.decay_per_day) ** days
                    self._set(node, self.nodes[other_id], edge.weight * factor, now)

    def node_weight(self, node: Node) -> float:
        return self.cfg.alpha * node.importance + self.cfg.beta * math.log1p(node.recall_count)

    def rank(self, relevance: dict[str, float] | None = None) -> dict[str, float]:
        """Personalised PageRank: teleport ∝ node weight × relevance to the query (all 1 when
        there is no query); scores sum to 1 over the memories."""
        ids = list(self.nodes)
        if not ids:
            return {}
        index = {memory_id: i for i, memory_id in enumerate(ids)}
        fit = (lambda i: relevance.get(i, 0.0)) if relevance is not None else (lambda i: 1.0)
        teleport = np.array([self.node_weight(self.nodes[i]) * fit(i) for i in ids],
                            dtype=np.float64)
        if teleport.sum() <= 0:
            teleport = np.ones(len(ids))
        teleport /= teleport.sum()
        step, dangling = self._transition(index)
        scores = teleport.copy()
        for _ in range(self.cfg.iterations):
            spread = step(scores) + scores[dangling].sum() * teleport
            updated = (1 - self.cfg.damping) * teleport + self.cfg.damping * spread
            if np.abs(updated - scores).sum() < self.cfg.tolerance:
                scores = updated
                break
            scores = updated
        return dict(zip(ids, scores.tolist(), strict=True))

    def _transition(self, index: dict[str, int]
                    ) -> tuple[Callable[[np.ndarray], np.ndarray], np.ndarray]:
        """One step of the walk over the row-normalised edge weights (`scores` ↦ `scores @ P`),
        and which nodes have no edge. Up to DENSE_UP_TO nodes P is a dense matrix, as it always
        was (fastest for a conversation's few hundred memories); past it, sparse: O(edges), not
        O(nodes²), in memory and per step."""
        rows, cols, weights = [], [], []
        for memory_id, node in self.nodes.items():
            for other, edge in node.edges.items():
                rows.append(index[memory_id])
                cols.append(index[other])
                weights.append(edge.weight)
        size = len(index)
        if size <= DENSE_UP_TO:
            matrix = np.zeros((size, size))
            matrix[rows, cols] = weights
            out = matrix.sum(axis=1, keepdims=True)
            dense = np.divide(matrix, out, out=np.zeros_like(matrix), where=out > 0)
            return lambda scores: scores @ dense, out[:, 0] == 0
        from scipy.sparse import csr_matrix  # loaded when a large graph is ranked

        where, values = np.array(rows, dtype=int), np.array(weights, dtype=float)
        total = np.bincount(where, weights=values, minlength=size)
        # transposed, so that `walk @ scores` is the row vector `scores @ P`
        walk = csr_matrix((values / total[where], (cols, rows)), shape=(size, size))
        return lambda scores: walk @ scores, total == 0


def gini(values: Sequence[float] | np.ndarray) -> float:
    """0 when every memory is recalled alike, towards 1 when a few take all recalls."""
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0 or x.sum() == 0:
        return 0.0
    ranks = np.arange(1, x.size + 1)
    return float((2 * ranks - x.size - 1) @ x / (x.size * x.sum()))


def top_share(scores: dict[str, float], fraction: float = 0.01) -> float:
    """Share of PageRank mass held by the top `fraction` of memories (at least one)."""
    values = np.sort(np.asarray(list(scores.values()), dtype=float))[::-1]
    if values.size == 0 or values.sum() == 0:
        return 0.0
    count = max(1, math.ceil(fraction * values.size))
    return float(values[:count].sum() / values.sum())


def rank_agreement(before: Mapping[str, float], after: Mapping[str, float]) -> float | None:
    """Kendall τ-b between two score maps over the items both rank; None with under 2 items or
    when either side is constant."""
    common = sorted(set(before) & set(after))
    if len(common) < 2:
        return None
    from scipy.stats import kendalltau  # scipy.stats loads when used

    tau = kendalltau([before[i] for i in common], [after[i] for i in common]).statistic
    return None if math.isnan(tau) else float(tau)
