"""A stand-in memory system for the seam's tests: a one-rule gate with nothing learned."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.quality.record import MemoryRecord
from memeval.systems.base import SYSTEMS, Capability, Hit, IndexedMemory, Ingestor


class KeepAll:
    """Stores every turn of 80 characters or more: a gate with one rule and nothing learned."""

    learning = True
    stores: tuple[()] = ()
    dropped = "length"  # the outcome of a turn it does not keep

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.memories: list[str] = []

    def prepare(self, entries: Sequence[Entry]) -> list[Entry]:
        return list(entries)

    def restart(self, wipe_memories: bool = True) -> None:
        if wipe_memories:
            self.memories = []

    def run_pass(self, items: Sequence[Entry], pass_no: int, phase: str = "eval"
                 ) -> Iterator[Decision]:
        for entry in items:
            kept = len(entry.assistant_response.strip()) >= 80
            if kept:
                self.memories.append(entry.id)
            yield Decision(pass_no, phase, entry.id, entry.label, entry.label_source,
                           len(entry.assistant_response), "stored" if kept else self.dropped,
                           kept)

    def learning_state(self) -> dict[str, Any]:
        return {}

    def restore_learning_state(self, state: dict[str, Any]) -> None:
        pass

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        return {"memories": len(self.memories)}


@dataclass
class KeepAllConfig:
    pass


class KeepAllSystem:
    name = "keep-all"
    capabilities = frozenset({Capability.INGEST, Capability.RESET})

    def __init__(self) -> None:
        self.notes: dict[str, Any] = {}

    def ingestor(self, state_dir: Path) -> Ingestor:
        return KeepAll(state_dir)

    def close(self) -> None:
        pass


if "keep-all" not in SYSTEMS.names():
    SYSTEMS.register("keep-all", KeepAllConfig)(lambda cfg, **_: KeepAllSystem())


def _words(text: str) -> set[str]:
    return set(text.lower().split())


class WordOverlapSystem:
    """Trust from declared confidence alone, a conflict wherever two memories share most of
    their words, search by word overlap: simple, deterministic, and unlike the reference."""

    name = "word-overlap"
    capabilities = frozenset({Capability.SCORE, Capability.CONFLICTS, Capability.SEARCH})

    def __init__(self) -> None:
        self.notes: dict[str, Any] = {"search": "word overlap"}
        self.memories: list[IndexedMemory] = []

    def score_records(self, records: Sequence[MemoryRecord]) -> list[float]:
        return [50.0 if r.confidence is None else 100.0 * r.confidence for r in records]

    def detect_conflict(self, first: str, second: str) -> str | None:
        a, b = _words(first), _words(second)
        return "conflict" if len(a & b) / max(len(a | b), 1) > 0.5 else None

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        self.memories = list(memories)

    def search(self, query: str, k: int) -> list[Hit]:
        words = _words(query)
        scored = sorted(((len(words & _words(m.text)), m.id) for m in self.memories),
                        key=lambda pair: (-pair[0], pair[1]))
        return [Hit(memory_id, float(score)) for score, memory_id in scored[:k]]

    def close(self) -> None:
        pass


if "word-overlap" not in SYSTEMS.names():
    SYSTEMS.register("word-overlap", KeepAllConfig)(lambda cfg, **_: WordOverlapSystem())


class DropsOutsideTheProtocol(KeepAll):
    dropped = "dropped"  # not one of memeval's outcomes


class OutsideTheProtocol(KeepAllSystem, WordOverlapSystem):
    """Answers outside the protocol: an unknown outcome and an unknown conflict type."""

    name = "outside-protocol"
    capabilities = frozenset({Capability.INGEST, Capability.RESET, Capability.CONFLICTS})

    def ingestor(self, state_dir: Path) -> Ingestor:
        return DropsOutsideTheProtocol(state_dir)

    def detect_conflict(self, first: str, second: str) -> str | None:
        return "contradicts" if WordOverlapSystem.detect_conflict(self, first, second) else None


if "outside-protocol" not in SYSTEMS.names():
    SYSTEMS.register("outside-protocol", KeepAllConfig)(lambda cfg, **_: OutsideTheProtocol())


class SearchGoesAway(WordOverlapSystem):
    """Trust and conflicts as word-overlap's; its search fails, as a daemon that went away."""

    name = "search-goes-away"

    def search(self, query: str, k: int) -> list[Hit]:
        from memeval.metrics.gate_metrics import SystemFailure

        raise SystemFailure("search in the daemon failed: ConnectError (the daemon went away)")


if "search-goes-away" not in SYSTEMS.names():
    SYSTEMS.register("search-goes-away", KeepAllConfig)(lambda cfg, **_: SearchGoesAway())
