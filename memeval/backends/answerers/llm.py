"""`answerer=llm`: the recalled memories and the question go to one of memeval's LLM backends
(`anthropic`, `openai_chat`: the judge backends, with their retries, cache, preflight and
circuit breaker), with memory QA's answer prompt (prompts.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memeval.backends.answerers.base import ANSWERERS, Answer, Recalled, context
from memeval.backends.answerers.prompts import ANSWER_SYSTEM, ANSWER_USER
from memeval.backends.judges.base import JUDGES, JudgeError
from memeval.backends.judges.http_judge import HttpJudge, HttpJudgeConfig
from memeval.registry import ConfigError


def llm_backend(node: dict[str, Any], key: str) -> HttpJudgeConfig:
    """The node's settings, once it names an LLM backend (a judge that calls a model)."""
    params = JUDGES.validate(node, key)
    if not isinstance(params, HttpJudgeConfig):
        raise ValueError(f"{key} must name an LLM backend (anthropic or openai_chat), not "
                         f"'{node.get('name')}'")
    return params


def built_backend(node: dict[str, Any], cache_dir: Path | None, what: str) -> HttpJudge:
    """The backend, its key and endpoint checked before any work (its preflight)."""
    backend = JUDGES.build(node, cache_dir=cache_dir)
    assert isinstance(backend, HttpJudge)  # llm_backend() refused any other
    try:
        backend.preflight()
    except ConfigError as err:
        raise ConfigError(f"{what}: {err}") from None
    return backend


@dataclass
class LlmAnswererConfig:  # memeval/conf/answerer/llm.yaml composes a judge option as `backend`
    backend: dict[str, Any] = field(default_factory=lambda: {"name": "openai_chat"})

    def validate(self) -> None:
        llm_backend(self.backend, "experiment.answerer.backend")


class LlmAnswerer:
    def __init__(self, backend: HttpJudge) -> None:
        self.backend = backend
        self.name = f"llm:{backend.name}"

    def answer(self, question: str, memories: Sequence[Recalled]) -> Answer:
        user = ANSWER_USER.format(memories=context(memories) or "(none)", question=question)
        try:
            done = self.backend.complete(ANSWER_SYSTEM, user, expected="an answer")
        except JudgeError as err:
            return Answer("", 0.0, error=err.reason)
        return Answer(done.text.strip(), done.latency_ms, done.input_tokens, done.output_tokens,
                      done.cost_usd, done.cached)

    def close(self) -> None:
        self.backend.close()


@ANSWERERS.register("llm", LlmAnswererConfig)
def build_llm_answerer(cfg: LlmAnswererConfig, *, cache_dir: Path | None = None,
                       **_: object) -> LlmAnswerer:
    return LlmAnswerer(built_backend(cfg.backend, cache_dir, "experiment.answerer"))
