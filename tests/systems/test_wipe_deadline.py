"""A system that keeps its memories itself wipes them one by one (mem0 does): the wipe's
deadline counts the turns its ingestors fed it since the last wipe, whichever ingestor did."""

from __future__ import annotations

import time
from pathlib import Path

from memeval.entry import Entry
from memeval.systems.boundary import guarded
from memeval.systems.deadline import Limits
from tests.systems.fakes import KeepAll, KeepAllSystem

WIPE_S = 0.02  # per memory


class SlowWipe(KeepAll):
    def restart(self, wipe_memories: bool = True) -> None:
        if wipe_memories:
            time.sleep(WIPE_S * len(self.held))
            self.held.clear()


class SharedMemory(KeepAllSystem):
    """Every ingestor stores into the one memory the system keeps."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[str] = []

    def ingestor(self, state_dir: Path) -> SlowWipe:
        made = SlowWipe(state_dir)
        made.memories = self.held
        made.held = self.held  # type: ignore[attr-defined]
        return made


def test_a_wipe_of_what_another_ingestor_stored_gets_time_per_turn(tmp_path: Path) -> None:
    system = guarded(SharedMemory, "shared", Limits(call_s=0.3, item_s=0.05))
    turns = [Entry(f"t{i}", "", "x" * 100) for i in range(40)]  # a 0.8 s wipe: over 0.3 s
    first = system.ingestor(tmp_path / "a")
    first.restart(wipe_memories=True)
    assert len(list(first.run_pass(first.prepare(turns), 1))) == 40
    second = system.ingestor(tmp_path / "b")
    started = time.perf_counter()
    second.restart(wipe_memories=True)  # within 0.3 + 0.05·40 s
    assert time.perf_counter() - started >= WIPE_S * 40
    second.restart(wipe_memories=True)  # nothing held now: the bare deadline, met
    system.close()
