"""The boundary around a memory system under test: what the run holds instead of the system.

Every call goes through the system's own thread with a deadline (systems/deadline.py), and every
answer through the protocol's checks (systems/answers.py) before any figure counts it: a run and
`python -m memeval check` refuse the same answers. A failure names the system, the call and the
value (`SystemFailure`, exit 2). What only follows the work (the system's notes, its `close()`,
facts it adds to a pass's row) never costs the results: a problem there is kept in `deferred`,
and the run writes its results before failing on it.

memeval's reference engine runs without a boundary: it is memeval's own code, tested with it, and
each outside service it calls (judge, embedder) has a deadline of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.metrics.gate_metrics import SystemFailure
from memeval.quality.record import MemoryRecord
from memeval.registry import ConfigError, bounded
from memeval.systems.answers import (
    check_decision,
    check_hits,
    check_json,
    check_scores,
    refuse,
    shown,
)
from memeval.systems.base import Capability, Hit, IndexedMemory, Ingestor, Persisted, System
from memeval.systems.deadline import CallThread, Limits, exits_refused

INGESTOR = ("prepare", "restart", "run_pass", "pass_state", "learning_state",
            "restore_learning_state", "stores", "learning")
NAME_CHARS = 100


@dataclass
class CallLimits:
    """A system's deadlines, in its settings (`system.call_timeout_s=…`): a call may take
    `call_timeout_s`, plus `item_timeout_s` per item of a call given many (the memories of one
    `index`, the records of one `score_records`, the turns of one `prepare`, the turns fed since
    the last wipe for a `restart` that wipes). A system option's settings class inherits these
    to make them settable; others get the defaults."""

    call_timeout_s: float = bounded(60.0, above=0)
    item_timeout_s: float = bounded(0.1, 0)

    def limits(self) -> Limits:
        return Limits(self.call_timeout_s, self.item_timeout_s)


def limits_of(params: Any) -> Limits:
    """The deadlines a system option's settings give, or the defaults."""
    return params.limits() if isinstance(params, CallLimits) else CallLimits().limits()


def checked_system(system: Any, where: str) -> Any:
    """The object, once it has what every system must: a name (a short line of text), notes
    (a dict) and capabilities memeval knows (strings are read as capability names)."""
    missing = [a for a in ("name", "capabilities", "notes") if not hasattr(system, a)]
    if missing:
        raise ConfigError(f"{where} returned {type(system).__name__} without "
                          f"{', '.join(missing)}: a system needs name, capabilities and notes "
                          f"(docs/protocol.md)")
    name = system.name
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_CHARS \
            or not name.isprintable():
        raise ConfigError(f"{where} returned a system named {shown(name)}: its name must be a "
                          f"line of text of 1 to {NAME_CHARS} characters")
    declared = system.capabilities
    if isinstance(declared, str) or not isinstance(declared, set | frozenset | list | tuple):
        raise ConfigError(f"{where}: system '{name}' declares capabilities {shown(declared)}, "
                          f"not a set of capability names")
    known = {c.value for c in Capability}
    unknown = sorted(shown(c) for c in declared if str(c) not in known)
    if unknown:
        raise ConfigError(f"{where}: system '{name}' declares unknown capabilities "
                          f"{', '.join(unknown)} (known: {', '.join(sorted(known))})")
    system.capabilities = frozenset(Capability(str(c)) for c in declared)
    if not isinstance(system.notes, dict):
        raise ConfigError(f"{where}: system '{name}' has notes {shown(system.notes)}, not a "
                          f"dict (what a reader of its results must know; {{}} for nothing)")
    return system


class GuardedSystem:
    """A system under test seen through the boundary; it satisfies the System protocol."""

    def __init__(self, system: Any, thread: CallThread) -> None:
        self._system = system
        self._thread = thread
        self.name: str = system.name
        thread.system = self.name
        self.capabilities: frozenset[Capability] = system.capabilities
        self.deferred: list[SystemFailure] = []  # found after the work: fail once it is written
        self._indexed: set[str] = set()
        self._closed = False
        self._last_notes: dict[str, Any] = {}
        self._exits = len(exits_refused)
        self._held = Held()  # turns its ingestors fed it since its memories were last wiped

    @property
    def notes(self) -> dict[str, Any]:
        """The system's notes as they stand; notes JSON cannot hold are replaced by what was
        wrong with them, and the run fails once its results are written."""
        if self._closed:
            return self._last_notes
        try:
            return check_json(self._thread.call("notes", getattr, self._system, "notes"),
                              self.name, "notes")
        except SystemFailure as err:
            if all(str(d) != str(err) for d in self.deferred):
                self.deferred.append(err)
            return {"unreadable": str(err)}

    @notes.setter
    def notes(self, value: dict[str, Any]) -> None:
        self._thread.call("notes", setattr, self._system, "notes", value)

    def ingestor(self, state_dir: Path) -> Ingestor:
        made = self._thread.call("ingestor", self._system.ingestor, state_dir)
        missing = [a for a in INGESTOR
                   if not self._thread.call("ingestor", hasattr, made, a)]
        if missing:
            raise refuse(self.name, "ingestor()", f"a {type(made).__name__} without "
                                                  f"{', '.join(missing)}: memeval saves each "
                                                  f"pass with them (subclass KeepsItsOwnState "
                                                  f"when there is nothing to save)")
        return GuardedIngestor(made, state_dir, self.name, self._thread, self._held)

    def score_records(self, records: Sequence[MemoryRecord]) -> list[float]:
        answer = self._thread.call("score_records", self._answered, self._system.score_records,
                                   records, items=len(records), most=len(records) + 1)
        return check_scores(answer, records, self.name)

    def detect_conflict(self, first: str, second: str) -> str | None:
        """The answer as given: each caller checks it naming its pair (`conflict_answer`)."""
        answer: str | None = self._thread.call("detect_conflict", self._system.detect_conflict,
                                               first, second)
        return answer

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        self._indexed = {m.id for m in memories}
        self._thread.call("index", self._system.index, list(memories), items=len(memories))

    def search(self, query: str, k: int) -> list[Hit]:
        answer = self._thread.call("search", self._answered, self._system.search, query, k,
                                   most=k + 1)
        return check_hits(answer, query, k, self._indexed, self.name)

    def record_outcome(self, memory_id: str, success: bool) -> None:
        self._thread.call("record_outcome", self._system.record_outcome, memory_id, success)

    def close(self) -> None:
        """Once, its notes read first (a run writes them after); a failure, or a system that can
        no longer be called, is kept in `deferred`."""
        if self._closed:
            return
        self._last_notes = self.notes
        self._closed = True
        try:
            self._thread.call("close", self._system.close)
        except SystemFailure as err:
            self.deferred.append(err)
        self._thread.close()
        if len(exits_refused) > self._exits:
            self.deferred.append(SystemFailure(
                f"system '{self.name}' called os._exit({exits_refused[-1]}) outside a call "
                f"memeval made: a system must not end memeval's process"))

    @staticmethod
    def _answered(method: Callable[..., Any], *args: Any, most: int) -> Any:
        """The method's answer with an iterator read (at most `most` items) on the system's
        thread, within the call's deadline: an endless generator is never read to its end."""
        answer = method(*args)
        if isinstance(answer, Iterable) and not isinstance(answer, list | tuple | str | bytes
                                                           | Mapping):
            return list(itertools.islice(answer, most))
        return answer


@dataclass(frozen=True)
class Prepared:
    """A turn as the run holds it: the system's prepared item with the turn it was made from,
    so each decision can be checked against the turn it must be for."""

    entry: Entry
    item: Any


@dataclass
class Held:
    """How many turns a system's ingestors fed it since its memories were last wiped: a wipe
    may delete that many memories, one by one (mem0 does), so its deadline counts them."""

    turns: int = 0


class GuardedIngestor:
    """A system's ingestor seen through the boundary (the Ingestor protocol)."""

    def __init__(self, ingestor: Any, state_dir: Path, system: str,
                 thread: CallThread, held: Held) -> None:
        self._ingestor = ingestor
        self.state_dir = state_dir
        self._system = system
        self._thread = thread
        self._held = held

    @property
    def learning(self) -> bool:
        value = self._thread.call("learning", getattr, self._ingestor, "learning")
        if not isinstance(value, bool):
            raise refuse(self._system, "the ingestor's learning", f"{shown(value)}, not a bool")
        return value

    @learning.setter
    def learning(self, value: bool) -> None:
        self._thread.call(f"learning = {value}", setattr, self._ingestor, "learning", value)

    @property
    def stores(self) -> Sequence[Persisted]:
        found = self._thread.call("stores", lambda: list(self._ingestor.stores))
        for store in found:
            path = getattr(store, "path", None)
            if not (path is None or isinstance(path, Path)) or not all(
                    hasattr(store, a) for a in ("path", "sync", "reload")):
                raise refuse(self._system, "the ingestor's stores",
                             f"{shown(store)}, not a store with path (a Path or None), sync() "
                             f"and reload()")
        return [GuardedStore(store, self._thread) for store in found]

    def prepare(self, entries: Sequence[Entry]) -> list[Any]:
        items = self._thread.call("prepare", self._ingestor.prepare, list(entries),
                                  items=len(entries))
        if not isinstance(items, list) or len(items) != len(entries):
            size = f" of {len(items)}" if isinstance(items, list) else ""
            raise refuse(self._system, "prepare", f"a {type(items).__name__}{size} for "
                                                  f"{len(entries)} turns: it returns a list, "
                                                  f"one item per turn")
        return [Prepared(entry, item) for entry, item in zip(entries, items, strict=True)]

    def restart(self, wipe_memories: bool = True) -> None:
        held = self._held.turns if wipe_memories else 0
        self._thread.call("restart", self._ingestor.restart, wipe_memories=wipe_memories,
                          items=held)
        if wipe_memories:
            self._held.turns = 0

    def run_pass(self, items: Sequence[Any], pass_no: int, phase: str = "eval"
                 ) -> Iterator[Decision]:
        """One checked decision per turn, in order; a missing or an extra one fails the pass."""
        turns: list[Prepared] = list(items)
        self._held.turns += len(turns)
        call = f"run_pass (pass {pass_no})"
        decisions = self._thread.call(call, lambda: iter(self._ingestor.run_pass(
            [t.item for t in turns], pass_no, phase)))
        end = object()
        for turn in turns:
            decision = self._thread.call(call, next, decisions, end)
            if decision is end:
                raise refuse(self._system, call, f"no decision for entry '{turn.entry.id}' "
                                                 f"(one per turn given: {len(turns)})")
            yield check_decision(decision, turn.entry, pass_no, phase, self._system)
        if self._thread.call(call, next, decisions, end) is not end:
            raise refuse(self._system, call, f"more decisions than the {len(turns)} turns "
                                             f"given")

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        return check_json(self._thread.call("pass_state", self._ingestor.pass_state, labels),
                          self._system, "pass_state")

    def learning_state(self) -> dict[str, Any]:
        return check_json(self._thread.call("learning_state", self._ingestor.learning_state),
                          self._system, "learning_state")

    def restore_learning_state(self, state: dict[str, Any]) -> None:
        self._thread.call("restore_learning_state", self._ingestor.restore_learning_state,
                          state)


class GuardedStore:
    """A store a checkpoint copies, its `sync` and `reload` called through the boundary."""

    def __init__(self, store: Any, thread: CallThread) -> None:
        self._store = store
        self._thread = thread
        self.path: Path | None = store.path

    def sync(self) -> None:
        self._thread.call("a store's sync", self._store.sync)

    def reload(self) -> None:
        self._thread.call("a store's reload", self._store.reload)


def guarded(make: Callable[[], Any], what: str, limits: Limits) -> GuardedSystem:
    """The system `make()` builds, built on its own thread (so whatever it ties to that thread
    stays usable) within the deadline, checked, and bounded from then on."""
    thread = CallThread(what, limits)
    try:
        made = thread.call("building it", make)
        return GuardedSystem(thread.call("building it", checked_system, made, what), thread)
    except BaseException:
        thread.close()
        raise


def as_system(system: GuardedSystem) -> System:
    """The boundary where a System is expected (the type checker holds it to the protocol)."""
    return system
