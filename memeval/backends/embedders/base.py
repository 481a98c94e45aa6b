"""The embedder contract and its registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from memeval.registry import Registry


class EmbeddingError(RuntimeError):
    """The embedder could not produce vectors (server down, model missing…)."""


class Embedder(Protocol):
    """Maps texts to L2-normalised float32 rows (a zero row for a text with nothing to embed).

    `identity` keys the embedding cache: it must change whenever the weights do."""

    identity: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class LoadedWidth:
    """An embedder whose vectors' width is known only once its model is loaded (any model but
    the bundled MiniLM, whose 384 is set at start): `_dim` stays 0 until `_load` sets it. A
    store sized before anything is embedded (every text found in a warm cache) asks `dim`
    first, so asking loads the model."""

    _dim: int

    def _load(self) -> Any:
        raise NotImplementedError

    @property
    def dim(self) -> int:
        if not self._dim:
            self._load()
        return self._dim


def embed_available(embedder: Embedder, texts: Sequence[str]) -> list[np.ndarray | None]:
    """A vector per text where one can be had now, None where embedding failed.

    The batch at once, and only when that fails text by text: behind the cache, texts embedded
    before a server fell over still come back, and a server known to be down fails each of the
    others at once (see the HTTP embedder's `down_for_s`) instead of retrying each.
    """
    try:
        return list(embedder.embed(texts))
    except EmbeddingError:
        vectors: list[np.ndarray | None] = []
        for text in texts:
            try:
                vectors.append(embedder.embed([text])[0])
            except EmbeddingError:
                vectors.append(None)
        return vectors


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


UNIT_TOLERANCE = 1e-3  # float32 rounding leaves a normalised row within ~1e-6 of norm 1


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Per row: finite with L2 norm 1 (within UNIT_TOLERANCE), as every embedder's rows are
    (all end in `l2_normalise`), except the zero row of a text with nothing to embed."""
    with np.errstate(over="ignore", invalid="ignore"):  # huge values: an inf norm, reported
        norms = np.linalg.norm(vectors, axis=1)
    return np.asarray(np.isfinite(norms) & (np.abs(norms - 1.0) <= UNIT_TOLERANCE))


EMBEDDERS: Registry[Embedder] = Registry("embedder")
