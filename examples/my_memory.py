"""A memory system for memeval in one file, to copy and fill in (docs/protocol.md).

From the folder holding this file, with no packaging:

    python -m memeval check system=my_memory:build embedder=hashing
    python -m memeval run +experiment=three_pass system=my_memory:build
    python -m memeval run +experiment=memory_qa system=my_memory:build \
        dataset=locomo dataset.path=locomo10.json

or from Python: `memeval.api.evaluate("three_pass", system=build())`.

Replace the bodies with calls into your system. Declare only the capabilities you implement:
memeval refuses, by name, an experiment that needs one you did not declare.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.quality.record import MemoryRecord
from memeval.systems.base import Capability, Hit, IndexedMemory, KeepsItsOwnState


def _words(text: str) -> set[str]:
    return {w.strip(".,!?:;()\"'").lower() for w in text.split()} - {""}


class MyIngestor(KeepsItsOwnState):
    """Capabilities ingest and reset_memories. KeepsItsOwnState: memeval has nothing of this
    system's to checkpoint, and it cannot replay without learning (no freeze_learning)."""

    system_name = "my-memory"

    def __init__(self, state_dir: Path, min_words: int) -> None:
        self.state_dir = state_dir  # yours to write in
        self.min_words = min_words
        self.stored: dict[frozenset[str], str] = {}  # a turn's words → its entry id

    def prepare(self, entries: Sequence[Entry]) -> list[Entry]:
        """Work a pass can reuse, done once (embedding, redaction): nothing here."""
        return list(entries)

    def restart(self, wipe_memories: bool = True) -> None:
        """Before each pass: wipe what was stored, keep what was learned."""
        if wipe_memories:
            self.stored.clear()

    def run_pass(self, items: Sequence[Entry], pass_no: int,
                 phase: str = "eval") -> Iterator[Decision]:
        """One Decision per turn. `outcome` is one of: prefilter, length, content_score (dropped
        before any judge), judge (the judge said skip), noise_check, dedup, stored; or error,
        with `system_error` saying why. `retained`: the turn is in memory afterwards."""
        for entry in items:
            words = frozenset(_words(entry.assistant_response))
            if len(words) < self.min_words:
                outcome = "length"
            elif words in self.stored:
                outcome = "dedup"
            else:
                outcome = "stored"
                self.stored[words] = entry.id
            yield Decision(pass_no, phase, entry.id, entry.label, entry.label_source,
                           len(entry.assistant_response), outcome=outcome,
                           retained=outcome in ("stored", "dedup"), judge_called=False,
                           started_at=time.time())

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        """Per-pass facts for metrics.json (`labels`: entry id → its label)."""
        return {"memories": len(self.stored)}


class MyMemory:
    name = "my-memory"
    capabilities = frozenset({Capability.INGEST, Capability.RESET, Capability.SEARCH,
                              Capability.SCORE, Capability.CONFLICTS})

    def __init__(self, min_words: int = 8) -> None:
        self.min_words = min_words
        self.notes: dict[str, Any] = {"gate": f"fewer than {min_words} words: dropped"}
        self.indexed: list[tuple[str, set[str]]] = []

    def ingestor(self, state_dir: Path) -> MyIngestor:
        return MyIngestor(state_dir, self.min_words)

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        """Replace the searchable memories (capability search)."""
        self.indexed = [(m.id, _words(m.text)) for m in memories]

    def search(self, query: str, k: int) -> list[Hit]:
        """At most k hits, best first; each id one of the memories indexed, each score a finite
        number (higher is better)."""
        asked = _words(query)
        scored = [Hit(memory_id, len(asked & words) / max(len(asked), 1))
                  for memory_id, words in self.indexed]
        return sorted(scored, key=lambda hit: -hit.score)[:k]

    def score_records(self, records: Sequence[MemoryRecord]) -> list[float]:
        """Trust per record on MQS's 0–100 scale (capability score_records)."""
        return [50.0 if r.confidence is None else 100.0 * r.confidence for r in records]

    def detect_conflict(self, first: str, second: str) -> str | None:
        """contradiction, temporal, semantic, or `conflict` when untyped; None for no conflict
        (capability detect_conflicts)."""
        a, b = _words(first), _words(second)
        negated = ("not" in a) != ("not" in b) or ("never" in a) != ("never" in b)
        return "contradiction" if negated and len(a & b) >= 3 else None

    def record_outcome(self, memory_id: str, success: bool) -> None:
        raise NotImplementedError("my-memory declares no feedback capability")

    def close(self) -> None:
        """Called once the run is done."""


def build(min_words: int = 8) -> MyMemory:
    """What `system=my_memory:build` calls, with `system.settings` as keywords."""
    return MyMemory(min_words)
