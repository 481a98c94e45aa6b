"""A server that never finishes its headers (a line every 0.5 s, so no single read ever times
out) ends every client memeval owns at its timeout_s, with that client's own error: judge,
answerer, embedder, daemon and Phoenix. Loopback only."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from memeval.backends.answerers.llm import LlmAnswerer
from memeval.backends.embedders.base import EmbeddingError
from memeval.backends.embedders.openai_http import OpenAIHttpConfig, OpenAIHttpEmbedder
from memeval.backends.judges.anthropic import AnthropicJudge, AnthropicJudgeConfig
from memeval.backends.judges.base import JudgeError
from memeval.backends.judges.openai_chat import OpenAIChatJudge, OpenAIChatJudgeConfig
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.otlp import ExportError, export_batch
from memeval.reporting.phoenix.rest import PhoenixError, PhoenixREST
from memeval.reporting.phoenix.stream import reachable
from memeval.systems.http.client import Daemon, DaemonError
from memeval.systems.http.mapping import HttpSystemConfig
from memeval.utils.http_deadline import BoundedClient
from tests.loopback import HeaderTrickler

pytestmark = [pytest.mark.faults, pytest.mark.slow]

TIMEOUT_S = 1.0  # twice the gap between header lines: only a deadline on the exchange ends it
ENDPOINT = {"timeout_s": TIMEOUT_S, "max_retries": 0, "preflight": False}


def judge(url: str) -> None:
    OpenAIChatJudge(OpenAIChatJudgeConfig(model="m", base_url=f"{url}/v1", cache=False,
                                          **ENDPOINT)).complete("system", "user")


def anthropic(url: str) -> None:
    AnthropicJudge(AnthropicJudgeConfig(base_url=url, cache=False, **ENDPOINT)
                   ).complete("system", "user")


def answerer(url: str) -> None:
    backend = OpenAIChatJudge(OpenAIChatJudgeConfig(model="m", base_url=f"{url}/v1",
                                                    cache=False, **ENDPOINT))
    answer = LlmAnswerer(backend).answer("Where is the retry config?", [])
    raise JudgeError(answer.error)  # an answerer records its backend's failure on the answer


def embedder(url: str) -> None:
    OpenAIHttpEmbedder(OpenAIHttpConfig(base_url=f"{url}/v1", **ENDPOINT)).embed(["a text"])


def daemon(url: str) -> None:
    cfg = HttpSystemConfig(base_url=url, timeout_s=TIMEOUT_S, max_retries=0)
    Daemon(cfg).call(cfg.search, "system.search", {"query": "q"})


def phoenix_rest(url: str) -> None:
    PhoenixREST(url, TIMEOUT_S).example_node_ids("d1")


def phoenix_spans(url: str) -> None:
    with BoundedClient() as client:
        export_batch(client, f"{url}/v1/traces", [], "memeval", timeout_s=TIMEOUT_S,
                     max_bytes=10_000)


def phoenix_health(url: str) -> None:
    if not reachable(PhoenixConfig(endpoint=url, timeout_s=TIMEOUT_S)):
        raise PhoenixError("not healthy")


@pytest.mark.parametrize(("call", "error"), [
    (judge, JudgeError), (anthropic, JudgeError), (answerer, JudgeError),
    (embedder, EmbeddingError), (daemon, DaemonError), (phoenix_rest, PhoenixError),
    (phoenix_spans, ExportError), (phoenix_health, PhoenixError),
], ids=lambda v: getattr(v, "__name__", ""))
def test_headers_that_never_end_fail_the_call_at_its_timeout(
        call: Callable[[str], None], error: type[Exception],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with HeaderTrickler(every_s=0.5) as server:
        started = time.monotonic()
        with pytest.raises(error) as failed:
            call(server.base_url)
        took = time.monotonic() - started
    assert server.hits == 1
    assert took < TIMEOUT_S + 1.0  # a plain httpx client would wait for ever
    if call is not phoenix_health:  # a health check only says no
        assert f"no whole answer within {TIMEOUT_S:g} s" in str(failed.value)
