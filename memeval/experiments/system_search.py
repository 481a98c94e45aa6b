"""A memory corpus searched through a system under test: its memories go in through the
system's `index`, its queries through the system's `search`.

Each query searches its own pool (a LoCoMo conversation, a LongMemEval haystack, the memories
written by the time it was asked), so the system is given one pool at a time and asked every
query of that pool before the next: a pool is indexed once, not once per query. An answer naming
a memory the system was not given, or a score that is not a finite number, is outside the
protocol and fails the run at the boundary, naming it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from memeval.data.base import CorpusMemory
from memeval.experiments.base import RunContext
from memeval.systems.base import Capability, IndexedMemory, System, require


class Pooled(Protocol):
    """A query and the memories (workload indices) it searches."""

    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def pool(self) -> np.ndarray: ...


@dataclass(frozen=True)
class Found:
    """One query's answer: the memories served (workload indices, best first), their scores
    as the system gave them, and how long the search took."""

    served: list[int]
    scores: list[float]
    search_ms: float


def search_corpus(ctx: RunContext, system: System, asks: Sequence[Pooled],
                  memories: Sequence[CorpusMemory], k: int, experiment: str
                  ) -> dict[str, Found]:
    """Each query's top `k` by the system, pool by pool, with a progress bar over queries."""
    require(system, [Capability.SEARCH], experiment)
    pools: dict[tuple[int, ...], list[Pooled]] = {}
    for ask in asks:
        pools.setdefault(tuple(ask.pool.tolist()), []).append(ask)
    ordered = [(pool, ask) for pool, group in pools.items() for ask in group]
    found: dict[str, Found] = {}
    indexed: tuple[int, ...] | None = None
    known: dict[str, int] = {}
    for pool, ask in ctx.progress(ordered, len(ordered), f"{system.name} search", unit="query"):
        if pool != indexed:
            known = {memories[i].id: i for i in pool}
            system.index([IndexedMemory(memories[i].id, memories[i].text) for i in pool])
            indexed = pool
        started = time.perf_counter()
        hits = system.search(ask.text, k)  # checked at the boundary (systems/answers.py)
        elapsed = (time.perf_counter() - started) * 1000.0
        found[ask.id] = Found([known[h.id] for h in hits], [h.score for h in hits], elapsed)
    return found
