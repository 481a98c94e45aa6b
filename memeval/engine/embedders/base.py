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


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


EMBEDDERS: Registry[Embedder] = Registry("embedder")
