"""MemoryStore: top-1 cosine, growth past its initial 64 rows, wipe; similarity scales."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.engine.store.memory_store import MemoryStore, StoredMemory, to_cosine


def random_units(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def memory(i: int) -> StoredMemory:
    return StoredMemory(f"m{i}", f"text {i}", f"e{i}", 1)


def test_empty_store_has_no_neighbour() -> None:
    assert MemoryStore(8).top1(np.ones(8, dtype=np.float32)) == (-1, float("-inf"))


def test_top1_returns_index_and_raw_cosine() -> None:
    store = MemoryStore(3)
    store.add(memory(0), np.array([1, 0, 0], dtype=np.float32))
    store.add(memory(1), np.array([0, 1, 0], dtype=np.float32))
    query = np.array([0.6, 0.8, 0], dtype=np.float32)
    index, sim = store.top1(query)
    assert index == 1
    assert sim == pytest.approx(0.8)
    assert store.top1(-query)[1] == pytest.approx(-0.6)  # negative cosines are not clipped


def test_grows_past_initial_capacity() -> None:
    vectors = random_units(150, 16)
    store = MemoryStore(16)
    for i, v in enumerate(vectors):
        store.add(memory(i), v)
    assert len(store) == 150
    assert store.vectors.shape == (150, 16)
    np.testing.assert_array_equal(store.vectors, vectors)
    for i in (0, 63, 64, 127, 128, 149):
        index, sim = store.top1(vectors[i])
        assert index == i
        assert sim == pytest.approx(1.0, abs=1e-5)


def test_wipe_forgets_memories_and_old_vectors() -> None:
    vectors = random_units(3, 8)
    store = MemoryStore(8)
    for i, v in enumerate(vectors):
        store.add(memory(i), v)
    store.wipe()
    assert len(store) == 0
    assert store.top1(vectors[2]) == (-1, float("-inf"))
    store.add(memory(9), vectors[0])
    index, sim = store.top1(vectors[2])  # the wiped row 2 must not be found again
    assert index == 0
    assert sim == pytest.approx(float(vectors[0] @ vectors[2]), abs=1e-6)
    assert store.memories == [memory(9)]


def test_to_cosine() -> None:
    assert to_cosine(0.92, "cosine") == 0.92
    assert to_cosine(0.92, "atlas") == pytest.approx(0.84)
    assert to_cosine(0.5, "atlas") == pytest.approx(0.0)
    with pytest.raises(ValueError, match="unknown similarity scale"):
        to_cosine(0.9, "dot")
