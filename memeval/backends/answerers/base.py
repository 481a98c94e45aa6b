"""The answerer contract of memory QA, and how recalled memories are shown to one.

Memories are shown as mem0's answer prompt shows them: one per line, each with the date it was
written, best first, so a question about time can be answered from the dates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memeval.registry import Registry


@dataclass(frozen=True)
class Recalled:
    """A memory the system returned for the question, as the answerer sees it."""

    text: str
    written: datetime | None


@dataclass(frozen=True)
class Answer:
    """An answer and what it cost; `error` says why there is none ("" when there is)."""

    text: str
    latency_ms: float
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    error: str = ""


class Answerer(Protocol):
    name: str

    def answer(self, question: str, memories: Sequence[Recalled]) -> Answer: ...

    def close(self) -> None: ...


def when(moment: datetime | None) -> str:
    """A date as LoCoMo's gold answers write them: `7 May 2023`."""
    return "" if moment is None else f"{moment.day} {moment:%B %Y}"


def context(memories: Sequence[Recalled]) -> str:
    """The memories as the answerer is given them: one line each, dated where known."""
    return "\n".join(f"- [{when(m.written)}] {m.text}" if m.written else f"- {m.text}"
                     for m in memories)


ANSWERERS: Registry[Answerer] = Registry("answerer")
