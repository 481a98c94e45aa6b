"""post_json against a real loopback server: retry policy, backoff, timeouts, error messages."""

from __future__ import annotations

import time

import pytest

from memeval.utils.http_deadline import BoundedClient
from memeval.utils.http_retry import (
    HttpRetryError,
    RetryPolicy,
    backoff_delay,
    explain_failure,
    post_json,
)
from tests.loopback import LoopbackServer, Reply, scripted

OK = Reply(200, {"ok": True})


class Sleeps:
    """Records requested waits instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def test_success_returns_json_latency_and_one_attempt() -> None:
    with LoopbackServer(lambda req: Reply(200, {"echo": req.body})) as srv:
        result = post_json(f"{srv.base_url}/x", {"a": 1}, headers={"x-test": "yes"})
        assert result.data == {"echo": {"a": 1}}
        assert result.attempts == 1
        assert result.latency_ms > 0
        data, latency_ms, attempts = result  # unpacks as the documented triple
        assert (data, latency_ms, attempts) == (result.data, result.latency_ms, 1)
        assert srv.requests[0].headers["x-test"] == "yes"
        assert srv.requests[0].headers["content-type"] == "application/json"
        assert srv.requests[0].path == "/x"


def test_429_honours_retry_after_then_succeeds() -> None:
    sleeps = Sleeps()
    responder = scripted([Reply(429, {"error": "slow down"}, headers={"retry-after": "7"})], OK)
    with LoopbackServer(responder) as srv:
        result = post_json(f"{srv.base_url}/x", {}, RetryPolicy(max_retries=3), sleep=sleeps)
        assert result.data == {"ok": True}
        assert result.attempts == 2
        assert srv.hits == 2
    assert sleeps.calls == [7.0]


def test_retry_after_is_capped() -> None:
    sleeps = Sleeps()
    responder = scripted([Reply(429, {}, headers={"retry-after": "3600"})], OK)
    with LoopbackServer(responder) as srv:
        post_json(f"{srv.base_url}/x", {}, RetryPolicy(retry_after_cap_s=12.0), sleep=sleeps)
    assert sleeps.calls == [12.0]


def test_unparseable_retry_after_falls_back_to_backoff() -> None:
    sleeps = Sleeps()
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    responder = scripted([Reply(503, {}, headers={"retry-after": date})], OK)
    with LoopbackServer(responder) as srv:
        post_json(f"{srv.base_url}/x", {}, RetryPolicy(backoff_base_s=0.25), sleep=sleeps,
                  rand=lambda: 0.5)
    assert sleeps.calls == [0.25]


def test_5xx_exhausted_names_url_status_and_attempts() -> None:
    sleeps = Sleeps()
    with LoopbackServer(lambda req: Reply(503, {"error": "overloaded"})) as srv:
        url = f"{srv.base_url}/v1/thing"
        with pytest.raises(HttpRetryError) as info:
            post_json(url, {}, RetryPolicy(max_retries=2, backoff_base_s=0.5), sleep=sleeps,
                      rand=lambda: 0.5)
        assert srv.hits == 3
    err = info.value
    assert err.exhausted and err.status == 503 and err.attempts == 3
    assert url in str(err) and "503" in str(err) and "overloaded" in str(err)
    assert sleeps.calls == [0.5, 1.0]  # exponential; rand=0.5 makes the jitter factor exactly 1


def test_non_retryable_400_raises_at_once_with_truncated_body() -> None:
    sleeps = Sleeps()
    body = "E" * 1000
    with LoopbackServer(lambda req: Reply(400, text=body)) as srv:
        with pytest.raises(HttpRetryError) as info:
            post_json(f"{srv.base_url}/x", {}, RetryPolicy(max_retries=5), sleep=sleeps)
        assert srv.hits == 1
    assert sleeps.calls == []
    assert not info.value.exhausted and info.value.status == 400
    message = str(info.value)
    assert "E" * 300 in message and "E" * 301 not in message
    assert "400" in message


def test_timeout_is_retried_then_succeeds() -> None:
    sleeps = Sleeps()
    responder = scripted([Reply(200, {"late": True}, delay_s=1.0)], OK)
    with LoopbackServer(responder) as srv:
        result = post_json(f"{srv.base_url}/x", {}, RetryPolicy(timeout_s=0.2, max_retries=1),
                           sleep=sleeps)
        assert result.data == {"ok": True}
        assert result.attempts == 2
    assert len(sleeps.calls) == 1


def test_timeouts_exhausted_report_the_exception() -> None:
    with LoopbackServer(lambda req: Reply(200, {}, delay_s=1.0)) as srv:
        with pytest.raises(HttpRetryError) as info:
            post_json(f"{srv.base_url}/x", {}, RetryPolicy(timeout_s=0.2, max_retries=1),
                      sleep=Sleeps())
        assert srv.hits == 2
    assert info.value.exhausted
    assert "ReadTimeout" in str(info.value)
    assert info.value.status is None


def test_connection_refused_is_retried_then_reported() -> None:
    srv = LoopbackServer(lambda req: OK).start()
    url = f"{srv.base_url}/x"
    srv.stop()
    sleeps = Sleeps()
    with pytest.raises(HttpRetryError) as info:
        post_json(url, {}, RetryPolicy(max_retries=2), sleep=sleeps)
    assert info.value.exhausted and info.value.attempts == 3
    assert len(sleeps.calls) == 2
    assert url in str(info.value) and "ConnectError" in str(info.value)


def test_non_json_success_body_is_an_error() -> None:
    with LoopbackServer(lambda req: Reply(200, text="<html>proxy login</html>")) as srv:
        with pytest.raises(HttpRetryError, match="not JSON") as info:
            post_json(f"{srv.base_url}/x", {}, sleep=Sleeps())
        assert srv.hits == 1
    assert "proxy login" in str(info.value)


def test_uses_a_supplied_client_and_leaves_it_open() -> None:
    with LoopbackServer(lambda req: OK) as srv, BoundedClient() as client:
        post_json(f"{srv.base_url}/x", {}, client=client)
        assert not client.is_closed
        post_json(f"{srv.base_url}/x", {}, client=client)
        assert srv.hits == 2


def test_backoff_grows_is_capped_and_jittered() -> None:
    def delay(i: int, r: float) -> float:
        return backoff_delay(i, base_s=1.0, max_s=10.0, jitter=0.25, rand=lambda: r)

    assert [delay(i, 0.5) for i in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]
    assert delay(1, 0.0) == pytest.approx(1.5)
    assert delay(1, 1.0) == pytest.approx(2.5)
    assert delay(6, 1.0) == 10.0  # the cap holds after jitter too


def test_rejects_negative_max_retries() -> None:
    with pytest.raises(ValueError):
        post_json("http://127.0.0.1:9/x", {}, RetryPolicy(max_retries=-1))


# -- one line per failure, with its fix -------------------------------------------------------


def test_empty_and_non_json_bodies_have_causes_of_their_own() -> None:
    for text, cause in (("", "HTTP 200 with an empty body"),
                        ("<html>", "HTTP 200 with a body that is not JSON")):
        with (
            LoopbackServer(lambda req, body=text: Reply(200, text=body)) as srv,
            pytest.raises(HttpRetryError) as info,
        ):
            post_json(f"{srv.base_url}/x", {}, sleep=Sleeps())
        assert info.value.cause == cause and info.value.status == 200


@pytest.mark.parametrize(("reply", "fix"), [
    (Reply(401, {"error": "invalid key"}), "check the key in MY_KEY (server said: "),
    (Reply(403, {}), "check the key in MY_KEY"),
    (Reply(404, {}), "check judge.base_url and judge.model"),
    (Reply(400, {"error": "no such model"}), "check judge.model and the other judge settings"),
    (Reply(500, {}), "the service is failing"),
    (Reply(429, {}), "raise judge.max_retries"),
    (Reply(200, {}, delay_s=1.0), "raise judge.timeout_s or check judge.base_url"),
])
def test_explain_failure_names_the_url_and_the_fix(reply: Reply, fix: str) -> None:
    with LoopbackServer(lambda req: reply) as srv:
        url = f"{srv.base_url}/v1/messages"
        with pytest.raises(HttpRetryError) as info:
            post_json(url, {}, RetryPolicy(timeout_s=0.2, max_retries=0), sleep=Sleeps())
    line = explain_failure(info.value, setting="judge", key_env="MY_KEY")
    assert f" from {url}: " in line and fix in line


def test_explain_failure_without_a_key_variable_names_the_setting_and_masks_credentials() -> None:
    err = HttpRetryError("x", url="https://user:hunter2secret@api.example.com/v1/embeddings",
                         attempts=1, status=401, cause="HTTP 401 Unauthorized")
    line = explain_failure(err, setting="embedder", key_env=None)
    assert "set embedder.api_key_env" in line and "hunter2secret" not in line
    refused = HttpRetryError("x", url="http://127.0.0.1:9/v1", attempts=3, exhausted=True,
                             cause="ConnectError after 3 attempt(s)",
                             detail="[Errno 111] Connection refused")
    assert explain_failure(refused, setting="embedder", key_env=None) == (
        "ConnectError after 3 attempt(s) from http://127.0.0.1:9/v1: is the server running? "
        "check embedder.base_url ([Errno 111] Connection refused)")


def test_an_answer_that_trickles_is_cut_at_the_deadline_not_per_read() -> None:
    """Each byte comes well within timeout_s, so only a deadline on the whole answer ends it."""
    stalling = Reply(200, {"verdict": "KEEP", "pad": "x" * 200}, trickle_s=0.05)
    with LoopbackServer(lambda _: stalling) as srv:
        started = time.monotonic()
        with pytest.raises(HttpRetryError) as failed:
            post_json(f"{srv.base_url}/judge", {}, RetryPolicy(timeout_s=0.5, max_retries=0))
        took = time.monotonic() - started
    assert took < 3.0  # the whole answer would take 11 s
    line = explain_failure(failed.value, setting="judge", key_env=None)
    assert "no whole answer within 0.5 s" in line and "raise judge.timeout_s" in line


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_an_answer_over_the_size_cap_is_refused_naming_the_cap(declared: bool) -> None:
    big = Reply(200, {"pad": "x" * 5000}, sized=declared)
    with LoopbackServer(lambda _: big) as srv, pytest.raises(HttpRetryError) as refused:
        post_json(f"{srv.base_url}/x", {}, RetryPolicy(max_body_bytes=1000, max_retries=3))
    assert srv.hits == 1  # no retry makes it smaller
    assert "answer larger than 1000 bytes" in str(refused.value)
    assert refused.value.url.endswith("/x")


@pytest.mark.parametrize(("text", "said"), [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
    ('{"stage": "stored", "stored": NaN}', "NaN"),
    ('{"score": Infinity}', "Infinity"),
    ('{"a": ' * 65 + "1" + "}" * 65, "nested deeper than 64 levels"),
], ids=["deep", "nan", "infinity", "just-too-deep"])
def test_json_too_deep_or_not_a_number_is_refused_in_one_line(text: str, said: str) -> None:
    with LoopbackServer(lambda _: Reply(200, text=text)) as srv, \
            pytest.raises(HttpRetryError) as refused:
        post_json(f"{srv.base_url}/api/ingest", {}, RetryPolicy(max_retries=0))
    line = explain_failure(refused.value, setting="system", key_env=None)
    assert said in line and f"{srv.base_url}/api/ingest" in line and "\n" not in line
