"""Hashing embedder: deterministic, unit-norm rows, identity carries the dimension."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.backends.embedders.base import EMBEDDERS, l2_normalise
from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.registry import ConfigError


def test_shape_dtype_and_unit_norm() -> None:
    vectors = HashingEmbedder(32).embed(["alpha beta", "gamma", "the same words again"])
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_deterministic_across_instances() -> None:
    text = ["Kafka consumer lag on settlement-writer"]
    np.testing.assert_array_equal(HashingEmbedder().embed(text), HashingEmbedder().embed(text))


def test_case_insensitive_and_punctuation_blind() -> None:
    e = HashingEmbedder()
    np.testing.assert_array_equal(e.embed(["Hello, World!"]), e.embed(["hello world"]))


def test_shared_words_mean_higher_cosine() -> None:
    a, b, c = HashingEmbedder(256).embed([
        "postgres index on orders customer_id speeds up the report",
        "add a postgres index on orders customer_id for the report",
        "happy to help, let me know if you need anything else",
    ])
    assert a @ b > 0.5 > a @ c


def test_empty_text_is_a_zero_row() -> None:
    vectors = HashingEmbedder(16).embed(["", "!!!"])
    np.testing.assert_array_equal(vectors, np.zeros((2, 16), dtype=np.float32))


def test_empty_batch() -> None:
    assert HashingEmbedder(16).embed([]).shape == (0, 16)


def test_identity_includes_dim() -> None:
    assert HashingEmbedder(64).identity != HashingEmbedder(128).identity


def test_l2_normalise_leaves_zero_rows() -> None:
    out = l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert out.dtype == np.float32


def test_registry_builds_and_validates() -> None:
    built = EMBEDDERS.build({"name": "hashing", "dim": 48})
    assert isinstance(built, HashingEmbedder) and built.dim == 48
    with pytest.raises(ConfigError, match=r"dim must be an integer in \[8, 65536\], got 4"):
        EMBEDDERS.validate({"name": "hashing", "dim": 4})
