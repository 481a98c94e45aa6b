"""Memory QA's LLM-judge accuracy (J): one of memeval's LLM backends labels each answer CORRECT
or WRONG against the gold answer, with mem0's rubric (prompts.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memeval.backends.answerers.llm import built_backend, llm_backend
from memeval.backends.answerers.prompts import GRADE_SYSTEM, GRADE_USER
from memeval.backends.judges.base import JudgeError
from memeval.backends.judges.http_judge import HttpJudge
from memeval.registry import Registry

LABEL = re.compile(r'"label"\s*:\s*"(CORRECT|WRONG)"', re.IGNORECASE)
BARE = re.compile(r"\b(CORRECT|WRONG)\b")


@dataclass(frozen=True)
class Grade:
    correct: bool | None  # None: no label (`error` says why)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    error: str = ""


def read_label(reply: str) -> bool | None:
    """The JSON label; failing that, the one bare label the reply holds; else None."""
    found = LABEL.findall(reply)
    if len({f.upper() for f in found}) == 1:
        return found[-1].upper() == "CORRECT"
    try:
        data = json.loads(reply)
    except ValueError:
        data = None
    if isinstance(data, dict) and str(data.get("label", "")).upper() in ("CORRECT", "WRONG"):
        return str(data["label"]).upper() == "CORRECT"
    bare = set(BARE.findall(reply))
    return bare.pop() == "CORRECT" if len(bare) == 1 else None


class Grader(Protocol):
    name: str | None  # None: no grader, so no J

    def grade(self, question: str, gold: str, answer: str) -> Grade | None: ...

    def close(self) -> None: ...


GRADERS: Registry[Grader] = Registry("grader")


@dataclass
class NoGraderConfig:
    pass


class NoGrader:
    name: str | None = None

    def grade(self, question: str, gold: str, answer: str) -> Grade | None:
        return None

    def close(self) -> None:
        """Nothing held."""


@dataclass
class LlmGraderConfig:
    backend: dict[str, Any] = field(default_factory=lambda: {"name": "openai_chat"})

    def validate(self) -> None:
        llm_backend(self.backend, "experiment.grader.backend")


class LlmGrader:
    def __init__(self, backend: HttpJudge) -> None:
        self.backend = backend
        self.name: str | None = backend.name

    def grade(self, question: str, gold: str, answer: str) -> Grade:
        user = GRADE_USER.format(question=question, gold=gold, answer=answer)
        try:
            done = self.backend.complete(GRADE_SYSTEM, user, expected="a CORRECT/WRONG label")
        except JudgeError as err:
            return Grade(None, error=err.reason)
        label = read_label(done.text)
        return Grade(label, done.input_tokens, done.output_tokens, done.cost_usd,
                     "" if label is not None else "no CORRECT/WRONG label in the reply")

    def close(self) -> None:
        self.backend.close()


@GRADERS.register("none", NoGraderConfig)
def build_no_grader(cfg: NoGraderConfig, **_: object) -> NoGrader:
    return NoGrader()


@GRADERS.register("llm", LlmGraderConfig)
def build_llm_grader(cfg: LlmGraderConfig, *, cache_dir: Path | None = None,
                     **_: object) -> LlmGrader:
    return LlmGrader(built_backend(cfg.backend, cache_dir, "experiment.grader"))
