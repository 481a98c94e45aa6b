"""mem0's clock: the time its add() calls took, split into the embedding they waited for and
mem0's own work, as the run's notes say it."""

from __future__ import annotations

from typing import Any

import pytest

from memeval.systems.mem0.clock import Mem0Clock
from memeval.utils.stopwatch import Stopwatch


def test_embedding_inside_adds_is_kept_apart_from_mem0_s_own_time() -> None:
    embedding, notes = Stopwatch(), dict[str, Any]()
    clock = Mem0Clock(embedding, notes)
    embedding.seconds = 5.0  # a search's embedding, before: not the fill's
    with clock.adding(0):  # texts embedded ahead of their adds
        embedding.seconds += 2.0
    for _ in range(3):
        with clock.adding():
            pass
    assert clock.adds == 3 and clock.embedded_filling == pytest.approx(2.0)
    assert clock.filling.seconds >= 0.0 and notes["time"] == clock.note()
    own = clock.filling.seconds - 2.0
    assert clock.note() == (f"3 add() in {clock.filling.seconds:.1f} s: 2.0 s embedding, "
                            f"{own:.1f} s mem0's own")


def test_a_failed_add_or_wipe_is_still_counted() -> None:
    notes: dict[str, Any] = {}
    clock = Mem0Clock(Stopwatch(), notes)
    for part in (clock.adding(), clock.wipe()):
        with pytest.raises(RuntimeError), part:
            raise RuntimeError("mem0 failed")
    assert clock.adds == 1 and clock.wipes == 1
    assert notes["time"].endswith("; 1 delete_all() in 0.0 s")
