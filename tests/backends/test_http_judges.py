"""Anthropic and OpenAI-compatible judges against loopback servers speaking each wire format."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from memeval.backends.judges.anthropic import AnthropicJudge, AnthropicJudgeConfig
from memeval.backends.judges.base import JUDGES, NOT_SENT, JudgeError
from memeval.backends.judges.http_judge import CACHE_FILE, CACHE_TABLE
from memeval.backends.judges.openai_chat import OpenAIChatJudge, OpenAIChatJudgeConfig
from memeval.backends.judges.prompt import (
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    build_messages,
    parse_verdict,
)
from memeval.entry import Entry
from memeval.registry import ConfigError
from memeval.utils.kvcache import SqliteKV
from tests.loopback import LoopbackServer, Received, Reply, scripted

KEY_ENV = "MEMEVAL_TEST_JUDGE_KEY"
ENTRY = Entry(id="e1", user_prompt="Where is the retry config?", assistant_response="")
USER = "Where is the retry config?"
ASSISTANT = "Retries live in conf/judge/anthropic.yaml as max_retries: 3."
MEMORY = "Judge retries are configured in conf/judge/anthropic.yaml via max_retries (default 3)."


def anthropic_reply(text: str, tin: int = 10, tout: int = 5) -> Reply:
    return Reply(
        200,
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": tin, "output_tokens": tout},
        },
    )


def openai_reply(text: str | None, tin: int = 10, tout: int = 5) -> Reply:
    return Reply(
        200,
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "local-test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
        },
    )


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def anthropic(srv: LoopbackServer, **overrides: Any) -> AnthropicJudge:
    cache_dir = overrides.pop("cache_dir", None)
    sleep = overrides.pop("sleep", Sleeps())
    overrides.setdefault("model", "claude-test")
    overrides.setdefault("api_key_env", KEY_ENV)
    cfg = AnthropicJudgeConfig(base_url=srv.base_url, **overrides)
    cfg.validate()
    return AnthropicJudge(cfg, cache_dir=cache_dir, sleep=sleep)


def openai(srv: LoopbackServer, **overrides: Any) -> OpenAIChatJudge:
    cache_dir = overrides.pop("cache_dir", None)
    sleep = overrides.pop("sleep", Sleeps())
    overrides.setdefault("model", "local-test")
    cfg = OpenAIChatJudgeConfig(base_url=f"{srv.base_url}/v1", **overrides)
    cfg.validate()
    return OpenAIChatJudge(cfg, cache_dir=cache_dir, sleep=sleep)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, "sk-test-123")
    return "sk-test-123"


# -- prompt ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("SKIP", (True, None)),
        ("  SKIP  ", (True, None)),
        ("\nSKIP\n", (True, None)),
        ("SKIP\nThis is only narration.", (True, None)),
        ("SKIP because it is a status update", (True, None)),
        ("SKIP\r\n(windows line ending)", (True, None)),
        ("SKIPPED the tests", (False, "SKIPPED the tests")),
        ("SKIP.", (False, "SKIP.")),
        # Lower case is not SKIP by design: the prompt demands the literal token, and genuine
        # memories may start with the word ("skip_validation in settings.py ...").
        ("skip", (False, "skip")),
        ("Skip lists in src/index.rs use 16 levels.",
         (False, "Skip lists in src/index.rs use 16 levels.")),
        (f"  {MEMORY}\n", (False, MEMORY)),
        ("", (False, None)),
    ],
)
def test_parse_verdict(reply: str, expected: tuple[bool, str | None]) -> None:
    assert parse_verdict(reply) == expected


def test_build_messages_carries_both_texts_and_the_gate() -> None:
    system, user = build_messages(USER, ASSISTANT)
    assert system == SYSTEM_PROMPT
    assert "SKIP" in system and "2 to 6 sentences" in system and "Let me check" in system
    assert USER in user and ASSISTANT in user
    assert user.index(USER) < user.index(ASSISTANT)
    assert PROMPT_VERSION


# -- Anthropic wire format ------------------------------------------------------------------


def test_anthropic_keep_verdict_headers_body_and_cost() -> None:
    with LoopbackServer(lambda req: anthropic_reply(f"  {MEMORY}\n", 1200, 80)) as srv:
        judge = anthropic(srv, price_input_per_mtok=3.0, price_output_per_mtok=15.0,
                          max_tokens=300)
        verdict = judge.judge(ENTRY, USER, ASSISTANT)
        req = srv.requests[0]
    assert verdict.skip is False
    assert verdict.memory == MEMORY
    assert verdict.model == "anthropic:claude-test"
    assert (verdict.input_tokens, verdict.output_tokens) == (1200, 80)
    assert verdict.cost_usd == pytest.approx(1200 * 3 / 1e6 + 80 * 15 / 1e6)
    assert verdict.latency_ms > 0 and verdict.cached is False
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "sk-test-123"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert req.headers["content-type"] == "application/json"
    assert "authorization" not in req.headers
    assert req.body["model"] == "claude-test"
    assert req.body["max_tokens"] == 300
    assert req.body["system"] == SYSTEM_PROMPT
    assert req.body["messages"] == [{"role": "user", "content": build_messages(USER, ASSISTANT)[1]}]
    assert "temperature" not in req.body  # None = not sent, like the seed daemon


def test_anthropic_skip_verdict_and_temperature_sent_when_set() -> None:
    with LoopbackServer(lambda req: anthropic_reply("SKIP")) as srv:
        verdict = anthropic(srv, temperature=0.0).judge(ENTRY, USER, "Let me check the file.")
        assert srv.requests[0].body["temperature"] == 0.0
    assert verdict.skip is True and verdict.memory is None and verdict.raw == "SKIP"


def test_anthropic_joins_text_blocks_and_ignores_others() -> None:
    reply = anthropic_reply("")
    reply.json_body["content"] = [
        {"type": "thinking", "thinking": "SKIP? no", "signature": "x"},
        {"type": "text", "text": "Config lives in "},
        {"type": "text", "text": "conf/app.yaml."},
    ]
    with LoopbackServer(lambda req: reply) as srv:
        verdict = anthropic(srv).judge(ENTRY, USER, ASSISTANT)
    assert verdict.memory == "Config lives in conf/app.yaml."


def test_missing_api_key_raises_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with LoopbackServer(lambda req: anthropic_reply("SKIP")) as srv:
        judge = anthropic(srv)  # building is fine: the key is only needed at first use
        with pytest.raises(JudgeError, match=KEY_ENV):
            judge.judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 0


def test_429_retry_after_then_success() -> None:
    sleeps = Sleeps()
    responder = scripted(
        [Reply(429, {"type": "error", "error": {"type": "rate_limit_error"}},
               headers={"retry-after": "4"})],
        anthropic_reply(MEMORY),
    )
    with LoopbackServer(responder) as srv:
        verdict = anthropic(srv, sleep=sleeps).judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 2
    assert verdict.memory == MEMORY
    assert sleeps.calls == [4.0]


def test_503_exhausted_raises_judge_error_naming_url() -> None:
    sleeps = Sleeps()
    with LoopbackServer(lambda req: Reply(503, {"error": "overloaded"})) as srv:
        judge = anthropic(srv, max_retries=2, sleep=sleeps)
        with pytest.raises(JudgeError) as info:
            judge.judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 3
    message = str(info.value)
    assert f"{srv.base_url}/v1/messages" in message
    assert "503" in message and "3 attempt" in message and "'e1'" in message
    assert len(sleeps.calls) == 2


def test_non_retryable_400_raises_at_once() -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad model"}}
    with LoopbackServer(lambda req: Reply(400, body)) as srv:
        judge = anthropic(srv, max_retries=5)
        with pytest.raises(JudgeError, match="bad model"):
            judge.judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 1


def test_timeout_becomes_judge_error() -> None:
    with LoopbackServer(lambda req: Reply(200, {}, delay_s=1.0)) as srv:
        judge = anthropic(srv, timeout_s=0.2, max_retries=1)
        with pytest.raises(JudgeError, match="ReadTimeout"):
            judge.judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 2


def test_malformed_and_empty_replies_are_judge_errors() -> None:
    with (
        LoopbackServer(lambda req: Reply(200, {"unexpected": True})) as srv,
        pytest.raises(JudgeError, match="unexpected response shape"),
    ):
        anthropic(srv).judge(ENTRY, USER, ASSISTANT)
    with (
        LoopbackServer(lambda req: anthropic_reply("   ")) as srv,
        pytest.raises(JudgeError, match="blank reply"),
    ):
        anthropic(srv).judge(ENTRY, USER, ASSISTANT)


@pytest.mark.bad_input
@pytest.mark.parametrize(("text", "said"), [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
    ('{"content": [{"type": "text", "text": "KEEP"}], "usage": {"input_tokens": NaN}}',
     "NaN where JSON allows only numbers"),
], ids=["deep", "nan"])
def test_a_hostile_reply_is_one_judge_error_line(text: str, said: str) -> None:
    with (
        LoopbackServer(lambda req: Reply(200, text=text)) as srv,
        pytest.raises(JudgeError) as info,
    ):
        anthropic(srv, max_retries=0).judge(ENTRY, USER, ASSISTANT)
    assert said in str(info.value) and "\n" not in str(info.value)


# -- OpenAI-compatible wire format -----------------------------------------------------------


def test_openai_keep_verdict_headers_body_and_tokens() -> None:
    with LoopbackServer(lambda req: openai_reply(MEMORY, 900, 40)) as srv:
        judge = openai(srv, api_key_env=KEY_ENV, price_input_per_mtok=0.5,
                       price_output_per_mtok=1.5)
        verdict = judge.judge(ENTRY, USER, ASSISTANT)
        req = srv.requests[0]
    assert verdict.skip is False and verdict.memory == MEMORY
    assert verdict.model == "openai_chat:local-test"
    assert (verdict.input_tokens, verdict.output_tokens) == (900, 40)
    assert verdict.cost_usd == pytest.approx(900 * 0.5 / 1e6 + 40 * 1.5 / 1e6)
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test-123"
    system, user = build_messages(USER, ASSISTANT)
    assert req.body["model"] == "local-test"
    assert req.body["messages"] == [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
    assert req.body["max_tokens"] == 1024
    assert "temperature" not in req.body


def test_openai_without_key_sends_no_authorization_and_parses_skip() -> None:
    with LoopbackServer(lambda req: openai_reply("SKIP\nOnly navigation.")) as srv:
        verdict = openai(srv, temperature=0.3).judge(ENTRY, USER, "Let me check the tests.")
        req = srv.requests[0]
    assert verdict.skip is True and verdict.memory is None
    assert "authorization" not in req.headers
    assert req.body["temperature"] == 0.3
    assert verdict.cost_usd == 0.0  # local server: no prices configured


def test_openai_named_but_unset_key_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with LoopbackServer(lambda req: openai_reply("SKIP")) as srv:
        with pytest.raises(JudgeError, match=KEY_ENV):
            openai(srv, api_key_env=KEY_ENV).judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 0


def test_openai_missing_usage_counts_zero_tokens() -> None:
    reply = openai_reply(MEMORY)
    del reply.json_body["usage"]
    with LoopbackServer(lambda req: reply) as srv:
        verdict = openai(srv, price_input_per_mtok=1.0).judge(ENTRY, USER, ASSISTANT)
    assert (verdict.input_tokens, verdict.output_tokens, verdict.cost_usd) == (0, 0, 0.0)
    assert verdict.memory == MEMORY


def test_openai_null_content_is_a_blank_reply_error() -> None:
    with (
        LoopbackServer(lambda req: openai_reply(None)) as srv,
        pytest.raises(JudgeError, match="blank reply"),
    ):
        openai(srv).judge(ENTRY, USER, ASSISTANT)


# -- response cache -------------------------------------------------------------------------


def test_cache_hit_makes_no_request_and_replays_offline(tmp_path: Path) -> None:
    srv = LoopbackServer(lambda req: anthropic_reply(MEMORY, 500, 60)).start()
    try:
        judge = anthropic(srv, cache_dir=tmp_path, price_input_per_mtok=1.0,
                          price_output_per_mtok=5.0)
        first = judge.judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 1 and first.cached is False and first.cost_usd > 0
        second = judge.judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 1  # served from the cache
        assert second.cached is True
        assert second.latency_ms == 0.0 and second.cost_usd == 0.0
        assert (second.skip, second.memory, second.raw) == (first.skip, first.memory, first.raw)
        assert (second.input_tokens, second.output_tokens) == (500, 60)
        judge.close()
        base_url = srv.base_url
    finally:
        srv.stop()

    # A fresh judge built through the registry, same cache dir, server gone, no key: replays.
    replay = JUDGES.build(
        {"name": "anthropic", "model": "claude-test", "base_url": base_url,
         "api_key_env": KEY_ENV, "max_retries": 0},
        cache_dir=tmp_path,
    )
    assert isinstance(replay, AnthropicJudge)
    offline = replay.judge(ENTRY, USER, ASSISTANT)
    assert offline.cached is True and offline.memory == MEMORY
    # ...and the server really is gone: an uncached turn cannot be judged.
    with pytest.raises(JudgeError, match="ConnectError"):
        replay.judge(ENTRY, USER, "A different assistant reply about src/main.py.")
    assert (tmp_path / "judge.sqlite").exists()


def test_cache_key_separates_models_and_cache_can_be_disabled(tmp_path: Path) -> None:
    with LoopbackServer(lambda req: openai_reply(MEMORY)) as srv:
        openai(srv, cache_dir=tmp_path).judge(ENTRY, USER, ASSISTANT)
        openai(srv, cache_dir=tmp_path, model="other-model").judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 2  # a different model is a different cache entry
        openai(srv, cache_dir=tmp_path, max_tokens=64).judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 3  # so is a different max_tokens
        again = openai(srv, cache_dir=tmp_path).judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 3 and again.cached is True
        uncached = openai(srv, cache_dir=tmp_path, cache=False).judge(ENTRY, USER, ASSISTANT)
        assert srv.hits == 4 and uncached.cached is False


def test_a_reply_is_redacted_before_it_is_cached_or_returned(tmp_path: Path) -> None:
    """A model may write a key it was never sent: an answer or a rewrite holding one is stored
    and served redacted, and a raw reply an older cache holds is served redacted too."""
    key = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz"
    with LoopbackServer(lambda req: openai_reply(f"The deploy token is {key}.")) as srv:
        judge = openai(srv, cache_dir=tmp_path)
        done = judge.complete("system", "question")
        older = SqliteKV(tmp_path / CACHE_FILE, CACHE_TABLE)
        older.put(judge.cache_key("system", "other question"),
                  json.dumps({"text": key, "input_tokens": 1, "output_tokens": 1}).encode())
        older.close()
        replayed = judge.complete("system", "other question")
        judge.close()
        cache = SqliteKV(tmp_path / CACHE_FILE, CACHE_TABLE)
        stored = cache.get(judge.cache_key("system", "question"))
        cache.close()
        assert srv.hits == 1
    assert done.text == "The deploy token is [REDACTED:github_token]."
    assert stored is not None and json.loads(stored)["text"] == done.text
    assert replayed.cached and replayed.text == "[REDACTED:github_token]"


def test_errors_are_not_cached(tmp_path: Path) -> None:
    responder = scripted([Reply(400, {"error": "nope"})], openai_reply(MEMORY))
    with LoopbackServer(responder) as srv:
        judge = openai(srv, cache_dir=tmp_path)
        with pytest.raises(JudgeError):
            judge.judge(ENTRY, USER, ASSISTANT)
        verdict = judge.judge(ENTRY, USER, ASSISTANT)
        assert verdict.cached is False and verdict.memory == MEMORY and srv.hits == 2


# -- registry -------------------------------------------------------------------------------


def test_registered_with_documented_defaults() -> None:
    a = JUDGES.validate({"name": "anthropic"})
    assert (a.base_url, a.api_key_env, a.temperature) == (
        "https://api.anthropic.com", "ANTHROPIC_API_KEY", None)
    o = JUDGES.validate({"name": "openai_chat"})
    assert (o.base_url, o.api_key_env) == ("http://127.0.0.1:8080/v1", None)


def test_factory_passes_sleep_dep(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps = Sleeps()
    responder = scripted([Reply(500, {})], openai_reply("SKIP"))
    with LoopbackServer(responder) as srv:
        judge = JUDGES.build(
            {"name": "openai_chat", "model": "m", "base_url": f"{srv.base_url}/v1"},
            sleep=sleeps,
            unrelated_dep=object(),
        )
        assert judge.judge(ENTRY, USER, ASSISTANT).skip is True
    assert len(sleeps.calls) == 1


def test_received_type_is_what_the_server_saw() -> None:
    # Guard for the fixture itself: a non-JSON body is kept as text.
    import httpx

    with LoopbackServer(lambda req: Reply(200, {})) as srv:
        httpx.post(f"{srv.base_url}/raw", content=b"not json")
        seen: Received = srv.requests[0]
    assert seen.body == "not json" and seen.path == "/raw"


# -- failure reasons ------------------------------------------------------------------------

BLANK = {"anthropic": anthropic_reply("  \n"), "openai": openai_reply("")}
# what each failing server answers, and the words its reason must carry
FAILURES: dict[str, tuple[Reply | None, str]] = {
    "500 always": (Reply(500, {"error": "boom"}), "HTTP 500 Internal Server Error after 2 attempt"),
    "malformed JSON": (Reply(200, text='{"content": [{"type": "text"'),
                       "HTTP 200 with a body that is not JSON"),
    "empty body": (Reply(200, text=""), "HTTP 200 with an empty body"),
    "wrong shape": (Reply(200, {"result": "SKIP"}), "unexpected response shape"),
    "blank reply": (None, "blank reply"),  # per wire format: BLANK
    "401": (Reply(401, {"error": {"type": "authentication_error", "message": "invalid key"}}),
            f"HTTP 401 Unauthorized from URL: check the key in {KEY_ENV}"),
}
PROVIDERS = {"anthropic": (anthropic, "/v1/messages"), "openai": (openai, "/v1/chat/completions")}


@pytest.mark.faults
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_every_failure_has_a_reason_naming_the_url_and_no_entry(provider: str, mode: str) -> None:
    reply, words = FAILURES[mode]
    build, path = PROVIDERS[provider]
    answer = reply if reply is not None else BLANK[provider]
    with LoopbackServer(lambda req: answer) as srv:
        judge = build(srv, max_retries=1, api_key_env=KEY_ENV)
        url = f"{srv.base_url}{path}"
        with pytest.raises(JudgeError) as info:
            judge.judge(ENTRY, USER, ASSISTANT)
    reason = info.value.reason
    assert words.replace("URL", url) in reason and url in reason
    assert "e1" not in reason  # the same failure on every entry counts as one reason
    assert "'e1'" in str(info.value)  # the message still says which entry


def test_a_secret_a_server_echoes_is_redacted_from_the_reason() -> None:
    leaked = "sk-ant-api03-" + "Xy7" * 15
    body = {"error": {"message": f"invalid x-api-key {leaked}"}}
    with LoopbackServer(lambda req: Reply(401, body)) as srv, pytest.raises(JudgeError) as info:
        anthropic(srv).judge(ENTRY, USER, ASSISTANT)
    assert leaked not in info.value.reason and leaked not in str(info.value)
    assert "[REDACTED:anthropic_key]" in info.value.reason


# -- circuit breaker ------------------------------------------------------------------------


def turn(i: int) -> str:
    return f"Turn {i}: the retry settings live in conf/judge/anthropic.yaml ({i})."


@pytest.mark.faults
def test_a_hanging_server_trips_the_breaker_and_sees_no_more_requests() -> None:
    """breaker_after=3, max_retries=1: three entries time out (two requests each), then nothing
    is sent; the short-circuited entries fail at once, with a reason saying so."""
    with LoopbackServer(lambda req: Reply(200, {}, delay_s=2.0)) as srv:
        judge = openai(srv, timeout_s=0.2, max_retries=1, breaker_after=3)
        reasons = []
        for i in range(12):
            with pytest.raises(JudgeError) as info:
                judge.judge(ENTRY, USER, turn(i))
            reasons.append(info.value.reason)
        # the client gives up after 0.2 s, maybe before the server's thread has read the last
        # request: wait for the handlers (each sleeps 2 s) rather than race them
        deadline = time.monotonic() + 5
        while srv.hits < 3 * 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.hits == 3 * 2
    assert all("ReadTimeout after 2 attempt(s)" in r and "judge.timeout_s" in r for r in reasons)
    assert not any(r.startswith(NOT_SENT) for r in reasons[:3])
    assert all(r == NOT_SENT + reasons[2] for r in reasons[3:])


def test_a_verdict_between_failures_resets_the_breaker_and_0_turns_it_off() -> None:
    down = Reply(503, {"error": "overloaded"})
    pattern = [down, down, openai_reply("SKIP")] * 3  # never 3 failures in a row
    with LoopbackServer(scripted(pattern, openai_reply("SKIP"))) as srv:
        judge = openai(srv, max_retries=0, breaker_after=3)
        outcomes = []
        for i in range(9):
            try:
                outcomes.append(judge.judge(ENTRY, USER, turn(i)).skip)
            except JudgeError:
                outcomes.append(None)
        assert srv.hits == 9 and outcomes == [None, None, True] * 3
    with LoopbackServer(lambda req: down) as srv:
        judge = openai(srv, max_retries=0, breaker_after=0)
        for i in range(8):
            with pytest.raises(JudgeError):
                judge.judge(ENTRY, USER, turn(i))
        assert srv.hits == 8


def test_an_open_breaker_still_serves_cached_verdicts(tmp_path: Path) -> None:
    healthy = [openai_reply(MEMORY)]
    with LoopbackServer(scripted(healthy, Reply(503, {}))) as srv:
        judge = openai(srv, cache_dir=tmp_path, max_retries=0, breaker_after=2)
        assert judge.judge(ENTRY, USER, turn(0)).memory == MEMORY
        for i in (1, 2, 3):
            with pytest.raises(JudgeError):
                judge.judge(ENTRY, USER, turn(i))
        again = judge.judge(ENTRY, USER, turn(0))
        assert srv.hits == 3  # one verdict, two failures; the rest never sent
    assert again.cached and again.memory == MEMORY


def test_breaker_after_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="breaker_after"):
        OpenAIChatJudgeConfig(breaker_after=-1).validate()


# -- preflight ------------------------------------------------------------------------------


@pytest.mark.bad_input
def test_preflight_without_the_key_names_the_variable_and_sends_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with LoopbackServer(lambda req: anthropic_reply("OK")) as srv:
        with pytest.raises(ConfigError) as info:
            anthropic(srv).preflight()
        assert srv.hits == 0
    message = str(info.value)
    assert f"environment variable {KEY_ENV} is not set" in message
    assert "judge.api_key_env" in message and "judge.preflight=false" in message


@pytest.mark.bad_input
def test_preflight_401_names_the_key_variable() -> None:
    body = {"type": "error", "error": {"type": "authentication_error"}}
    with LoopbackServer(lambda req: Reply(401, body)) as srv:
        with pytest.raises(ConfigError) as info:
            anthropic(srv).preflight()
        assert srv.hits == 1
    assert (f"HTTP 401 Unauthorized from {srv.base_url}/v1/messages: check the key in {KEY_ENV}"
            in str(info.value))


@pytest.mark.faults
def test_preflight_unreachable_names_the_url_and_the_setting() -> None:
    srv = LoopbackServer(lambda req: openai_reply("OK")).start()
    srv.stop()
    with pytest.raises(ConfigError) as info:
        openai(srv, max_retries=0).preflight()
    message = str(info.value)
    assert f"ConnectError after 1 attempt(s) from {srv.base_url}/v1/chat/completions" in message
    assert "is the server running? check judge.base_url" in message


@pytest.mark.faults
def test_preflight_rejects_a_reply_of_the_wrong_shape() -> None:
    with (
        LoopbackServer(lambda req: Reply(200, {"result": "OK"})) as srv,
        pytest.raises(ConfigError, match="unexpected response shape"),
    ):
        openai(srv).preflight()


def test_preflight_is_one_tiny_request_and_can_be_turned_off() -> None:
    with LoopbackServer(lambda req: anthropic_reply("OK", 12, 1)) as srv:
        anthropic(srv).preflight()
        assert srv.hits == 1 and srv.requests[0].body["max_tokens"] == 1
        anthropic(srv, preflight=False).preflight()
        assert srv.hits == 1
    srv.stop()
    anthropic(srv, preflight=False).preflight()  # no server, no check, no error
