"""The embedder contract and its registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from memeval.registry import Registry


class EmbeddingError(RuntimeError):
    """The embedder could not produce vectors (server down, model missing…)."""


class Embedder(Protocol):
    """Maps texts to L2-normalised float32 rows.

    `identity` keys the embedding cache: it must change whenever the weights do."""

    identity: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


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


EMBEDDERS: Registry[Embedder] = Registry("embedder")
