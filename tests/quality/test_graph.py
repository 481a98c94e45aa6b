"""SIP-0001's memory graph: edges from similarity, co-occurrence and feedback; decay; ranking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memeval.quality.graph import GraphConfig, MemoryGraph, gini, top_share

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def graph(**changes: float) -> MemoryGraph:
    g = MemoryGraph(GraphConfig(**changes))  # type: ignore[arg-type]
    g.add("a", unit(1, 0, 0), 0.5, NOW)
    g.add("b", unit(1, 0.2, 0), 0.5, NOW)  # cosine 0.98 with a
    g.add("c", unit(0, 0, 1), 0.5, NOW)  # unrelated
    return g


def test_similar_memories_are_linked_on_add() -> None:
    g = graph()
    assert set(g.nodes["a"].edges) == {"b"} and g.nodes["c"].edges == {}
    assert g.nodes["a"].edges["b"].weight == pytest.approx(float(unit(1, 0, 0) @ unit(1, 0.2, 0)))
    assert graph(similarity_floor=0.99).nodes["a"].edges == {}


def test_retrieval_counts_recalls_and_links_what_came_together() -> None:
    g = graph()
    g.record_retrieval(["a", "c"], NOW)
    g.record_retrieval(["a", "c"], NOW)
    assert g.nodes["a"].recall_count == 2 and g.nodes["b"].recall_count == 0
    edge = g.nodes["c"].edges["a"]
    assert edge.weight == pytest.approx(0.2) and edge.co_occurrences == 2
    assert g.nodes["a"].edges["c"] == edge  # undirected


def test_feedback_strengthens_or_cuts_links() -> None:
    g = graph()
    g.feedback("a", True, ["b", "c"], NOW)
    assert g.nodes["a"].recall_count == 1
    assert g.nodes["a"].edges["c"].weight == pytest.approx(0.2)
    g.feedback("a", False, ["c"], NOW)
    assert "c" not in g.nodes["a"].edges and "a" not in g.nodes["c"].edges  # below drop_below


def test_idle_links_decay_by_the_day() -> None:
    g = graph(decay_per_day=0.1)
    before = g.nodes["a"].edges["b"].weight
    g.decay(NOW + timedelta(days=2))
    assert g.nodes["a"].edges["b"].weight == pytest.approx(before * 0.81)
    g.decay(NOW + timedelta(days=2))  # nothing more has elapsed
    assert g.nodes["a"].edges["b"].weight == pytest.approx(before * 0.81)


def test_rank_is_pagerank_with_a_weighted_teleport() -> None:
    g = graph()
    g.record_retrieval(["a", "c"], NOW)
    scores = g.rank()
    assert sum(scores.values()) == pytest.approx(1.0)
    # closed form: s = (1 - d) v + d (s P + dangling mass · v); no dangling node here
    ids = list(g.nodes)
    weights = np.array([[g.nodes[i].edges[j].weight if j in g.nodes[i].edges else 0.0
                         for j in ids] for i in ids])
    transition = weights / weights.sum(axis=1, keepdims=True)
    v = np.array([g.node_weight(g.nodes[i]) for i in ids])
    v /= v.sum()
    d = g.cfg.damping
    exact = np.linalg.solve(np.eye(3) - d * transition.T, (1 - d) * v)
    assert np.allclose([scores[i] for i in ids], exact, atol=1e-7)


def test_recalls_raise_rank_and_a_query_personalises_it() -> None:
    g = graph()
    base = g.rank()
    for _ in range(5):
        g.record_retrieval(["c"], NOW)
    assert g.rank()["c"] > base["c"]
    focused = g.rank({"a": 1.0})
    assert focused["a"] > focused["c"] and focused["b"] > focused["c"]


def test_concentration_measures() -> None:
    assert gini([1, 1, 1, 1]) == 0.0
    assert gini([0, 0, 0, 4]) == pytest.approx(0.75)
    assert top_share({"a": 0.7, "b": 0.2, "c": 0.1}) == pytest.approx(0.7)
    assert top_share({str(i): 1.0 for i in range(200)}, 0.01) == pytest.approx(0.01)


@pytest.mark.parametrize("changes", [{"alpha": 0.0, "beta": 0.0}, {"damping": 1.0},
                                     {"decay_per_day": 1.0}, {"negative_step": -1.0}])
def test_bad_settings_are_refused(changes: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        GraphConfig(**changes).validate()  # type: ignore[arg-type]


def _bundled_vectors() -> np.ndarray:
    """Realistic vectors: the bundled labelled responses and trace sample, hashing-embedded."""
    import json

    from memeval.backends.embedders.hashing import HashingEmbedder
    from memeval.paths import data_path

    texts = []
    for name in ("labeled/write_gate_v1.jsonl", "labeled/write_gate_heldout_v1.jsonl",
                 "traces/trace_sample_v1.jsonl"):
        with open(data_path(name), encoding="utf-8") as handle:
            texts += [row["assistant_response"] for row in map(json.loads, handle)
                      if row["assistant_response"].strip()]
    return HashingEmbedder(256).embed(texts)


def _edges(vectors: np.ndarray, **changes: float) -> set[tuple[str, str]]:
    g = MemoryGraph(GraphConfig(**changes))  # type: ignore[arg-type]
    for i, vector in enumerate(vectors):
        g.add(str(i), vector, 0.5, NOW)
    return {(a, b) for a, node in g.nodes.items() for b in node.edges}


def test_below_the_threshold_each_memory_links_to_its_exact_nearest_earlier_ones() -> None:
    vectors = _bundled_vectors()[:300]
    cfg = GraphConfig()
    expected = set()
    for i in range(1, len(vectors)):
        sims = vectors[:i] @ vectors[i]
        expected |= {(str(i), str(j)) for j in np.argsort(-sims)[: cfg.neighbours]
                     if sims[j] >= cfg.similarity_floor}
    expected |= {(b, a) for a, b in expected}
    assert len(vectors) < cfg.exact_below
    assert _edges(vectors) == expected and len(expected) > 500


def test_past_the_threshold_the_index_finds_the_exact_neighbours() -> None:
    pytest.importorskip("faiss")
    vectors = _bundled_vectors()
    # no similarity floor: every memory links to its 5 nearest earlier ones, found by HNSW
    # for all but the first 50 (measured: 99.9% of the 7,070 exact edges over 711 memories)
    exact = _edges(vectors, similarity_floor=-1.0)
    approximate = _edges(vectors, exact_below=50, similarity_floor=-1.0)
    assert len(vectors) > 700 and len(exact) > 7000
    assert len(exact & approximate) / len(exact) > 0.99
    assert len(approximate) == len(exact)


def test_without_faiss_the_search_stays_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    from memeval.quality import neighbours

    monkeypatch.setattr(neighbours, "faiss_module", lambda: None)
    vectors = _bundled_vectors()[:200]
    assert _edges(vectors, exact_below=20) == _edges(vectors)


def test_a_memory_is_added_once() -> None:
    g = graph()
    with pytest.raises(ValueError, match="already"):
        g.add("a", unit(1, 0, 0), 0.5, NOW)


def test_a_large_graph_ranks_over_a_sparse_matrix_as_over_a_dense_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from memeval.quality import graph as module

    g = MemoryGraph(GraphConfig())
    for i, vector in enumerate(_bundled_vectors()[:300]):
        g.add(str(i), vector, 0.5, NOW)
    g.record_retrieval(["0", "7", "42"], NOW)
    query = {str(i): 1.0 for i in range(0, 300, 7)}
    dense = g.rank(query)
    monkeypatch.setattr(module, "DENSE_UP_TO", 10)
    sparse = g.rank(query)
    assert dense.keys() == sparse.keys()
    assert np.allclose(list(dense.values()), list(sparse.values()), rtol=0, atol=1e-12)
