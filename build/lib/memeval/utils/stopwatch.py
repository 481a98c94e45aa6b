"""Seconds spent on one kind of work, summed over the blocks it ran in: how a run keeps loading,
scoring, metrics and checkpoints apart from the experiment's own time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Stopwatch:
    def __init__(self) -> None:
        self.seconds = 0.0

    @contextmanager
    def running(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - started
