"""Provenance through `derived_from`: the ancestors a record rests on, and its weakest link.

A conclusion is no more trustworthy than the least trustworthy record it was derived from, so
the effective confidence is min(declared, every ancestor within `max_hops`). Missing ancestors
(deleted, or outside the ledger) are skipped and reported; cycles are walked once; a chain that
goes on past `max_hops` is reported as truncated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol


class Derived(Protocol):
    """Anything with an id, a declared confidence and parents (records, MAI memories)."""

    @property
    def id(self) -> str: ...

    @property
    def confidence(self) -> float | None: ...

    @property
    def derived_from(self) -> list[str]: ...


@dataclass(frozen=True)
class Lineage:
    ancestors: tuple[str, ...] = ()  # reachable within max_hops, nearest first
    missing: tuple[str, ...] = ()  # referenced but not in the ledger
    truncated: bool = False  # parents exist beyond max_hops
    weakest: str | None = None  # the ancestor with the lowest confidence (first found on ties)
    weakest_confidence: float | None = None


def trace(start: Iterable[str], ledger: Mapping[str, Derived], max_hops: int,
          confidence_of: Callable[[Derived], float]) -> Lineage:
    """Breadth-first over `derived_from` from the ids in `start` (hop 1 = their parents); each
    id is visited once, so cycles end and a shared ancestor counts once."""
    start = list(start)
    visited = set(start)
    frontier = [pid for sid in start if sid in ledger for pid in ledger[sid].derived_from]
    ancestors: list[str] = []
    missing: list[str] = []
    weakest: tuple[float, str] | None = None
    for _hop in range(max_hops):
        following: list[str] = []
        for pid in frontier:
            if pid in visited:
                continue
            visited.add(pid)
            parent = ledger.get(pid)
            if parent is None:
                missing.append(pid)
                continue
            ancestors.append(pid)
            value = confidence_of(parent)
            if weakest is None or value < weakest[0]:
                weakest = (value, pid)
            following.extend(parent.derived_from)
        frontier = following
    truncated = any(pid not in visited for pid in frontier)
    return Lineage(tuple(ancestors), tuple(missing), truncated,
                   weakest[1] if weakest else None, weakest[0] if weakest else None)
