"""`system=keyword_memory`: a rule gate in front of an in-memory list.

A turn is dropped when its answer is one of `ack_phrases` (outcome `prefilter`) or is shorter
than `min_chars` (outcome `length`), skipped when the same text is already stored (`dedup`), and
stored otherwise. Search ranks memories by the share of the query's words they contain.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.registry import bounded
from memeval.systems.base import SYSTEMS, Capability, Components, Hit, IndexedMemory, Persisted

WORD = re.compile(r"\w+")


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


@dataclass
class KeywordMemoryConfig:
    min_chars: int = bounded(40, 0)
    ack_phrases: list[str] = field(default_factory=lambda: ["ok", "done", "thanks"])


class KeywordIngestor:
    """Replays turns pass by pass; learns nothing, so a restart only wipes memories."""

    learning = True

    def __init__(self, cfg: KeywordMemoryConfig, state_dir: Path) -> None:
        self.cfg = cfg
        self.state_dir = state_dir
        self.memories: dict[str, str] = {}  # text → the entry id that stored it
        self._acks = {phrase.strip().lower().rstrip(".!") for phrase in cfg.ack_phrases}

    @property
    def stores(self) -> Sequence[Persisted]:
        return ()  # memories live in memory only

    def prepare(self, entries: Sequence[Entry]) -> list[Entry]:
        return list(entries)

    def restart(self, wipe_memories: bool = True) -> None:
        if wipe_memories:
            self.memories.clear()

    def _outcome(self, text: str) -> str:
        if text.strip().lower().rstrip(".!") in self._acks:
            return "prefilter"
        if len(text) < self.cfg.min_chars:
            return "length"
        return "dedup" if text in self.memories else "stored"

    def run_pass(self, items: Sequence[Entry], pass_no: int,
                 phase: str = "eval") -> Iterator[Decision]:
        for entry in items:
            text = entry.assistant_response
            outcome = self._outcome(text)
            if outcome == "stored":
                self.memories[text] = entry.id
            yield Decision(pass_no, phase, entry.id, entry.label, entry.label_source, len(text),
                           outcome=outcome, retained=outcome in ("stored", "dedup"),
                           started_at=time.time())

    def learning_state(self) -> dict[str, Any]:
        return {}

    def restore_learning_state(self, state: dict[str, Any]) -> None:
        """Nothing learned, nothing to restore."""

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        return {"memories": len(self.memories)}


class KeywordMemory:
    name = "keyword_memory"
    capabilities = frozenset({Capability.INGEST, Capability.RESET, Capability.SEARCH})

    def __init__(self, cfg: KeywordMemoryConfig) -> None:
        self.cfg = cfg
        self.notes: dict[str, Any] = {"rules": f"length < {cfg.min_chars}, ack phrases"}
        self._index: list[tuple[str, set[str]]] = []

    def ingestor(self, state_dir: Path) -> KeywordIngestor:
        return KeywordIngestor(self.cfg, state_dir)

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        self._index = [(m.id, words(m.text)) for m in memories]

    def search(self, query: str, k: int) -> list[Hit]:
        asked = words(query)
        hits = [Hit(memory_id, len(asked & found) / len(asked))
                for memory_id, found in self._index if asked]
        return sorted(hits, key=lambda hit: -hit.score)[:k]

    def close(self) -> None:
        """Nothing held open."""


@SYSTEMS.register("keyword_memory", KeywordMemoryConfig)
def build_keyword_memory(cfg: KeywordMemoryConfig, *, ctx: Components) -> KeywordMemory:
    return KeywordMemory(cfg)
