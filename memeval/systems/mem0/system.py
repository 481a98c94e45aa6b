"""`system=mem0`: the mem0ai package (2.2.1, `pip install -e ".[mem0]"`) through its public
`Memory` API, on a local FAISS index in the run directory, with telemetry off.

- Embeddings: memeval's run embedder, in process, in mem0's embedder slot; or, with
  `embeddings_base_url`, mem0's own OpenAI embedder against an OpenAI-compatible /v1/embeddings
  (`python -m memeval serve embeddings`).
- Ingest: `add()` per turn. With `infer: false` (the default, offline) mem0 stores every turn as
  is, so each decision is `stored` with no judge call. With `infer: true` mem0's LLM (`llm`,
  any OpenAI-compatible endpoint) extracts facts and decides ADD/UPDATE/DELETE/NONE: a turn from
  which it keeps nothing is dropped at `judge`, with its judge call counted.
- Search: the corpus's memories are added as they are (`infer=False`, so each result names the
  memory memeval gave), one pool at a time under its own user id; `search` asks for the top k
  with no score threshold, and the adapter keeps k at most (mem0 may return more).
- Speed: mem0's add() embeds its one text alone; the texts about to be added (infer false) are
  embedded ahead, AHEAD to a call, and each add() takes its vector (embedding.py). The notes'
  `time` says how long the adds took, and how much of it was embedding and how much mem0's own.

Wires: mem0's OpenAI clients (its embedder's, its LLM's) are given memeval's bounded HTTP client,
`timeout_s` for each whole request and `max_retries`; its vector store is a local FAISS index,
with no client. Every vector in or out of mem0's embedder slot is checked (embedding.py), and
anything else mem0 raises in an index, a search or a wipe is one SystemFailure line.

mem0 has no trust score, conflict detector or feedback: those capabilities are not declared.
Every text is redacted before it reaches mem0. mem0 reads MEM0_TELEMETRY and MEM0_DIR when it is
first imported: they are set before that, and telemetry is switched off in its module as well,
so nothing leaves the machine.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memeval.backends.embedders.base import EmbeddingError
from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.metrics.gate_metrics import SystemFailure
from memeval.registry import ConfigError, bounded
from memeval.systems.base import (
    SYSTEMS,
    Capability,
    Components,
    Hit,
    IndexedMemory,
    KeepsItsOwnState,
    Turn,
    Undeclared,
)
from memeval.systems.boundary import CallLimits
from memeval.systems.mem0.clock import Mem0Clock
from memeval.systems.mem0.embedding import Slot, bridge, checked, one_line
from memeval.utils.http_deadline import BoundedClient
from memeval.utils.redact import redact

log = logging.getLogger(__name__)
SEARCH_POOL = "memeval-search"  # the user id the searched memories live under
TURNS = "memeval-turns"  # and the ingested turns
AHEAD = 64  # texts embedded in one call before mem0 adds them one by one


@dataclass
class Mem0SystemConfig(CallLimits):
    infer: bool = False  # true: mem0's LLM decides what each turn adds (needs `llm_base_url`)
    llm_base_url: str | None = None  # an OpenAI-compatible chat endpoint, for infer: true
    llm_model: str = "gpt-4o-mini"
    llm_api_key_env: str | None = None  # the variable holding its key (null: none sent)
    embeddings_base_url: str | None = None  # null: memeval's embedder in process
    embeddings_model: str = "memeval"
    index_dir: str = "mem0"  # relative to the run directory (replaced at the start of each run)
    # each request mem0 (or the width probe) sends, connect to last byte; and its retries
    timeout_s: float = bounded(30.0, above=0)
    max_retries: int = bounded(2, 0, 100)
    # more turns than this share failing in add() and the run fails once its results are written
    max_error_share: float = bounded(0.05, 0, 1)

    def validate(self) -> None:
        if self.infer and not self.llm_base_url:
            raise ValueError("infer: true needs llm_base_url (an OpenAI-compatible endpoint for "
                             "mem0's LLM); infer: false stores every turn as is")


@contextmanager
def mem0_call(what: str) -> Iterator[None]:
    """What mem0 raises in `what` as one SystemFailure line; its embedder's failures stay the
    EmbeddingError they already are (embedding.py)."""
    try:
        yield
    except (EmbeddingError, SystemFailure):
        raise
    except Exception as err:  # mem0's, FAISS's or its history database's
        raise SystemFailure(one_line(f"system 'mem0': {what} failed: {type(err).__name__}: "
                                     f"{err}")) from None


class Mem0Ingestor(KeepsItsOwnState):
    """Every turn goes to `add()`; a restart deletes what the passes stored."""

    system_name = "mem0"

    def __init__(self, system: Mem0System, state_dir: Path) -> None:
        self.system = system
        self.state_dir = state_dir

    def prepare(self, entries: Sequence[Entry]) -> list[Turn]:
        return Turn.redacted(entries)

    def restart(self, wipe_memories: bool = True) -> None:
        if wipe_memories:
            with mem0_call("delete_all() of the ingested turns"), self.system.clock.wipe():
                self.system.memory.delete_all(user_id=TURNS)

    def run_pass(self, items: Sequence[Turn], pass_no: int,
                 phase: str = "eval") -> Iterator[Decision]:
        infer = self.system.cfg.infer
        texts = [turn.text for turn in items]  # with infer, mem0 embeds the facts it extracts
        for turn, _ in zip(items, texts if infer else self.system.embedded_ahead(texts),
                           strict=True):
            entry = turn.entry
            decision = Decision(pass_no, phase, entry.id, entry.label, entry.label_source,
                                len(turn.text), outcome="stored", retained=True,
                                judge_called=infer, started_at=time.time())
            start = time.perf_counter()
            try:
                with self.system.clock.adding():
                    added = self.system.memory.add(turn.text, user_id=TURNS, infer=infer,
                                                   metadata={"memeval_id": entry.id})
                kept = [r for r in added.get("results", []) if r.get("event") in ("ADD",
                                                                                  "UPDATE")]
                if infer and not kept:  # mem0's LLM kept nothing from it
                    decision.outcome, decision.retained, decision.judge_skip = "judge", False, True
            except Exception as err:  # mem0's, its LLM's or its embedder's
                decision.outcome, decision.retained = "error", False
                decision.system_error = redact(f"{type(err).__name__}: {err}")[:300]
            decision.latency_ms["system"] = (time.perf_counter() - start) * 1000
            yield decision

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        return {}


class Mem0System(Undeclared):
    name = "mem0"
    capabilities = frozenset({Capability.INGEST, Capability.RESET, Capability.SEARCH})

    def __init__(self, cfg: Mem0SystemConfig, memory: Any, notes: dict[str, Any],
                 http: BoundedClient) -> None:
        self.cfg = cfg
        self.memory = memory
        self.notes = notes
        self.http = http  # under mem0's OpenAI clients
        self.slot: Slot = memory.embedding_model
        self.clock = Mem0Clock(self.slot.spent, notes)

    def embedded_ahead(self, texts: Sequence[str]) -> Iterator[str]:
        """Each of `texts` as mem0 is about to add it, every AHEAD of them embedded in one call
        first: mem0's add() then takes its vector instead of embedding a text on its own."""
        for start in range(0, len(texts), AHEAD):
            chunk = texts[start : start + AHEAD]
            with self.clock.adding(0):
                self.slot.ahead(chunk)
            yield from chunk

    def ingestor(self, state_dir: Path) -> Mem0Ingestor:
        return Mem0Ingestor(self, state_dir)

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        with mem0_call("delete_all() of the searched memories"), self.clock.wipe():
            self.memory.delete_all(user_id=SEARCH_POOL)
        texts = [redact(memory.text) for memory in memories]
        for memory, text in zip(memories, self.embedded_ahead(texts), strict=True):
            with mem0_call(f"add() of memory '{memory.id}'"), self.clock.adding():
                self.memory.add(text, user_id=SEARCH_POOL, infer=False,
                                metadata={"memeval_id": memory.id})

    def search(self, query: str, k: int) -> list[Hit]:
        with mem0_call("search()"):
            found = self.memory.search(redact(query), top_k=k,
                                       filters={"user_id": SEARCH_POOL}, threshold=0.0)
        try:
            hits = [Hit(str((r.get("metadata") or {}).get("memeval_id")), float(r["score"]))
                    for r in found.get("results", [])]
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise SystemFailure(one_line(f"system 'mem0': search() answered {str(found)[:120]!r}, "
                                         f"which is not a list of scored memories: "
                                         f"{type(err).__name__}: {err}")) from None
        return hits[:k]  # mem0 may return more than it was asked for

    def close(self) -> None:
        """The HTTP client closed; mem0's FAISS index and history database stay in the run
        directory."""
        self.http.close()


def _quiet_mem0(home: Path) -> None:
    """Telemetry off and mem0's files in the run directory, before mem0 is first imported; and
    off in its module too, should something have imported it already."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(home))
    from mem0.memory import telemetry

    telemetry.MEM0_TELEMETRY = False  # capture_event reads it on each call


def _open(cfg: Mem0SystemConfig, ctx: Components
          ) -> tuple[Any, dict[str, Any], BoundedClient]:
    import shutil

    folder = ctx.run_dir / cfg.index_dir
    shutil.rmtree(folder, ignore_errors=True)  # a fresh index every run
    folder.mkdir(parents=True)
    _quiet_mem0(folder / "home")
    from mem0 import Memory

    for name in ("mem0", "mem0.memory.main", "mem0.vector_stores.faiss"):
        logging.getLogger(name).setLevel(logging.ERROR)  # a line per add, and spaCy's absence
    key = os.environ.get(cfg.llm_api_key_env, "") if cfg.llm_api_key_env else ""
    loopback = "http://127.0.0.1:9/v1"  # never called: infer false, embedder in process
    llm = {"model": cfg.llm_model, "openai_base_url": cfg.llm_base_url or loopback,
           "api_key": key or "unused"}
    if cfg.embeddings_base_url:
        width = _probe_width(cfg)
        embedder = {"model": cfg.embeddings_model, "openai_base_url": cfg.embeddings_base_url,
                    "api_key": "unused", "embedding_dims": width}
        who = f"mem0's OpenAI embedder at {redact(cfg.embeddings_base_url)}"
        embeddings = f"{who} ({width} dimensions)"
    else:
        width = ctx.embedder.dim
        embedder = {"api_key": "unused", "openai_base_url": loopback, "embedding_dims": width}
        embeddings = f"memeval's embedder in process ({redact(ctx.embedder.identity)})"
        who = f"memeval's embedder ({redact(ctx.embedder.identity)}) in mem0"
    memory = Memory.from_config({
        "vector_store": {"provider": "faiss", "config": {
            "collection_name": "memeval", "path": str(folder / "faiss"),
            "embedding_model_dims": width}},
        "embedder": {"provider": "openai", "config": embedder},
        "llm": {"provider": "openai", "config": llm},
        "history_db_path": str(folder / "history.db")})
    http = BoundedClient(timeout=cfg.timeout_s)
    for part in (memory.embedding_model, memory.llm):  # mem0 gives their clients no deadline
        part.client = part.client.with_options(timeout=cfg.timeout_s,
                                               max_retries=cfg.max_retries, http_client=http)
    memory.embedding_model = checked(memory.embedding_model if cfg.embeddings_base_url else
                                     bridge(ctx.embedder.embed, width), width, who)
    notes = {
        "embeddings": embeddings,
        "vector_store": "FAISS (local, semantic only: mem0 disables its BM25 hybrid on FAISS)",
        "write_gate": (f"mem0's LLM {cfg.llm_model} at {redact(cfg.llm_base_url or '')} "
                       f"decides what each turn adds (infer=True); a turn it keeps nothing of "
                       f"is dropped at `judge`") if cfg.infer else
                      "none: add(infer=False) stores every turn, so every decision is `stored` "
                      "and no judge is called",
        "search": "mem0's search over memories added as they are (infer=False), top k with no "
                  "score threshold; mem0 may return more than k, the adapter keeps k",
        "telemetry": "off (MEM0_TELEMETRY=False)"}
    return memory, notes, http


def _probe_width(cfg: Mem0SystemConfig) -> int:
    """The server's vector width, from memeval's own client's preflight: a server that does not
    answer is named."""
    from memeval.backends.embedders.openai_http import OpenAIHttpConfig, OpenAIHttpEmbedder

    assert cfg.embeddings_base_url is not None
    probe = OpenAIHttpEmbedder(OpenAIHttpConfig(base_url=cfg.embeddings_base_url,
                                                model=cfg.embeddings_model,
                                                timeout_s=cfg.timeout_s,
                                                max_retries=cfg.max_retries))
    try:
        probe.preflight()
    except ConfigError as err:
        raise ConfigError(f"system=mem0, system.embeddings_base_url: {err} (start one: python "
                          f"-m memeval serve embeddings; or leave it null for memeval's "
                          f"embedder)") from None
    finally:
        probe.close()
    return probe.dim


@SYSTEMS.register("mem0", Mem0SystemConfig)
def build_mem0(cfg: Mem0SystemConfig, *, ctx: Components) -> Mem0System:
    """mem0 is imported here, only when this system is built."""
    if importlib.util.find_spec("mem0") is None:
        raise ConfigError("system=mem0 needs the mem0ai package: pip install -e \".[mem0]\"")
    return Mem0System(cfg, *_open(cfg, ctx))
