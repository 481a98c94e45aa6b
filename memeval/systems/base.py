"""The seam between memeval's experiments and a memory system under test.

A memory system (memeval's reference engine, the memledger package, a daemon over HTTP, a user's
plugin) declares which capabilities it has; an experiment asks for the ones it needs and is
refused, naming what is missing, when the system lacks one. Each capability is a small protocol:

- `ingest`: one agent turn in → stored or dropped, at which stage, judge calls spent (a
  `Decision`); the system's `ingestor(state_dir)` replays passes.
- `reset_memories`: wipe memories between passes, keep what the system learned (the three-pass
  protocol); the ingestor's `restart(wipe_memories=True)`.
- `freeze_learning`: replay without learning (the leakage-free holdout's evaluation half).
- `score_records`: a memory record → trust on MQS's 0–100 scale.
- `detect_conflicts`: a pair of memory texts → conflict type, or none.
- `search`: a query → ranked memory ids with scores, over memories the experiment indexed.
- `feedback`: an outcome (success or failure) recorded against a memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memeval.backends.embedders.base import Embedder
from memeval.backends.judges.base import Judge
from memeval.engine.gate.gate import Decision, GateConfig
from memeval.entry import Entry
from memeval.quality.record import MemoryRecord
from memeval.registry import Chosen, ConfigError, Registry
from memeval.utils.redact import redact

# What `detect_conflict` may answer besides None: a type, or `conflict` when the system does not
# type its conflicts.
CONFLICT_TYPES = ("contradiction", "temporal", "semantic")
UNTYPED_CONFLICT = "conflict"


class Capability(StrEnum):
    INGEST = "ingest"
    RESET = "reset_memories"
    FREEZE = "freeze_learning"
    SCORE = "score_records"
    CONFLICTS = "detect_conflicts"
    SEARCH = "search"
    FEEDBACK = "feedback"


class Persisted(Protocol):
    """A file-backed store a pass checkpoint copies (`path` None: kept in memory only)."""

    path: Path | None

    def sync(self) -> None: ...

    def reload(self) -> None: ...


@runtime_checkable
class Ingestor(Protocol):
    """Replays agent turns through a system, pass by pass (capabilities ingest, reset)."""

    state_dir: Path
    learning: bool  # False: verdicts feed nothing (capability freeze_learning)

    @property
    def stores(self) -> Sequence[Persisted]: ...

    def prepare(self, entries: Sequence[Entry]) -> list[Any]:
        """Whatever per-entry work a pass can reuse (redaction, embedding), done once."""
        ...

    def restart(self, wipe_memories: bool = True) -> None: ...

    def run_pass(self, items: Sequence[Any], pass_no: int, phase: str = "eval"
                 ) -> Iterator[Decision]: ...

    def learning_state(self) -> dict[str, Any]:
        """What a restart keeps besides `stores` (saved with each pass checkpoint)."""
        ...

    def restore_learning_state(self, state: dict[str, Any]) -> None: ...

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        """Per-pass facts beyond the decisions (e.g. rejection-store size), for metrics.json;
        `labels` (entry id → label) lets a system break down what it holds."""
        ...


class KeepsItsOwnState:
    """For an ingestor whose system keeps what it learns itself and cannot freeze it (a daemon,
    a library): memeval has nothing to checkpoint or restore, and `learning = False` is refused.
    A subclass names its system in `system_name`; a system that can freeze its learning keeps a
    `learning` attribute of its own instead (docs/protocol.md)."""

    system_name: str = "this system"

    @property
    def learning(self) -> bool:
        return True

    @learning.setter
    def learning(self, value: bool) -> None:
        if not value:
            raise ConfigError(f"system {self.system_name} cannot replay without learning: its "
                              f"ingestor subclasses KeepsItsOwnState, whose learning stays on; a "
                              f"system declaring freeze_learning keeps a learning attribute of "
                              f"its own (docs/protocol.md), any other needs an experiment that "
                              f"does not freeze")

    @property
    def stores(self) -> Sequence[Persisted]:
        return ()

    def learning_state(self) -> dict[str, Any]:
        return {}

    def restore_learning_state(self, state: dict[str, Any]) -> None:
        """Nothing to restore: the system kept it."""


class Undeclared:
    """The methods of capabilities a system does not declare: memeval never calls them, and a
    call by mistake names the capability missing."""

    name: str

    def score_records(self, records: Sequence[MemoryRecord]) -> list[float]:
        raise NotImplementedError(f"system {self.name} declares no score_records capability")

    def detect_conflict(self, first: str, second: str) -> str | None:
        raise NotImplementedError(f"system {self.name} declares no detect_conflicts capability")

    def record_outcome(self, memory_id: str, success: bool) -> None:
        raise NotImplementedError(f"system {self.name} declares no feedback capability")


@dataclass(frozen=True)
class Turn:
    """A turn as a library system is given it: the answer redacted once, for every pass."""

    entry: Entry
    text: str

    @classmethod
    def redacted(cls, entries: Sequence[Entry]) -> list[Turn]:
        return [cls(e, redact(e.assistant_response)) for e in entries]


@dataclass(frozen=True)
class Hit:
    """One search result: a memory id the experiment indexed, and the system's score."""

    id: str
    score: float


@dataclass(frozen=True)
class IndexedMemory:
    """A memory an experiment indexes for search: id, text and what a system may weigh."""

    id: str
    text: str
    confidence: float | None = None
    importance: float = 0.5


class System(Protocol):
    """A memory system under test. Only the methods of its declared capabilities are called."""

    name: str
    capabilities: frozenset[Capability]
    notes: dict[str, Any]  # what a reader of the results must know (e.g. a fallback in use)

    def ingestor(self, state_dir: Path) -> Ingestor:
        """A fresh ingestor whose persisted state lives in `state_dir` (ingest, reset)."""
        ...

    def score_records(self, records: Sequence[MemoryRecord]) -> list[float]:
        """Trust per record on MQS's 0–100 scale; `records` is the whole ledger (lineage)."""
        ...

    def detect_conflict(self, first: str, second: str) -> str | None:
        """The conflict type between two memory texts (`conflict` when untyped), or None."""
        ...

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        """Replace the searchable memories (search)."""
        ...

    def search(self, query: str, k: int) -> list[Hit]: ...

    def record_outcome(self, memory_id: str, success: bool) -> None:
        """Usage feedback (feedback)."""
        ...

    def close(self) -> None: ...


class Components(Protocol):
    """What a system may take from the run that builds it (the run context satisfies it): its
    directory and the components it shares, so the reference engine and an adapter embed and
    judge with the run's own."""

    @property
    def run_dir(self) -> Path: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def content_embedder(self) -> Embedder:
        """What the write gate's content stage embeds with (`content_encoder=`)."""
        ...

    @property
    def judge(self) -> Judge: ...

    @property
    def scorer(self) -> Chosen:
        """The content scorer chosen; each gate builds its own from it."""
        ...

    def gate_config(self) -> GateConfig:
        """The gate's settings (the content-score cut among them), a copy per caller."""
        ...


SYSTEMS: Registry[System] = Registry("system")


def require(system: System, needed: Sequence[Capability], experiment: str) -> None:
    """Refuse, before any work, an experiment the system cannot serve, naming what it lacks."""
    missing = [c for c in needed if c not in system.capabilities]
    if missing:
        have = ", ".join(sorted(system.capabilities)) or "none"
        raise ConfigError(
            f"system '{system.name}' cannot run experiment {experiment}: it needs "
            f"{', '.join(missing)} (this system has: {have}); choose another system or "
            f"experiment (docs/systems.md lists what each needs)")
