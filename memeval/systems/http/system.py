"""`system=http`: any memory daemon over HTTP, memoryd's API as the preset
(memeval/conf/system/http.yaml).

Each turn is redacted (text sent to a daemon may leave the machine) and sent to the ingest route;
the daemon's stage is mapped onto memeval's outcomes, so a live daemon gets the same per-pass
table, stage counts, judge-call figures and spans as the reference engine. A turn the daemon gave
no verdict for is recorded as an error (`system_error`) and the run goes on; too many and the
run fails once its results are written. Between passes, memories are wiped by listing them and
deleting each; what the daemon learned stays with it. A daemon cannot freeze its learning, and
it keeps no state memeval could checkpoint: a resumed run wipes and replays the unfinished pass,
while the daemon keeps whatever that pass taught it.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.metrics.gate_metrics import SystemFailure
from memeval.registry import ConfigError
from memeval.systems.base import (
    SYSTEMS,
    Capability,
    Components,
    Hit,
    IndexedMemory,
    KeepsItsOwnState,
    Undeclared,
)
from memeval.systems.http.client import Daemon, DaemonError, search_hits
from memeval.systems.http.mapping import HttpSystemConfig, IngestRoute, as_key, pluck
from memeval.utils.redact import redact

log = logging.getLogger(__name__)
KEPT = ("stored", "dedup")  # outcomes that leave the turn's knowledge in the store


@dataclass(frozen=True)
class Turn:
    """A turn as the daemon will see it: texts redacted once, reused by every pass."""

    entry: Entry
    prompt: str
    text: str


def read_verdict(route: IngestRoute, data: Any) -> tuple[str, bool, bool, str]:
    """(outcome, retained, judge called, the daemon's own stage) from an ingest answer; with no
    stage field, the stored flag alone says stored or dropped."""
    if not route.stage_field:
        return _by_flag(route, data)
    try:
        stage = as_key(pluck(data, route.stage_field))
    except KeyError:
        raise DaemonError(f"the daemon's answer has no {route.stage_field!r}: check "
                          f"system.ingest.stage_field") from None
    outcome = route.stages.get(stage)
    if outcome is None:
        raise DaemonError(redact(f"the daemon answered stage {stage[:80]!r}, which "
                                 f"system.ingest.stages does not map (it maps "
                                 f"{', '.join(route.stages)}): add it"))
    if route.stored_field:
        stored = _stored(route, data)
        if stored and outcome != "stored":
            raise DaemonError(f"the daemon answered stage {stage!r} (memeval: {outcome}) yet "
                              f"stored the turn: check system.ingest.stages")
        if outcome == "stored" and not stored:
            outcome = route.not_stored
    return outcome, outcome in KEPT, stage in route.judge_stages, stage


def _stored(route: IngestRoute, data: Any) -> bool:
    try:
        flag = pluck(data, route.stored_field)
    except KeyError:
        raise DaemonError(f"the daemon's answer has no {route.stored_field!r}: check "
                          f"system.ingest.stored_field (\"\" if it sends none)") from None
    if not isinstance(flag, bool | int | float):
        raise DaemonError(f"the daemon's {route.stored_field!r} is {type(flag).__name__}, "
                          f"not a flag or count: check system.ingest.stored_field")
    return flag > 0


def _by_flag(route: IngestRoute, data: Any) -> tuple[str, bool, bool, str]:
    outcome = "stored" if _stored(route, data) else route.dropped
    return outcome, outcome in KEPT, False, ""


class HttpIngestor(KeepsItsOwnState):
    """Replays turns through the daemon, pass by pass; the daemon keeps its own stores."""

    system_name = "http"

    def __init__(self, cfg: HttpSystemConfig, daemon: Daemon, state_dir: Path) -> None:
        self.cfg = cfg
        self.daemon = daemon
        self.state_dir = state_dir
        self.stage_counts: Counter[str] = Counter()  # the daemon's own stage names, this pass

    def prepare(self, entries: Sequence[Entry]) -> list[Turn]:
        return [Turn(e, redact(e.user_prompt), redact(e.assistant_response)) for e in entries]

    def restart(self, wipe_memories: bool = True) -> None:
        """Wipe the daemon's memories (its rejection store stays), then restart it when a
        restart route is mapped; memoryd has none, so its in-memory learning carries on."""
        if wipe_memories and Capability.RESET not in self.cfg.capabilities:
            raise ConfigError("system=http cannot wipe memories: map system.memories.path and "
                              "system.delete.path")
        try:
            if wipe_memories:
                wiped = self.daemon.wipe()
                log.info("wiped %d memories from the daemon at %s", wiped, self.daemon.shown)
            if self.cfg.restart.mapped:
                self.daemon.call(self.cfg.restart, "system.restart", {})
        except DaemonError as err:
            raise SystemFailure(f"the daemon at {self.daemon.shown} could not be reset before "
                                f"the pass: {err.reason}") from None

    def _send(self, turn: Turn, pass_no: int, phase: str) -> tuple[Decision, str]:
        route, entry = self.cfg.ingest, turn.entry
        decision = Decision(pass_no, phase, entry.id, entry.label, entry.label_source,
                            len(turn.text), outcome="error", retained=False,
                            started_at=time.time())
        payload = {**route.fields, route.response_field: turn.text,
                   **({route.prompt_field: turn.prompt} if route.prompt_field else {})}
        start = time.perf_counter()
        stage = ""
        try:
            answer = self.daemon.send_turn(payload)
            try:
                decision.outcome, decision.retained, decision.judge_called, stage = read_verdict(
                    route, answer.data)
            except DaemonError as err:
                self.daemon.failed(err.reason)
                raise
            self.daemon.answered()
        except DaemonError as err:
            decision.system_error = err.reason
        decision.latency_ms["system"] = (time.perf_counter() - start) * 1000
        return decision, stage

    def run_pass(self, items: Sequence[Turn], pass_no: int,
                 phase: str = "eval") -> Iterator[Decision]:
        """Turns in order; with max_concurrency > 1, that many in flight at once (the daemon
        then meets them in whatever order they arrive)."""
        self.stage_counts = Counter()
        if self.cfg.max_concurrency == 1:
            results: Iterator[tuple[Decision, str]] = (
                self._send(turn, pass_no, phase) for turn in items)
            yield from self._counted(results)
            return
        with ThreadPoolExecutor(self.cfg.max_concurrency, "memeval-http") as pool:
            futures = [pool.submit(self._send, turn, pass_no, phase) for turn in items]
            try:
                yield from self._counted(future.result() for future in futures)
            finally:  # the reader stopped early (Ctrl-C): send nothing more
                for future in futures:
                    future.cancel()

    def _counted(self, results: Iterator[tuple[Decision, str]]) -> Iterator[Decision]:
        for decision, stage in results:
            if stage:
                self.stage_counts[stage] += 1
            yield decision

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        """The daemon's own stage names this pass, and its rejection store's size when a
        rejections route is mapped (a failure to read it is recorded, not fatal)."""
        state: dict[str, Any] = {"daemon_stage_counts": dict(self.stage_counts)}
        rejections = self.cfg.rejections
        if rejections.mapped:
            try:
                state["rejection_store_size"] = len(self.daemon.listed(
                    rejections, "system.rejections", rejections.list_field))
            except DaemonError as err:
                log.warning("could not read the daemon's rejection store: %s", err.reason)
                state["rejection_store_error"] = err.reason
        return state


class HttpSystem(Undeclared):
    name = "http"

    def __init__(self, cfg: HttpSystemConfig, daemon: Daemon) -> None:
        self.cfg = cfg
        self.daemon = daemon
        self.capabilities = cfg.capabilities
        self.notes: dict[str, Any] = {"base_url": daemon.shown}
        if not cfg.restart.mapped:
            self.notes["restart"] = ("no restart route: between passes the daemon's memories are "
                                     "wiped but it is not restarted, so what it holds in memory "
                                     "(e.g. a scorer rebuilt only every so many rejections) "
                                     "carries on")
        if Capability.SEARCH not in self.capabilities:
            self.notes["search"] = ("not claimed: it needs an index route and search answers "
                                    "with memory ids (system.index.path, system.search.ids_field)")

    def ingestor(self, state_dir: Path) -> HttpIngestor:
        return HttpIngestor(self.cfg, self.daemon, state_dir)

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        """Replace the daemon's memories with these, each sent with its id."""
        index = self.cfg.index
        try:
            self.daemon.wipe()
            for memory in memories:
                self.daemon.call(index, "system.index", {index.text_field: redact(memory.text),
                                                         index.id_field: memory.id})
        except DaemonError as err:
            raise SystemFailure(f"indexing memories in the daemon failed: {err.reason}") from None

    def search(self, query: str, k: int) -> list[Hit]:
        route = self.cfg.search
        try:
            data = self.daemon.call(route, "system.search", route.body(redact(query), k)).data
            hits = search_hits(route, data)
        except DaemonError as err:
            raise SystemFailure(f"search in the daemon failed: {err.reason}") from None
        return sorted(hits, key=lambda hit: -hit.score)[:k]

    def close(self) -> None:
        self.daemon.close()


@SYSTEMS.register("http", HttpSystemConfig)
def build_http(cfg: HttpSystemConfig, *, ctx: Components) -> HttpSystem:
    """The daemon is checked (preflight) before any work."""
    daemon = Daemon(cfg)
    try:
        daemon.preflight()
    except ConfigError:
        daemon.close()
        raise
    return HttpSystem(cfg, daemon)
