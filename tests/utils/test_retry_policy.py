"""RetryPolicy's validation and the response check's retry / no-retry decision, with no server."""

from __future__ import annotations

import httpx
import pytest

from memeval.utils.http_retry import (
    HttpEndpointConfig,
    HttpRetryError,
    Retryable,
    RetryPolicy,
    check_response,
)

URL = "http://127.0.0.1:9/v1/x"


def check(response: httpx.Response) -> object:
    return check_response(response, method="POST", url=URL, attempts=1)


@pytest.mark.bad_input
@pytest.mark.parametrize(("knobs", "message"), [
    ({"max_retries": -1}, "max_retries must be >= 0"),
    ({"timeout_s": 0.0}, "timeout_s must be positive"),
    ({"backoff_base_s": -0.1}, "backoff_base_s, backoff_max_s and retry_after_cap_s must be >= 0"),
    ({"retry_after_cap_s": -1.0}, "backoff_base_s, backoff_max_s and retry_after_cap_s"),
    ({"jitter": 1.5}, "jitter must be between 0 and 1"),
])
def test_policy_refuses_impossible_settings(knobs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryPolicy(**knobs)  # type: ignore[arg-type]


def test_policy_is_frozen_and_backs_off_from_its_own_settings() -> None:
    policy = RetryPolicy(backoff_base_s=1.0, backoff_max_s=3.0, jitter=0.0)
    assert [policy.backoff(i, rand=lambda: 0.9) for i in range(4)] == [1.0, 2.0, 3.0, 3.0]
    with pytest.raises(AttributeError):
        policy.max_retries = 9  # type: ignore[misc]


def test_endpoint_config_builds_its_policy() -> None:
    cfg = HttpEndpointConfig(model="m", base_url="http://127.0.0.1:9", timeout_s=7.0,
                             max_retries=2)
    assert cfg.retry_policy() == RetryPolicy(timeout_s=7.0, max_retries=2)


def test_2xx_json_is_the_result() -> None:
    assert check(httpx.Response(200, json={"ok": True})) == {"ok": True}


@pytest.mark.parametrize("status", [429, 500, 502, 503, 599])
def test_429_and_5xx_are_retried(status: int) -> None:
    with pytest.raises(Retryable) as info:
        check(httpx.Response(status, text="busy"))
    assert info.value.status == status and info.value.detail == "busy"
    assert info.value.last == f"HTTP {status}: 'busy'"
    assert info.value.retry_after_s is None


def test_retry_after_is_passed_on_uncapped() -> None:
    with pytest.raises(Retryable) as info:
        check(httpx.Response(429, headers={"retry-after": "3600"}))
    assert info.value.retry_after_s == 3600.0
    assert info.value.cause == "HTTP 429 Too Many Requests"


@pytest.mark.parametrize("status", [300, 400, 401, 403, 404, 422])
def test_other_statuses_fail_at_once(status: int) -> None:
    with pytest.raises(HttpRetryError) as info:
        check(httpx.Response(status, text="no"))
    assert not info.value.exhausted and info.value.status == status
    assert str(info.value) == f"POST {URL} was rejected with HTTP {status} (not retried): 'no'"


def test_a_2xx_that_is_not_json_fails_at_once() -> None:
    with pytest.raises(HttpRetryError, match="not JSON") as info:
        check(httpx.Response(200, text="<html>"))
    assert info.value.status == 200 and not info.value.exhausted


def test_exhausted_error_names_the_last_failure_and_attempts() -> None:
    failure = Retryable("HTTP 503: 'busy'", cause="HTTP 503 Service Unavailable", detail="busy",
                        status=503)
    err = failure.exhausted("GET", URL, 4)
    assert str(err) == f"GET {URL} failed after 4 attempt(s); last error: HTTP 503: 'busy'"
    assert err.exhausted and err.status == 503 and err.attempts == 4
    assert err.cause == "HTTP 503 Service Unavailable after 4 attempt(s)"
