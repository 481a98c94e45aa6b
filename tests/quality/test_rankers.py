"""BM25 and the ranking policies by hand, on stores small enough to check every number."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest
from omegaconf import OmegaConf

from memeval.quality.bm25 import BM25, tokens
from memeval.quality.rankers import RANKERS, Ranker, Search, Store, fused

NOW = datetime(2026, 1, 2, tzinfo=UTC)


def test_bm25_by_hand() -> None:
    texts = ["the pod restarts on OOM", "pods are scheduled", "OOM OOM kills the worker"]
    index = BM25(texts, k1=1.2, b=0.75)
    assert tokens("The maxReplicas of D1:3") == ["maxreplicas", "d1", "3"]  # stop word dropped
    lengths = [3, 2, 4]  # tokens after stop words ("the", "on", "are") are dropped
    mean = sum(lengths) / 3
    idf = math.log1p((3 - 2 + 0.5) / (2 + 0.5))  # "oom" is in two texts

    def weight(tf: int, length: int) -> float:
        return tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * length / mean))

    scores = index.scores("OOM")
    assert scores == pytest.approx([idf * weight(1, 3), 0.0, idf * weight(2, 4)])
    assert scores[2] > scores[0]  # a repeated word counts, saturating
    assert not index.scores("nothing shared").any()


def _search(cosine: list[float], lexical: list[float] | None = None,
            vector: list[float] | None = None, pool: list[int] | None = None) -> Search:
    ids = pool if pool is not None else list(range(len(cosine)))
    return Search(np.array(ids), np.array(cosine), np.array(lexical or [0.0] * len(cosine)),
                  np.array(vector or [1.0, 0.0]), NOW)


def _ranker(node: dict[str, object], size: int = 4) -> Ranker:
    vectors = np.eye(size, 2, dtype=np.float32)
    store = Store([f"m{i}" for i in range(size)], vectors, [0.5] * size, NOW)
    return RANKERS.build(OmegaConf.create(node), store=store)


def test_baselines_rank_by_their_own_score_and_return_store_indices() -> None:
    search = _search([0.1, 0.9, 0.5], [2.0, 0.0, 1.0], pool=[7, 3, 5])
    assert _ranker({"name": "cosine"}).rank(search, 2) == [3, 5]
    assert _ranker({"name": "bm25"}).rank(search, 3) == [7, 5, 3]
    # second by both beats first by one and last by the other
    both = _search([0.9, 0.8, 0.3, 0.1], [0.0, 1.5, 1.0, 2.0])
    hybrid = _ranker({"name": "hybrid", "fusion": "rank", "rrf_k": 60}).rank(both, 4)
    assert hybrid[0] == 1


def test_reciprocal_rank_and_score_fusion_by_hand() -> None:
    first, second = np.array([0.9, 0.1]), np.array([0.0, 3.0])
    assert fused(first, second, "rank", 0.5, 60) == pytest.approx(
        [0.5 / 61 + 0.5 / 62, 0.5 / 62 + 0.5 / 61])
    assert fused(first, second, "score", 0.25, 60) == pytest.approx([0.75, 0.25])


def test_a_graph_with_no_weight_ranks_as_cosine_and_learns_anyway() -> None:
    ranker = _ranker({"name": "sip0001", "weight": 0})
    search = _search([0.2, 0.8, 0.5, 0.1])
    assert ranker.rank(search, 3) == [1, 2, 0]
    ranker.learn(search, [1, 2, 0], {1: True, 2: False, 0: False})
    assert ranker.stats()["gini_recall"] > 0  # recalls were counted


def test_positive_only_feedback_never_weakens_an_edge() -> None:
    def edges_after(feedback: str) -> float:
        ranker = _ranker({"name": "sip0001", "feedback": feedback,
                          "graph": {"similarity_floor": -1.0, "neighbours": 3}})
        search = _search([0.9, 0.8, 0.1, 0.0])
        served = ranker.rank(search, 2)
        ranker.learn(search, served, {i: False for i in served})
        graph = next(iter(ranker.graphs.values()))  # type: ignore[attr-defined]
        return sum(e.weight for n in graph.nodes.values() for e in n.edges.values())

    assert edges_after("positive") > edges_after("all")


def test_query_feedback_lifts_a_memory_only_for_queries_like_the_one_it_answered() -> None:
    ranker = _ranker({"name": "query_feedback", "boost": 0.5, "similarity_floor": 0.5})
    asked = _search([0.3, 0.4, 0.0, 0.0], vector=[1.0, 0.0])
    ranker.learn(asked, [1, 0], {0: True, 1: False})
    alike = _search([0.3, 0.4, 0.0, 0.0], vector=[1.0, 0.0])
    unlike = _search([0.3, 0.4, 0.0, 0.0], vector=[0.0, 1.0])
    assert ranker.rank(alike, 1) == [0]  # 0.3 + 0.5 · 1 beats 0.4
    assert ranker.rank(unlike, 1) == [1]  # orthogonal to what memory 0 answered: no lift
    half = _search([0.3, 0.4, 0.0, 0.0], vector=[0.8, 0.6])  # cos 0.8: lift 0.5 · 0.6 = 0.3
    assert ranker.rank(half, 2) == [0, 1] and ranker.stats() == {"memories_lifted": 1}


def test_bad_policy_settings_are_refused_by_name() -> None:
    from memeval.registry import ConfigError

    with pytest.raises(ConfigError, match="fusion must be one of"):
        RANKERS.validate(OmegaConf.create({"name": "hybrid", "fusion": "max"}))
    with pytest.raises(ConfigError, match="feedback must be"):
        RANKERS.validate(OmegaConf.create({"name": "sip0001", "feedback": "negative"}))
    with pytest.raises(ConfigError, match="unknown ranker 'cosin'"):
        RANKERS.validate(OmegaConf.create({"name": "cosin"}))


def test_bm25_over_some_rows_scores_them_as_over_all() -> None:
    index = BM25(["make test runs pytest", "the database port is 5432", "pytest -q in CI",
                  "deploy from the release branch"])
    rows = np.array([2, 0, 3])
    assert np.array_equal(index.scores("run pytest", rows), index.scores("run pytest")[rows])
    assert index.scores("nothing shared", rows).tolist() == [0.0, 0.0, 0.0]
