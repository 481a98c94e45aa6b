"""`python -m memeval serve memoryd`: memeval's reference engine behind memoryd's HTTP API.

So `system=http` can be tried with no daemon of one's own, and its wire mapping checked against
the engine it reproduces. The gate is built from memeval's config (embedder, scorer, judge,
gate) with its stores in a state directory, and every request is served under one lock, in
arrival order. memoryd has no ids on the wire, so the configured dataset is loaded and a turn
whose texts match one of its entries is judged as that entry (the labels and classifier judges
answer by entry); any other turn is an unlabelled one. Beyond memoryd's API, POST /api/restart
restarts the engine as a restarted daemon would (stores reloaded, scorer rebuilt), so the
three-pass protocol can be replayed exactly; the first turn restarts it if nothing did before.
And POST /api/index stores a memory under the caller's id, and a search given `top_k` answers
that many with their `ids`: what `system=http` needs to search (system.index.path=/api/index
system.search.ids_field=ids system.search.k_field=top_k).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from memeval.engine.gate.gate import Gate
from memeval.engine.store.memory_store import MemoryStore, StoredMemory
from memeval.entry import Entry
from memeval.serve.http import ApiError, Request, Routes
from memeval.utils.redact import redact

# memeval's outcome -> memoryd's stage and stored flag
STAGES = {"prefilter": ("pre_filter", 0), "length": ("length_filter", 0),
          "content_score": ("content_score_filter", 0), "judge": ("synthesizer_skip", 0),
          "noise_check": ("noise_filtered", 0), "dedup": ("stored", 0), "stored": ("stored", 1)}
NO_JUDGE = "no_synthesizer"  # memoryd's stage for a turn written without a judge
SEARCH_TOP_K = 5  # memoryd's; a search may ask for up to MAX_TOP_K with `top_k`
MAX_TOP_K = 100_000


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        raise ApiError(400, f"{name} is required (a string)")
    return value


def _object(request: Request) -> dict[str, Any]:
    if not isinstance(request.body, dict):
        raise ApiError(400, "the body must be a JSON object")
    return request.body


class MemorydEngine:
    """The gate answering memoryd's routes."""

    def __init__(self, gate: Gate, entries: Sequence[Entry]) -> None:
        self.gate = gate
        self._lock = threading.Lock()
        self._judged_gate = "judge" in gate.cfg.order
        # first entry wins, as texts are what the wire carries
        self._known: dict[tuple[str, str], Entry] = {}
        for entry in entries:
            self._known.setdefault((redact(entry.user_prompt), redact(entry.assistant_response)),
                                   entry)
        self._generation = 0  # restarts so far: memory ids are unique within one

    @property
    def routes(self) -> Routes:
        return {"/api/ingest": {"POST": self.ingest}, "/api/search": {"POST": self.search},
                "/api/memories": {"GET": self.memories},
                "/api/memories/{id}": {"DELETE": self.delete},
                "/api/rejections": {"GET": self.rejections},
                "/api/restart": {"POST": self.restart}, "/api/index": {"POST": self.index}}

    def _restart(self) -> None:
        for store in self.gate.stores:
            store.sync()
        self.gate.restart(wipe_memories=False)
        self._generation += 1

    def restart(self, request: Request) -> tuple[int, Any]:
        with self._lock:
            self._restart()
        return 200, {"status": "ok"}

    def _entry(self, prompt: str, response: str) -> Entry:
        known = self._known.get((redact(prompt), redact(response)))
        if known is not None:
            return known
        digest = hashlib.sha256(f"{prompt}\0{response}".encode()).hexdigest()[:16]
        return Entry(id=f"turn-{digest}", user_prompt=prompt, assistant_response=response)

    def ingest(self, request: Request) -> tuple[int, Any]:
        body = _object(request)
        prompt, response = _text(body, "user_prompt"), _text(body, "assistant_response")
        if not isinstance(body.get("source", ""), str):
            raise ApiError(400, "source must be a string")
        entry = self._entry(prompt, response)
        with self._lock:
            if self._generation == 0:  # a daemon builds its scorer at start-up
                self._restart()
            item = self.gate.prepare([entry])[0]
            decision = self.gate.process(item, self._generation)
            memory = self.gate.memories.memories[-1] if decision.outcome == "stored" else None
        stage, stored = STAGES[decision.outcome]
        if stage == "stored" and not self._judged_gate:
            stage = NO_JUDGE
        summary = (f"1 stored ({memory.id})." if memory is not None else
                   "1 skipped (duplicate)." if decision.outcome == "dedup" else
                   f"skipped at {stage}.")
        return 200, {"stage": stage, "stored": stored,
                     "entry": {"id": memory.id, "content": memory.text} if memory else None,
                     "summary": summary}

    def index(self, request: Request) -> tuple[int, Any]:
        """One memory stored as it is, under the caller's id: no gate, no dedup."""
        body = _object(request)
        text, memory_id = _text(body, "content"), _text(body, "id")
        vector = self.gate.embedder.embed([redact(text)])[0]
        with self._lock:
            self.gate.memories.add(StoredMemory(memory_id, redact(text), memory_id,
                                                self._generation), vector)
        return 200, {"id": memory_id}

    def search(self, request: Request) -> tuple[int, Any]:
        body = _object(request)
        query = _text(body, "query")
        if not query.strip():
            raise ApiError(400, "query is required")
        k = body.get("top_k", SEARCH_TOP_K)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_TOP_K:
            raise ApiError(400, f"top_k must be an integer from 1 to {MAX_TOP_K}")
        with self._lock:
            store = self.gate.memories
            if not store.memories:
                return 200, {"context": "No relevant memories found.", "scores": [], "ids": []}
            cosines = store.vectors @ self.gate.embedder.embed([redact(query)])[0]
            top = np.argsort(-cosines, kind="stable")[:k]
            found = [store.memories[i] for i in top]
        return 200, {"context": "\n\n".join(m.text for m in found),
                     "scores": [float(cosines[i]) for i in top], "ids": [m.id for m in found]}

    def memories(self, request: Request) -> tuple[int, Any]:
        with self._lock:
            return 200, [{"id": m.id, "content": m.text, "source": "memeval"}
                         for m in self.gate.memories.memories]

    def delete(self, request: Request) -> tuple[int, Any]:
        with self._lock:
            old = self.gate.memories
            kept = MemoryStore(old.dim)
            for memory, vector in zip(old.memories, old.vectors, strict=True):
                if memory.id != request.path_id:
                    kept.add(memory, vector)
            if len(kept) == len(old):
                raise ApiError(404, f"no memory {request.path_id}")
            self.gate.memories = self.gate.writer.store = kept
        return 200, {"status": "ok"}

    def rejections(self, request: Request) -> tuple[int, Any]:
        with self._lock:
            return 200, [asdict(record) for record in self.gate.rejections.records]

    def close(self) -> None:
        """Stores on disk, as a daemon leaves them when it stops."""
        with self._lock:
            for store in self.gate.stores:
                store.sync()
