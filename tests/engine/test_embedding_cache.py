"""CachedEmbedder: content-addressed by (identity, text), order-preserving, shared on disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memeval.engine.embedders.cache import CachedEmbedder
from memeval.engine.embedders.hashing import HashingEmbedder
from tests.engine.fakes import CountingEmbedder


def test_second_call_hits_the_cache(tmp_path: Path) -> None:
    inner = CountingEmbedder(HashingEmbedder(32))
    cached = CachedEmbedder(inner, tmp_path / "emb.sqlite")
    first = cached.embed(["alpha", "beta"])
    second = cached.embed(["beta", "alpha"])
    assert len(inner.batches) == 1
    np.testing.assert_array_equal(second, first[::-1])
    np.testing.assert_array_equal(first, HashingEmbedder(32).embed(["alpha", "beta"]))
    assert (cached.misses, cached.hits) == (2, 2)


def test_only_missing_texts_reach_the_inner_embedder(tmp_path: Path) -> None:
    inner = CountingEmbedder(HashingEmbedder(32))
    cached = CachedEmbedder(inner, tmp_path / "emb.sqlite")
    cached.embed(["alpha"])
    cached.embed(["alpha", "gamma", "delta"])
    assert sorted(inner.batches[1]) == ["delta", "gamma"]


def test_order_preserved_with_duplicates_in_a_batch(tmp_path: Path) -> None:
    inner = CountingEmbedder(HashingEmbedder(32))
    cached = CachedEmbedder(inner, tmp_path / "emb.sqlite")
    texts = ["b", "a", "b", "c", "a"]
    out = cached.embed(texts)
    expected = HashingEmbedder(32).embed(texts)
    np.testing.assert_array_equal(out, expected)
    (batch,) = inner.batches
    assert sorted(batch) == ["a", "b", "c"]  # each distinct text embedded once
    np.testing.assert_array_equal(cached.embed(texts), expected)  # and from cache alike


def test_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    CachedEmbedder(HashingEmbedder(32), path).embed(["alpha"])
    inner = CountingEmbedder(HashingEmbedder(32))
    again = CachedEmbedder(inner, path)
    again.embed(["alpha"])
    assert inner.batches == [] and again.hits == 1


def test_identity_is_part_of_the_key(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    CachedEmbedder(CountingEmbedder(HashingEmbedder(32), identity="model-v1"), path).embed(["a"])
    inner = CountingEmbedder(HashingEmbedder(32), identity="model-v2")
    v2 = CachedEmbedder(inner, path)
    v2.embed(["a"])
    assert inner.batches == [["a"]]  # new weights: nothing reused
    assert v2.identity == "model-v2" and v2.dim == 32


def test_empty_batch(tmp_path: Path) -> None:
    inner = CountingEmbedder(HashingEmbedder(32))
    out = CachedEmbedder(inner, tmp_path / "emb.sqlite").embed([])
    assert out.shape == (0, 32) and out.dtype == np.float32
    assert inner.batches == []
