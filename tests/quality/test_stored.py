"""Records for stored memories: memledger's conflict-on-add rule, hedging, gate confidence."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.engine.store.memory_store import StoredMemory
from memeval.quality.stored import (
    StoredMQSConfig,
    earlier_conflicts,
    nearest_earlier,
    records_from_store,
)


def unit(*rows: list[float]) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def test_a_conflict_points_to_the_nearest_earlier_memory_only() -> None:
    vectors = unit([1, 0, 0], [0, 1, 0], [1, 0.1, 0], [0.1, 1, 0], [0, 0, 1])
    assert earlier_conflicts(vectors, 0.65) == [None, None, 0, 1, None]


def test_the_threshold_is_strict_and_later_memories_do_not_count() -> None:
    vectors = unit([1, 0], [0.65, np.sqrt(1 - 0.65**2)])
    similarity = float(vectors[0] @ vectors[1])
    assert earlier_conflicts(vectors, similarity) == [None, None]
    assert earlier_conflicts(vectors, similarity - 1e-4) == [None, 0]
    assert earlier_conflicts(vectors[::-1].copy(), similarity - 1e-4) == [None, 0]


def test_chunking_does_not_change_the_result() -> None:
    vectors = unit(*np.random.default_rng(0).normal(size=(40, 3)).tolist())
    assert earlier_conflicts(vectors, 0.6, chunk=7) == earlier_conflicts(vectors, 0.6)


def test_unembedded_memories_conflict_with_nothing() -> None:
    vectors = unit([1, 0], [0, 0], [0, 0])
    assert earlier_conflicts(vectors, 0.65) == [None, None, None]
    assert earlier_conflicts(vectors[:0], 0.65) == []


def test_records_carry_confidence_conflicts_and_hedging() -> None:
    memories = [StoredMemory("m1-0", "The build uses uv and ruff for linting.", "e1", 1),
                StoredMemory("m1-1", "Maybe the build might use uv, I think.", "e2", 1)]
    records = records_from_store(memories, unit([1, 0], [1, 0.2]), [0.9, None],
                                 StoredMQSConfig())
    assert [r.id for r in records] == ["m1-0", "m1-1"]
    assert [r.confidence for r in records] == [0.9, None]  # None: MQS counts it as missing
    assert [r.conflicts for r in records] == [[], ["m1-0"]]
    assert [r.hedged for r in records] == [False, True]
    assert all(r.derived_from == [] and r.access_count == 0 for r in records)


@pytest.mark.parametrize("value", [-1.5, 1.01])
def test_conflict_similarity_is_a_cosine(value: float) -> None:
    with pytest.raises(ValueError, match="cosine"):
        StoredMQSConfig(conflict_similarity=value).validate()


def test_candidates_are_the_k_nearest_earlier_memories_above_the_floor() -> None:
    vectors = unit([1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [1, 0.05, 0], [0, 0, 1])
    found = nearest_earlier(vectors, 2, 0.5)
    assert [[i for i, _ in row] for row in found] == [[], [0], [], [0, 1], []]
    for row_no, row in enumerate(found):  # each cosine is the pair's own, most similar first
        assert [c for _, c in row] == pytest.approx([float(vectors[row_no] @ vectors[i])
                                                     for i, _ in row])
        assert [c for _, c in row] == sorted((c for _, c in row), reverse=True)
    assert [[i for i, _ in row] for row in nearest_earlier(vectors, 1, 0.5)] == \
        [[], [0], [], [0], []]


def test_the_floor_is_strict_and_chunking_does_not_change_the_candidates() -> None:
    vectors = unit([1, 0], [0.65, np.sqrt(1 - 0.65**2)])
    cosine = float(vectors[0] @ vectors[1])
    assert nearest_earlier(vectors, 3, cosine) == [[], []]
    assert [[i for i, _ in row] for row in nearest_earlier(vectors, 3, cosine - 1e-4)] == [[], [0]]
    many = unit(*np.random.default_rng(1).normal(size=(40, 4)).tolist())
    assert nearest_earlier(many, 3, 0.2, chunk=7) == nearest_earlier(many, 3, 0.2)
    assert nearest_earlier(many[:0], 3, 0.2) == []


def test_past_the_exact_rows_an_index_finds_the_same_earlier_neighbours(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("faiss")
    from memeval.quality import stored
    from tests.quality.test_graph import _bundled_vectors

    vectors = _bundled_vectors()
    exact = nearest_earlier(vectors, 5, -1.0)
    conflicts = earlier_conflicts(vectors, 0.3)
    monkeypatch.setattr(stored, "EXACT_BELOW", 50)
    approximate = nearest_earlier(vectors, 5, -1.0)
    assert approximate[:50] == exact[:50]  # the first rows are compared exactly
    pairs = {(row, i) for row, found in enumerate(exact) for i, _ in found}
    found = {(row, i) for row, found in enumerate(approximate) for i, _ in found}
    assert len(pairs) > 3000 and len(pairs & found) / len(pairs) > 0.99
    same = sum(a == b for a, b in zip(earlier_conflicts(vectors, 0.3), conflicts, strict=True))
    assert same / len(vectors) > 0.99
