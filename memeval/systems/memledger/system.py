"""`system=memledger`: the memledger package (2.0.1) through its public async API, offline.

memledger has no write gate: `add()` stores every turn, so each turn's decision is `stored`,
with no judge call; between passes its memories are deleted for good and nothing else is kept
(it learns nothing from what it stores). Trust is memledger's own MQS; a conflict is its
write-time rule (the nearest memory more similar than `conflict_threshold`, untyped); search is
its reranked search behind its confidence gate; feedback is `record_outcome`. Every text is
redacted before it reaches memledger (LiteLLM may send it elsewhere). One SQLite file in the
run directory holds everything, each use in a namespace of its own; which search path is in
use (sqlite-vec, or memledger's recency fallback) is in `notes`, and so in metrics.json.
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.quality.record import MemoryRecord
from memeval.registry import ConfigError, bounded
from memeval.systems.base import (
    SYSTEMS,
    Capability,
    Components,
    Hit,
    IndexedMemory,
    KeepsItsOwnState,
    Turn,
)
from memeval.systems.boundary import CallLimits
from memeval.systems.memledger.records import UNDECLARED, ledger_scores
from memeval.systems.memledger.runtime import (
    SEARCH_PATHS,
    EmbedderBridge,
    Loop,
    open_memledger,
    quiet_litellm,
    vec_enabled,
)
from memeval.utils.redact import redact

log = logging.getLogger(__name__)
EMBEDDINGS = ("memeval", "litellm")


@dataclass
class MemledgerSystemConfig(CallLimits):
    """`embeddings`: memeval (the run's embedder, in process) or litellm (an OpenAI-compatible
    /v1/embeddings at `embeddings_base_url`, e.g. `python -m memeval serve embeddings`)."""

    embeddings: str = "memeval"
    embeddings_base_url: str = "http://127.0.0.1:8766/v1"
    embeddings_model: str = "openai/memeval"
    conflict_threshold: float = bounded(0.65, 0, 1)
    namespace: str = "/memeval"
    confidence: float = bounded(0.5, 0, 1)  # declared for every ingested turn
    gate_min_confidence: float = bounded(0.4, 0, 1)  # search drops memories below this
    gate_flag_confidence: float = bounded(0.6, 0, 1)  # and flags (ranks last) those below this
    db: str = "memledger/memledger.db"  # relative to the run directory
    timeout_s: float = bounded(120.0, above=0)
    # more turns than this share failing in add() and the run fails once its results are written
    max_error_share: float = bounded(0.05, 0, 1)

    def validate(self) -> None:
        if self.embeddings not in EMBEDDINGS:
            raise ValueError(f"embeddings must be one of {', '.join(EMBEDDINGS)}, "
                             f"got {self.embeddings!r}")
        if self.embeddings == "litellm" and not self.embeddings_model.startswith("openai/"):
            raise ValueError("embeddings_model needs the openai/ prefix (an OpenAI-compatible "
                             "server), e.g. openai/memeval")
        if self.gate_min_confidence > self.gate_flag_confidence:
            raise ValueError("gate_min_confidence must not exceed gate_flag_confidence")
        if not self.namespace.startswith("/") or self.namespace.endswith("/"):
            raise ValueError(f"namespace must start with / and not end with one, "
                             f"got {self.namespace!r}")


class MemledgerIngestor(KeepsItsOwnState):
    """Every turn goes to `add()`; a restart deletes what the passes stored. memledger learns
    nothing from what it stores, so there is no state to checkpoint."""

    system_name = "memledger"

    def __init__(self, system: MemledgerSystem, state_dir: Path) -> None:
        self.system = system
        self.state_dir = state_dir
        self.namespace = f"{system.cfg.namespace}/turns"
        self.conflicts = 0  # flagged by memledger this pass

    def prepare(self, entries: Sequence[Entry]) -> list[Turn]:
        return Turn.redacted(entries)

    def restart(self, wipe_memories: bool = True) -> None:
        if wipe_memories:
            self.system.forget(self.namespace)

    def run_pass(self, items: Sequence[Turn], pass_no: int,
                 phase: str = "eval") -> Iterator[Decision]:
        self.conflicts = 0
        for turn in items:
            entry = turn.entry
            decision = Decision(pass_no, phase, entry.id, entry.label, entry.label_source,
                                len(turn.text), outcome="stored", retained=True,
                                started_at=time.time())
            start = time.perf_counter()
            try:
                _, conflicts = self.system.add(turn.text, self.namespace,
                                               confidence=self.system.cfg.confidence,
                                               metadata={"memeval_id": entry.id})
                self.conflicts += conflicts
            except Exception as err:  # memledger's or LiteLLM's, e.g. the server went away
                decision.outcome, decision.retained = "error", False
                decision.system_error = redact(f"{type(err).__name__}: {err}")[:300]
            decision.latency_ms["system"] = (time.perf_counter() - start) * 1000
            yield decision

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        return {"memledger_conflicts_flagged": self.conflicts}


class MemledgerSystem:
    name = "memledger"
    capabilities = frozenset(Capability) - {Capability.FREEZE}

    def __init__(self, cfg: MemledgerSystemConfig, ledger: Any, loop: Loop,
                 notes: dict[str, Any]) -> None:
        self.cfg = cfg
        self._ledger = ledger
        self._loop = loop
        self.notes = notes
        self._conflicts: dict[str, int] = {}
        self._indexed: dict[str, str] = {}  # memledger's record id -> memeval's memory id
        self._pairs = itertools.count()
        ledger.hooks.on_add.append(self._on_add)

    def _on_add(self, record: Any) -> None:
        """Conflicts live only on the record add() builds: memledger does not store them."""
        self._conflicts[record.id] = len(record.conflicts)

    def add(self, text: str, namespace: str, **fields: Any) -> tuple[str, int]:
        """(memledger's id, conflicts it flagged) for one memory added."""
        rid = self._loop.run(self._ledger.add(text, namespace=namespace, created_by="memeval",
                                              **fields))
        return rid, self._conflicts.pop(rid, 0)

    def forget(self, namespace: str) -> None:
        """Delete for good every memory under `namespace` (memledger's delete only archives)."""

        async def delete() -> None:
            connection = self._ledger._backend._conn
            ids = "SELECT id FROM memories WHERE namespace = ? OR substr(namespace, 1, ?) = ?"
            scope = (namespace, len(namespace) + 1, namespace + "/")
            if vec_enabled(self._ledger):
                await connection.execute(
                    f"DELETE FROM memory_embeddings WHERE memory_id IN ({ids})", scope)
            await connection.execute(f"DELETE FROM memories WHERE id IN ({ids})", scope)
            await connection.commit()

        self._loop.run(delete())

    def ingestor(self, state_dir: Path) -> MemledgerIngestor:
        return MemledgerIngestor(self, state_dir)

    def score_records(self, records: Sequence[MemoryRecord]) -> list[float]:
        return [float(s) for s in self._loop.run(ledger_scores(records))]

    def detect_conflict(self, first: str, second: str) -> str | None:
        namespace = f"{self.cfg.namespace}/pairs/{next(self._pairs)}"
        try:
            self.add(redact(first), namespace)
            _, conflicts = self.add(redact(second), namespace)
        finally:
            self.forget(namespace)
        return "conflict" if conflicts else None

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        namespace = f"{self.cfg.namespace}/search"
        self.forget(namespace)
        self._indexed = {}
        for memory in memories:
            confidence = UNDECLARED if memory.confidence is None else memory.confidence
            rid, _ = self.add(redact(memory.text), namespace, confidence=confidence,
                              importance=memory.importance, metadata={"memeval_id": memory.id})
            self._indexed[rid] = memory.id

    def search(self, query: str, k: int) -> list[Hit]:
        gate = {"min_threshold": self.cfg.gate_min_confidence,
                "flag_threshold": self.cfg.gate_flag_confidence}
        found = self._loop.run(self._ledger.search(
            redact(query), namespace=f"{self.cfg.namespace}/search", top_k=k,
            confidence_policy=gate))
        return [Hit(self._indexed[r.id], float(r.score or 0.0)) for r in found.records
                if r.id in self._indexed]

    def record_outcome(self, memory_id: str, success: bool) -> None:
        ids = [rid for rid, mid in self._indexed.items() if mid == memory_id]
        if not ids:
            raise KeyError(f"memory '{memory_id}' was not indexed")
        for rid in ids:
            self._loop.run(self._ledger.record_outcome(rid, success=success))

    def close(self) -> None:
        try:
            self._loop.run(self._ledger.close())
        finally:
            self._loop.stop()


def _open(cfg: MemledgerSystemConfig, ctx: Components, loop: Loop) -> tuple[Any, dict[str, Any]]:
    """The ledger on its SQLite file, and what a reader must know of how it runs."""
    logging.getLogger("memledger").setLevel(logging.WARNING)  # a line per add and search
    path = ctx.run_dir / cfg.db
    path.unlink(missing_ok=True)  # a fresh ledger every run
    if cfg.embeddings == "memeval":
        embedder = ctx.embedder
        ledger = loop.run(open_memledger(path, embedder.dim, cfg.conflict_threshold,
                                         embedder=EmbedderBridge(embedder.embed),
                                         model=cfg.embeddings_model))
        embeddings = f"memeval's embedder in process ({redact(embedder.identity)})"
    else:
        quiet_litellm(cfg.embeddings_base_url)
        dim = loop.run(_probe_width(cfg))
        ledger = loop.run(open_memledger(path, dim, cfg.conflict_threshold, embedder=None,
                                         model=cfg.embeddings_model))
        embeddings = (f"LiteLLM {cfg.embeddings_model} at {redact(cfg.embeddings_base_url)} "
                      f"({dim} dimensions)")
    vec = vec_enabled(ledger)
    if not vec:
        log.warning("memledger's search is not semantic: %s", SEARCH_PATHS[False])
    notes = {
        "search_path": SEARCH_PATHS[vec],
        "embeddings": embeddings,
        "write_gate": "none: add() stores every turn, so every decision is `stored` and no "
                      "judge is called; nothing but memories is kept between passes",
        "search_score": "memledger's reranked score (0.5 cosine + 0.5 usage policy: success "
                        "rate, recency, access count, importance), behind its confidence gate "
                        f"({cfg.gate_min_confidence} drop / {cfg.gate_flag_confidence} flag)",
        "trust": "memledger's compute_mqs with effective confidence from its own chain walk "
                 "(compute_effective_confidence); an undeclared confidence is 0.5 and a "
                 "declared 0.0 scores as 0.5",
        "conflicts": f"untyped: the nearest memory more similar than {cfg.conflict_threshold}",
    }
    return ledger, notes


async def _probe_width(cfg: MemledgerSystemConfig) -> int:
    """The server's vector width, from one request: a server that does not answer is named."""
    import litellm

    try:
        answer = await litellm.aembedding(model=cfg.embeddings_model, input=["memeval"])
        return len(answer.data[0]["embedding"])
    except Exception as err:
        raise ConfigError(
            f"no embeddings from {redact(cfg.embeddings_base_url)} "
            f"({type(err).__name__}): start one (python -m memeval serve embeddings) or set "
            f"system.embeddings_base_url, or use system.embeddings=memeval") from None


@SYSTEMS.register("memledger", MemledgerSystemConfig)
def build_memledger(cfg: MemledgerSystemConfig, *, ctx: Components) -> MemledgerSystem:
    """memledger and LiteLLM are imported here, only when this system is built."""
    if importlib.util.find_spec("memledger") is None:
        raise ConfigError("system=memledger needs the memledger package: pip install -e "
                          "\".[memledger]\" (in compare_systems, or leave it out with "
                          "~system@experiment.systems.memledger)")
    loop = Loop(cfg.timeout_s)
    try:
        ledger, notes = _open(cfg, ctx, loop)
    except BaseException:
        loop.stop()
        raise
    return MemledgerSystem(cfg, ledger, loop, notes)
