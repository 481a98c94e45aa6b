"""A catalogue of broken memory systems, as an adversarial user would write them: each fault is
one method of an otherwise working system, chosen by `+system.settings.fault=NAME`.

    python -m memeval run +experiment=three_pass system=tests.systems.untrusted:build \
        +system.settings.fault=decision_nan system.call_timeout_s=1
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.quality.record import MemoryRecord
from memeval.systems.base import Capability, Hit, IndexedMemory
from tests.systems.fakes import KeepAll, WordOverlapSystem

SECRET = "sk-ant-api03-" + "Qm9vdHN0cmFwU2VjcmV0VG9rZW5Gb3JUZXN0aW5n" * 2  # planted in errors


def _endless() -> Iterator[Any]:
    while True:
        yield Hit("x", 1.0)


def _sleep() -> None:
    time.sleep(3600)


def _raise(err: BaseException) -> Callable[..., Any]:
    def raising(*_: Any, **__: Any) -> Any:
        raise err

    return raising


# fault -> (method, what it does instead)
SEARCH_FAULTS: dict[str, Callable[..., Any]] = {
    "search_raises": _raise(RuntimeError(f"index corrupt, key {SECRET}")),
    "search_exits": _raise(SystemExit(0)),
    "search_interrupts": _raise(KeyboardInterrupt()),
    "search_os_exit": lambda *_: os._exit(0),
    "search_none": lambda *_: None,
    "search_str": lambda *_: "m1",
    "search_dicts": lambda *_: [{"id": "m1", "score": 1.0}],
    "search_tuples": lambda *_: [("m1", 1.0)],
    "search_endless": lambda *_: _endless(),
    "search_sleeps": lambda *_: _sleep(),
}
INDEX_FAULTS: dict[str, Callable[..., Any]] = {
    "index_sleeps": lambda *_: _sleep(),
    "index_exits": _raise(SystemExit(0)),
}
SCORE_FAULTS: dict[str, Callable[[Sequence[MemoryRecord]], Any]] = {
    "scores_nan": lambda records: [math.nan for _ in records],
    "scores_short": lambda records: [50.0 for _ in records][1:],
    "scores_out_of_range": lambda records: [150.0 for _ in records],
    "scores_str": lambda records: ["50" for _ in records],
    "scores_endless": lambda records: iter(lambda: 50.0, None),
    "scores_exit": _raise(SystemExit(0)),
}
CONFLICT_FAULTS: dict[str, Callable[[str, str], Any]] = {
    "conflict_unknown": lambda a, b: "clash",
    "conflict_list": lambda a, b: ["contradiction"],
    "conflict_raises": _raise(ValueError("no model")),
}


class FaultyIngestor(KeepAll):
    """KeepAll's gate, with one of its answers broken."""

    def __init__(self, state_dir: Path, fault: str) -> None:
        super().__init__(state_dir)
        self.fault = fault

    def run_pass(self, items: Sequence[Entry], pass_no: int, phase: str = "eval"
                 ) -> Iterator[Decision]:
        fault = self.fault
        if fault == "run_pass_sleeps":
            _sleep()
        decisions = list(super().run_pass(items, pass_no, phase))
        if fault == "decisions_missing":
            decisions = decisions[:-1]
        elif fault == "decisions_extra":
            decisions.append(decisions[0])
        elif fault == "decisions_renamed":
            decisions[3] = replace(decisions[3], entry_id="someone-else")
        elif fault == "decisions_endless":
            while True:
                yield from decisions
        elif fault == "decision_nan":
            decisions[2].score = math.nan
        elif fault == "decision_relabelled":  # claims a kept substantive turn was noise
            decisions = [replace(d, label="noise") if d.retained else d for d in decisions]
        elif fault == "decision_kept_and_dropped":  # "filtered before the judge", yet kept
            decisions = [replace(d, outcome="length") for d in decisions]
        elif fault == "decision_not_a_decision":
            yield {"entry_id": decisions[0].entry_id}
        elif fault == "run_pass_exits":
            raise SystemExit(0)
        yield from decisions

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        state: dict[str, Any] = {"memories": len(self.memories)}
        if self.fault == "pass_state_nan":
            state["memories"] = math.nan
        elif self.fault == "pass_state_object":
            state["handle"] = object()
        elif self.fault == "pass_state_fakes_recall":
            state["substantive_recall"] = 0.123
        return state

    def learning_state(self) -> dict[str, Any]:
        return {"seen": {1, 2}} if self.fault == "learning_state_set" else {}


class Faulty(WordOverlapSystem):
    """Every capability, one of them broken."""

    name = "faulty"
    capabilities = frozenset(Capability) - {Capability.FREEZE}

    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        if fault == "notes_set":
            self.notes["seen"] = {"a", "b"}

    def ingestor(self, state_dir: Path) -> FaultyIngestor:
        if self.fault == "ingestor_raises":
            raise OSError(f"cannot open {state_dir} with password={SECRET}")
        return FaultyIngestor(state_dir, self.fault)

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        INDEX_FAULTS.get(self.fault, super().index)(memories)

    def search(self, query: str, k: int) -> Any:
        if self.fault == "search_unknown_ids":
            return [Hit("never-given", 1.0)]
        if self.fault == "search_nan":
            return [Hit(h.id, math.nan) for h in super().search(query, k)]
        return SEARCH_FAULTS.get(self.fault, super().search)(query, k)

    def score_records(self, records: Sequence[MemoryRecord]) -> Any:
        return SCORE_FAULTS.get(self.fault, super().score_records)(records)

    def detect_conflict(self, first: str, second: str) -> Any:
        return CONFLICT_FAULTS.get(self.fault, super().detect_conflict)(first, second)

    def record_outcome(self, memory_id: str, success: bool) -> None:
        pass

    def close(self) -> None:
        if self.fault == "close_raises":
            raise RuntimeError("could not flush")
        if self.fault == "close_exits":
            raise SystemExit(0)


def build(fault: str = "none") -> Any:
    if fault == "build_exits":
        raise SystemExit(0)
    if fault == "build_sleeps":
        _sleep()
    system = Faulty(fault)
    if fault == "capabilities_none":
        system.capabilities = None  # type: ignore[assignment]
    if fault == "notes_none":
        system.notes = None  # type: ignore[assignment]
    return system


def needs_a_setting(size: int) -> Faulty:
    """A factory given no `size`: its settings do not match its signature."""
    return Faulty("none")
