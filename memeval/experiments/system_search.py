"""A memory corpus searched through a system under test: its memories go in through the
system's `index`, its queries through the system's `search`.

Each query searches its own pool (a LoCoMo conversation, a LongMemEval haystack, the memories
written by the time it was asked), so the system is given one pool at a time and asked every
query of that pool before the next: a pool is indexed once, not once per query. An answer naming
a memory the system was not given, or a score that is not a finite number, is outside the
protocol and fails the run at the boundary, naming it.

Indexing a pool into a system can be its slowest work (an LLM extracting memories), so each
pool's rows are checkpointed as it finishes (experiments/checkpoint.py): a resumed run indexes
and asks only the pools an interrupted one left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

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


P = TypeVar("P", bound=Pooled)


def _by_pool(asks: Sequence[P]) -> list[tuple[tuple[int, ...], list[P]]]:
    """The asks grouped by the pool they search, pools in the order first met."""
    pools: dict[tuple[int, ...], list[P]] = {}
    for ask in asks:
        pools.setdefault(tuple(ask.pool.tolist()), []).append(ask)
    return list(pools.items())


def search_corpus(ctx: RunContext, system: System, asks: Sequence[P],
                  memories: Sequence[CorpusMemory], k: int, experiment: str,
                  row: Callable[[P, Found], dict[str, Any]]) -> list[dict[str, Any]]:
    """Each query's top `k` by the system made a row by `row`, pool by pool (each pool a
    checkpointed step, `pool-N`), with a progress bar over queries."""
    require(system, [Capability.SEARCH], experiment)
    rows: list[dict[str, Any]] = []
    with ctx.bar(len(asks), f"{system.name} search", unit="query") as bar:
        for n, (pool, group) in enumerate(_by_pool(asks), 1):
            rows += ctx.checkpoints.run_step(
                f"pool-{n}", partial(_searched, system, pool, group, memories, k, row))
            bar.update(len(group))
    return rows


def _searched(system: System, pool: tuple[int, ...], asks: Sequence[P],
              memories: Sequence[CorpusMemory], k: int,
              row: Callable[[P, Found], dict[str, Any]]) -> list[dict[str, Any]]:
    """One pool indexed into the system, then each of its queries asked."""
    known = {memories[i].id: i for i in pool}
    system.index([IndexedMemory(memories[i].id, memories[i].text) for i in pool])
    rows = []
    for ask in asks:
        started = time.perf_counter()
        hits = system.search(ask.text, k)  # checked at the boundary (systems/answers.py)
        elapsed = (time.perf_counter() - started) * 1000.0
        rows.append(row(ask, Found([known[h.id] for h in hits], [h.score for h in hits],
                                   elapsed)))
    return rows
