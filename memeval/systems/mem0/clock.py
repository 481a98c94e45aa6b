"""Where a mem0 run's time goes: filling mem0 (its `add()` calls), split into the embedding
they waited for and mem0's own work (its FAISS writes, its history database), and its wipes.
A slow fill is then seen to be mem0's or the embedder's, not guessed at."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memeval.utils.stopwatch import Stopwatch


class Mem0Clock:
    """Time in mem0's `add()` and `delete_all()`, kept in `notes["time"]` after each; `embedding`
    is the embedder slot's own watch."""

    def __init__(self, embedding: Stopwatch, notes: dict[str, Any]) -> None:
        self.embedding = embedding
        self.notes = notes
        self.adds = 0
        self.filling = Stopwatch()
        self.embedded_filling = 0.0  # of `filling`, spent embedding
        self.wipes = 0
        self.wiping = Stopwatch()

    @contextmanager
    def adding(self, count: int = 1) -> Iterator[None]:
        """`count` texts going into mem0 (0: only embedding ahead of their `add()`)."""
        before = self.embedding.seconds
        try:
            with self.filling.running():
                yield
        finally:
            self.embedded_filling += self.embedding.seconds - before
            self.adds += count
            self.notes["time"] = self.note()

    @contextmanager
    def wipe(self) -> Iterator[None]:
        try:
            with self.wiping.running():
                yield
        finally:
            self.wipes += 1
            self.notes["time"] = self.note()

    def note(self) -> str:
        """The split, as the run's notes show it."""
        own = self.filling.seconds - self.embedded_filling
        said = (f"{self.adds} add() in {self.filling.seconds:.1f} s: "
                f"{self.embedded_filling:.1f} s embedding, {own:.1f} s mem0's own")
        if self.wipes:
            said += f"; {self.wipes} delete_all() in {self.wiping.seconds:.1f} s"
        return said
