"""Nearest earlier vectors for a graph that grows one memory at a time, at near-linear cost.

Vectors live in one preallocated matrix that doubles when full, so an add copies one row, not
every earlier vector. Up to `exact_below` vectors a search scores them all (exactly what the
graph always did); past it, an HNSW index (faiss, inner product) answers in about log n, built
once from the matrix and then grown vector by vector. Without faiss installed the search stays
exact: the same answers, at O(n) per add.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np


@cache
def faiss_module() -> Any | None:
    """faiss, when installed (`pip install memeval[ann]`); None otherwise. Looked for once: a
    graph without it asks on every add past the threshold."""
    try:
        import faiss  # an optional dependency, loaded only past the exact threshold
    except ImportError:
        return None
    return faiss


def hnsw(vectors: np.ndarray, links: int, search: int) -> Any | None:
    """An HNSW index (inner product) of `vectors`; None without faiss."""
    faiss = faiss_module()
    if faiss is None:
        return None
    index = faiss.IndexHNSWFlat(vectors.shape[1], links, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efSearch = search
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def approximate_earlier(vectors: np.ndarray, start: int, k: int, links: int = 32,
                        search: int = 64) -> Iterator[list[tuple[int, float]]] | None:
    """For each row from `start` on, its `k` nearest EARLIER rows by HNSW as (row, inner
    product), most similar first; None without faiss (the caller stays exact)."""
    index = hnsw(vectors[:start], links, search)
    if index is None:
        return None

    def rows() -> Iterator[list[tuple[int, float]]]:
        for row in range(start, len(vectors)):
            query = np.ascontiguousarray(vectors[row : row + 1], dtype=np.float32)
            found, ids = index.search(query, min(k, row))
            yield [(int(i), float(f)) for i, f in zip(ids[0], found[0], strict=True) if i >= 0]
            index.add(query)

    return rows()


class NeighbourIndex:
    def __init__(self, exact_below: int, links: int, search: int) -> None:
        self.exact_below, self.links, self.search = exact_below, links, search
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.size = 0
        self.hnsw: Any | None = None

    def add(self, vector: np.ndarray) -> None:
        row = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self.size == len(self.matrix):
            grown = np.zeros((max(16, 2 * self.size), row.size), dtype=np.float32)
            if self.size:
                grown[: self.size] = self.matrix[: self.size]
            self.matrix = grown
        self.matrix[self.size] = row
        self.size += 1
        if self.hnsw is not None:
            self.hnsw.add(row[None, :])
        elif self.size > self.exact_below:
            self.hnsw = hnsw(self.matrix[: self.size], self.links, self.search)

    def nearest(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Up to `k` (row, inner product) pairs, most similar first."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self.hnsw is None:
            sims = self.matrix[: self.size] @ query
            return [(int(i), float(sims[i])) for i in np.argsort(-sims)[:k]]
        found, rows = self.hnsw.search(query[None, :], min(k, self.size))
        return [(int(r), float(s)) for r, s in zip(rows[0], found[0], strict=True) if r >= 0]
