"""In-memory vector store for accepted memories, with top-1 cosine dedup.

The dedup threshold states its scale: `cosine` is raw cosine; `atlas` is MongoDB Atlas's
(1 + cos) / 2 score, where memoryd's 0.92 corresponds to a raw cosine of 0.84.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SCALES = ("cosine", "atlas")


def to_cosine(threshold: float, scale: str) -> float:
    if scale == "cosine":
        return threshold
    if scale == "atlas":
        return 2.0 * threshold - 1.0
    raise ValueError(f"unknown similarity scale '{scale}' (expected one of {SCALES})")


@dataclass(frozen=True)
class StoredMemory:
    """A memory the write gate stored, with the entry and pass that stored it."""

    id: str
    text: str
    source_id: str
    pass_no: int


class MemoryStore:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.memories: list[StoredMemory] = []
        self._matrix = np.zeros((64, dim), dtype=np.float32)

    def top1(self, vector: np.ndarray) -> tuple[int, float]:
        """Index and raw cosine of the nearest stored memory; (-1, -inf) when empty."""
        if not self.memories:
            return -1, float("-inf")
        sims = self._matrix[: len(self.memories)] @ vector
        best = int(np.argmax(sims))
        return best, float(sims[best])

    def add(self, memory: StoredMemory, vector: np.ndarray) -> None:
        """Amortised O(1): the matrix doubles when full instead of re-stacking every vector."""
        if len(self.memories) == len(self._matrix):
            self._matrix = np.concatenate([self._matrix, np.zeros_like(self._matrix)])
        self._matrix[len(self.memories)] = vector
        self.memories.append(memory)

    @property
    def vectors(self) -> np.ndarray:
        return self._matrix[: len(self.memories)]

    def wipe(self) -> None:
        self.memories.clear()

    def __len__(self) -> int:
        return len(self.memories)
