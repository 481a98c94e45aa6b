"""The judge contract: one verdict per entry, with its cost accounted for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from memeval.entry import Entry
from memeval.registry import Registry

# How the reason of a verdict the circuit breaker never asked for begins.
NOT_SENT = "not sent (circuit breaker open): "


class JudgeError(RuntimeError):
    """The judge gave no verdict (unreachable, timed out after retries, bad response).

    `reason` says why in one line that names no entry, so a run's failures count by it.
    """

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


@dataclass(frozen=True)
class Verdict:
    """SKIP or keep; `memory` is the judge's rewritten memory text when it produced one."""

    skip: bool
    model: str
    memory: str | None = None
    latency_ms: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    raw: str = ""


class Judge(Protocol):
    """`user_prompt`/`assistant_text` are already redacted; `entry` gives oracles the label."""

    name: str

    def judge(self, entry: Entry, user_prompt: str, assistant_text: str) -> Verdict: ...


JUDGES: Registry[Judge] = Registry("judge")
