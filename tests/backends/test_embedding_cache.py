"""CachedEmbedder: content-addressed by (identity, text), order-preserving, shared on disk."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from memeval.backends.embedders.cache import CachedEmbedder
from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.utils.kvcache import content_key
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


# --- values damaged inside the file: a scribbled vector is a miss, never a crash ---


def _scribble(path: Path, old: bytes, new: bytes) -> None:
    """Overwrite one stored value in place, as stray bytes would: the page stays well formed."""
    data = path.read_bytes()
    assert data.count(old) == 1 and len(new) == len(old)
    path.write_bytes(data.replace(old, new))


def _cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "memeval.backends.embedders.cache" and r.levelno == logging.WARNING]


@pytest.mark.faults
def test_scribbled_vectors_are_recomputed_overwritten_counted_and_warned_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "emb.sqlite"
    texts = [f"text {hashlib.sha256(bytes([i])).hexdigest()}" for i in range(200)]  # distinct
    filling = CachedEmbedder(HashingEmbedder(32), path)
    expected = filling.embed(texts)
    filling.store.close()
    nan, huge = np.full(32, np.nan, np.float32), np.full(32, 1e30, np.float32)
    half = expected[7] * 0.5  # finite, right size, but not a vector the embedder returns
    for row, garbage in ((3, nan), (7, half), (11, huge)):
        _scribble(path, expected[row].tobytes(), garbage.tobytes())
    with closing(sqlite3.connect(path)) as conn:  # beyond what SQLite can detect
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)

    inner = CountingEmbedder(HashingEmbedder(32))
    cached = CachedEmbedder(inner, path)
    assert cached.store.recovered is None
    out = cached.embed(texts)
    np.testing.assert_array_equal(out, expected)
    assert [sorted(batch) for batch in inner.batches] == [sorted(texts[i] for i in (3, 7, 11))]
    assert cached.invalid == cached.misses == 3
    cached.embed(texts[:20])  # the same damage is not met again: it was overwritten
    (warning,) = _cache_warnings(caplog)
    assert str(path) in warning and "3 stored vector(s)" in warning
    cached.store.close()

    again = CachedEmbedder(CountingEmbedder(HashingEmbedder(32)), path)
    np.testing.assert_array_equal(again.embed(texts), expected)
    assert again.invalid == 0 and again.hits == len(texts)


@pytest.mark.faults
def test_a_stored_value_of_the_wrong_width_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    cached = CachedEmbedder(HashingEmbedder(32), path)
    expected = cached.embed(["alpha", "beta"])
    unit16 = np.zeros(16, np.float32)
    unit16[0] = 1.0  # finite and of unit length, but 16 wide for a 32-wide model
    cached.store.put(content_key(cached.identity, "beta"), unit16.tobytes())
    again = CachedEmbedder(CountingEmbedder(HashingEmbedder(32)), path)
    np.testing.assert_array_equal(again.embed(["alpha", "beta"]), expected)
    assert again.invalid == 1 and again.hits == 1


@pytest.mark.faults
def test_without_a_known_width_the_usual_stored_width_is_used(tmp_path: Path) -> None:
    """An HTTP embedder learns its width from its first reply, after the first lookup."""
    path = tmp_path / "emb.sqlite"
    texts = ["alpha", "beta", "gamma"]
    filling = CachedEmbedder(HashingEmbedder(32), path)
    expected = filling.embed(texts)
    unit16 = np.zeros(16, np.float32)
    unit16[0] = 1.0  # a unit vector, but 16 wide among 32-wide ones
    filling.store.put(content_key(filling.identity, "gamma"), unit16.tobytes())

    class WidthUnknown(CountingEmbedder):
        @property
        def dim(self) -> int:
            return 0 if not self.batches else 32

    inner = WidthUnknown(HashingEmbedder(32))
    cached = CachedEmbedder(inner, path)
    np.testing.assert_array_equal(cached.embed(texts), expected)
    assert inner.batches == [["gamma"]] and cached.invalid == 1


def test_a_zero_row_is_returned_but_not_stored(tmp_path: Path) -> None:
    """A text with nothing to embed: stored, it could not be told from zero-filled damage."""
    inner = CountingEmbedder(HashingEmbedder(32))
    cached = CachedEmbedder(inner, tmp_path / "emb.sqlite")
    out = cached.embed(["!!!", "alpha"])
    assert not out[0].any() and np.linalg.norm(out[1]) == pytest.approx(1.0)
    assert len(cached.store) == 1
    np.testing.assert_array_equal(cached.embed(["!!!"]), out[:1])
    assert cached.invalid == 0
