"""Memory records for what a write gate stored, so MQS can score replayed memories.

A replay gives each stored memory: a confidence from the gate (the content scorer's write-time
score on its own confidence scale; None while the scorer was not active yet, which MQS counts as
missing), a hedging flag read from the text, and memledger's conflict rule: on add, the top-1
memory stored before it in the same namespace, at cosine above `conflict_similarity`, becomes one
conflict reference. A replay has no lineage, so no `derived_from`; access and outcome counts are
zero until a retrieval replay supplies them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from memeval.quality.hedging import HedgeDetector, HedgingConfig
from memeval.quality.mqs import MQSConstants
from memeval.quality.neighbours import approximate_earlier
from memeval.quality.policy import ConfidencePolicy
from memeval.quality.record import MemoryRecord
from memeval.registry import bounded


class StoredText(Protocol):
    """What a stored memory offers here (the write gate's `Memory` has it), so the quality engine
    needs nothing from the engine that stored it."""

    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...


@dataclass
class StoredMQSConfig:
    conflict_similarity: float = bounded(0.65, -1, 1)
    hedging: HedgingConfig = field(default_factory=HedgingConfig)
    mqs: MQSConstants = field(default_factory=MQSConstants)
    policy: ConfidencePolicy = field(default_factory=ConfidencePolicy)

    def validate(self) -> None:
        if not -1.0 <= self.conflict_similarity <= 1.0:
            raise ValueError("conflict_similarity is a cosine: it must be in [-1, 1]")
        self.hedging.validate()
        self.mqs.validate()
        self.policy.validate()


EXACT_BELOW = 4096  # memories compared with every earlier one; past it, an HNSW index searched


def _earlier_similarities(vectors: np.ndarray, chunk: int) -> Iterator[np.ndarray]:
    """Each row's cosine to every row, EARLIER rows only (later ones and itself -inf), in row
    chunks so memory stays O(n·chunk): what a memory is checked against on add."""
    for start in range(0, len(vectors), chunk):
        stop = min(start + chunk, len(vectors))
        sims = vectors[start:stop] @ vectors[:stop].T
        rows = np.arange(stop - start)
        sims[np.arange(stop)[None, :] >= (start + rows)[:, None]] = -np.inf
        yield sims


def earlier_conflicts(vectors: np.ndarray, similarity: float,
                      chunk: int = 1024) -> list[int | None]:
    """For each row, the most similar EARLIER row when its cosine exceeds `similarity` (memledger
    checks on add, against what is already stored)."""
    return [found[0][0] if found else None
            for found in nearest_earlier(vectors, 1, similarity, chunk)]


def nearest_earlier(vectors: np.ndarray, neighbours: int, floor: float,
                    chunk: int = 1024) -> list[list[tuple[int, float]]]:
    """For each row, up to `neighbours` EARLIER rows whose cosine exceeds `floor`, most similar
    first, with that cosine: the candidate pairs a pair detector is asked about (a memory is
    checked against what was stored before it, as memledger does on add). The first
    EXACT_BELOW rows are compared with every earlier row; later ones search an HNSW index of
    the rows before them (quality/neighbours.py), so n memories cost about n log n, not n²."""
    exact = min(len(vectors), EXACT_BELOW)
    approximate = approximate_earlier(vectors, exact, neighbours) \
        if exact < len(vectors) else None
    if approximate is None:  # without faiss: every row exactly
        exact = len(vectors)
    found: list[list[tuple[int, float]]] = []
    for sims in _earlier_similarities(vectors[:exact], chunk):
        nearest = np.argsort(-sims, axis=1, kind="stable")[:, :neighbours]
        found += [[(int(c), float(sims[row, c])) for c in nearest[row] if sims[row, c] > floor]
                  for row in range(len(sims))]
    for pairs in approximate or ():
        found.append([(row, sim) for row, sim in pairs if sim > floor])
    return found


def records_from_store(memories: Sequence[StoredText], vectors: np.ndarray,
                       confidences: Sequence[float | None],
                       cfg: StoredMQSConfig) -> list[MemoryRecord]:
    hedged = HedgeDetector(cfg.hedging)
    conflicts = earlier_conflicts(vectors, cfg.conflict_similarity)
    return [MemoryRecord(id=memory.id, content=memory.text, confidence=confidence,
                         conflicts=[] if other is None else [memories[other].id],
                         hedged=hedged(memory.text), created_by="write-gate")
            for memory, confidence, other in zip(memories, confidences, conflicts, strict=True)]
