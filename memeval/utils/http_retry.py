"""One JSON-over-HTTP request with bounded retries and one read policy, shared by every HTTP
judge, embedder and daemon client.

Hosted APIs rate-limit (429) and wobble (5xx, dropped connections); a local llama.cpp server stalls
while it loads a model. Retrying those with capped exponential backoff keeps a long sweep alive,
while a 4xx that no retry can fix (bad key, bad model name) fails at once with the server's reason.
Every exchange ends by the request's deadline (`timeout_s`, for connect, headers and body together,
not each read: utils/http_deadline.py), every answer is read under a size cap, and its JSON is
refused when nested too deep or holding NaN or Infinity: a stalling, huge or hostile server ends
the request with one line, never a hang.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import httpx

from memeval.registry import bounded
from memeval.utils.bounded_json import JsonRefused, parse_json
from memeval.utils.http_deadline import BoundedClient
from memeval.utils.redact import redact

BODY_PREVIEW_CHARS = 300
MAX_BODY_BYTES = 64 * 2**20  # an answer's default size cap (`max_body_mb`)

# Transport failures worth another try; configuration errors such as UnsupportedProtocol are not.
_RETRYABLE_EXCEPTIONS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


@dataclass
class HttpEndpointConfig:
    """Where and how patiently to call an HTTP service; the key is named, never stored.

    `preflight`: one request before a run starts, so a missing key or a dead server stops the run
    at once with the fix named; off, a run can replay from a warm cache with the service gone.
    """

    model: str = ""
    base_url: str = ""
    api_key_env: str | None = None
    timeout_s: float = bounded(60.0, above=0)  # for each whole answer
    max_retries: int = bounded(3, 0, 100)
    max_body_mb: float = bounded(MAX_BODY_BYTES / 2**20, above=0)  # an answer's size cap
    preflight: bool = True

    def validate(self) -> None:
        if not self.model.strip():
            raise ValueError("model must be set")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url must start with http:// or https:// (got {self.base_url!r})"
            )
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")

    def retry_policy(self) -> RetryPolicy:
        """This service's retry settings, for every call its client makes."""
        return RetryPolicy(timeout_s=self.timeout_s, max_retries=self.max_retries,
                           max_body_bytes=int(self.max_body_mb * 2**20))


@runtime_checkable
class Preflighted(Protocol):
    """A client of a service that can tell, before a run starts, that the run could not use it."""

    def preflight(self) -> None:
        """Raise ConfigError naming the fix (the key's variable, the URL and its setting)."""


def preflight(component: object) -> None:
    """Check a freshly built component that talks to a service; others need no check."""
    if isinstance(component, Preflighted):
        component.preflight()


class HttpRetryError(RuntimeError):
    """The POST gave no usable JSON; callers re-raise it as their own JudgeError/EmbeddingError.

    `exhausted` tells "gave up after retries" from "rejected at once" (non-retryable 4xx, bad JSON).
    `cause` is what went wrong in a few stable words ("HTTP 401 Unauthorized", "ConnectError after
    4 attempt(s)"), `detail` the server's own words or the exception's: `explain_failure` builds
    the line a user reads from them. `status` is None when no HTTP answer came back at all.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str,
        attempts: int,
        status: int | None = None,
        exhausted: bool = False,
        cause: str = "",
        detail: str = "",
        fix: str = "",
    ) -> None:
        super().__init__(message)
        self.url = url
        self.attempts = attempts
        self.status = status
        self.exhausted = exhausted
        self.cause = cause or message
        self.detail = detail
        self.fix = fix  # the fix, when the status does not say it (`{setting}` is filled in)


class Cooldown:
    """A pause shared by every thread calling one service: when the server answers 429 with
    `retry-after`, no caller sends anything until it has passed (each would only get 429 too)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until = 0.0
        self._lock = threading.Lock()

    def extend(self, seconds: float) -> None:
        with self._lock:
            self._until = max(self._until, self._clock() + seconds)

    def remaining(self) -> float:
        with self._lock:
            return max(0.0, self._until - self._clock())


class PostResult(NamedTuple):
    """`latency_ms` is the whole call's wall time, backoff waits included: what a caller waits."""

    data: Any
    latency_ms: float
    attempts: int


def preview(text: str, limit: int = BODY_PREVIEW_CHARS) -> str:
    """Shorten a response body for an error message."""
    return text if len(text) <= limit else text[:limit] + "…"


def _status_text(status: int) -> str:
    phrase = httpx.codes.get_reason_phrase(status)
    return f"HTTP {status} {phrase}" if phrase else f"HTTP {status}"


def _exception_text(err: Exception) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def explain_failure(err: HttpRetryError, *, setting: str, key_env: str | None) -> str:
    """One line naming what failed, where (credentials in the URL masked) and the fix, e.g.
    "HTTP 401 Unauthorized from https://…/v1/messages: check the key in ANTHROPIC_API_KEY".

    `setting` is the config group holding the service's settings (`judge`, `embedder`). The line
    holds no entry id, so the failures of a run can be counted by it.
    """
    if err.fix:
        fix = err.fix.format(setting=setting)
    elif err.status in (401, 403):
        fix = (f"check the key in {key_env}" if key_env else
               f"the server wants a key: set {setting}.api_key_env to the variable holding it")
    elif err.status is None:
        timed_out = "Timeout" in err.cause
        fix = (f"the server did not answer in time: raise {setting}.timeout_s or check "
               f"{setting}.base_url" if timed_out else
               f"is the server running? check {setting}.base_url")
    elif err.status == 404:
        fix = f"check {setting}.base_url and {setting}.model"
    elif err.status == 429:
        fix = f"rate limited: ask less often or raise {setting}.max_retries"
    elif err.status >= 500:
        fix = "the service is failing: try again later"
    elif 200 <= err.status < 300:
        fix = f"is {setting}.base_url the right kind of server?"
    else:
        fix = f"check {setting}.model and the other {setting} settings"
    said = "" if not err.detail else (
        f" ({err.detail})" if err.status is None else f" (server said: {err.detail})")
    return redact(f"{err.cause} from {err.url}: {fix}{said}")


def _retry_after_s(response: httpx.Response) -> float | None:
    """`retry-after` in seconds; None when absent or an HTTP date (we back off instead)."""
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return max(value, 0.0) if value == value else None  # NaN check


def backoff_delay(
    retry_index: int,
    *,
    base_s: float,
    max_s: float,
    jitter: float,
    rand: Callable[[], float],
) -> float:
    """base·2^i, capped, times a random factor in [1-jitter, 1+jitter] so clients desynchronise."""
    delay = min(max_s, base_s * (2.0**retry_index))
    factor = 1.0 - jitter + 2.0 * jitter * rand()
    return float(min(max_s, max(0.0, delay * factor)))


@dataclass(frozen=True)
class RetryPolicy:
    """How patiently one call is retried: built once per client from its config, then shared.

    Up to `max_retries` retries after the first attempt, each request given `timeout_s` for its
    whole answer, of at most `max_body_bytes`; the wait before a retry is the server's
    `retry-after` (capped at `retry_after_cap_s`) or else `backoff_delay` from
    `backoff_base_s`, `backoff_max_s` and `jitter`.
    """

    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    jitter: float = 0.25
    retry_after_cap_s: float = 60.0
    max_body_bytes: int = MAX_BODY_BYTES

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if min(self.backoff_base_s, self.backoff_max_s, self.retry_after_cap_s) < 0:
            raise ValueError("backoff_base_s, backoff_max_s and retry_after_cap_s must be >= 0")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter must be between 0 and 1")
        if self.max_body_bytes <= 0:
            raise ValueError("max_body_bytes must be positive")

    def backoff(self, retry_index: int, rand: Callable[[], float]) -> float:
        """The wait before retry `retry_index` (0 for the first) when the server named none."""
        return backoff_delay(retry_index, base_s=self.backoff_base_s, max_s=self.backoff_max_s,
                             jitter=self.jitter, rand=rand)


DEFAULT_POLICY = RetryPolicy()


class Retryable(Exception):
    """An attempt failed in a way the next one may not (429, 5xx, timeout, dropped connection).

    `last` is what the final error quotes if no attempt succeeds; `retry_after_s` the server's
    own wait, uncapped, or None.
    """

    def __init__(self, last: str, *, cause: str, detail: str, status: int | None = None,
                 retry_after_s: float | None = None) -> None:
        super().__init__(last)
        self.last = last
        self.cause = cause
        self.detail = detail
        self.status = status
        self.retry_after_s = retry_after_s

    def exhausted(self, method: str, url: str, attempts: int) -> HttpRetryError:
        """The error once no retry is left, naming this, the last failure."""
        return HttpRetryError(
            f"{method} {url} failed after {attempts} attempt(s); last error: {self.last}",
            url=url,
            attempts=attempts,
            status=self.status,
            exhausted=True,
            cause=f"{self.cause} after {attempts} attempt(s)",
            detail=self.detail,
        )


class ReadRefused(Exception):
    """An answer the read policy cut short for being larger than its cap."""

    def __init__(self, reason: str, *, status: int) -> None:
        super().__init__(reason)
        self.status = status


# how the body travelled, which no longer holds once it is read whole and decompressed
_FRAMING = ("content-length", "content-encoding", "transfer-encoding")


def read_whole(http: BoundedClient, method: str, url: str, *, timeout_s: float,
               max_bytes: int, **request: Any) -> httpx.Response:
    """One request, the whole exchange (connect, headers, body) within `timeout_s` (the
    BoundedClient's deadline: httpx's own timeout is per read, so a server trickling a header
    line or a byte at a time would otherwise never end), the answer refused past `max_bytes` and
    decompressed. The one read policy of every client memeval has: judges, embedders, daemons
    and Phoenix. Raises ReadRefused, or httpx's errors for the transport and the deadline."""
    if not isinstance(http, BoundedClient):  # a plain client would let a trickle run for ever
        raise TypeError(f"read_whole needs a BoundedClient, not {type(http).__name__}")
    with http.stream(method, url, timeout=timeout_s, **request) as response:
        status = response.status_code
        too_large = ReadRefused(f"an answer larger than {max_bytes} bytes", status=status)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise too_large
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > max_bytes:
                raise too_large
        kept = {k: v for k, v in response.headers.items() if k.lower() not in _FRAMING}
        return httpx.Response(status, headers=kept, content=bytes(body))


def send_once(
    http: BoundedClient,
    method: str,
    url: str,
    payload: Mapping[str, Any] | None,
    *,
    headers: Mapping[str, str] | None,
    policy: RetryPolicy,
    attempts: int,
) -> httpx.Response:
    """One request under the read policy (`read_whole`): a transport failure or a missed
    deadline (httpx's timeouts) worth retrying raises Retryable, anything else HttpRetryError
    (a bad URL, an answer over the cap: no retry fixes those)."""
    try:
        return read_whole(http, method, url, timeout_s=policy.timeout_s,
                          max_bytes=policy.max_body_bytes,
                          json=None if payload is None else dict(payload),
                          headers=dict(headers or {}))
    except ReadRefused as err:
        raise HttpRetryError(f"{method} {url} sent {err}", url=url, attempts=attempts,
                             status=err.status, cause=f"HTTP {err.status} with {err}",
                             fix="raise {setting}.max_body_mb if answers this large are "
                                 "expected") from err
    except _RETRYABLE_EXCEPTIONS as err:
        raise Retryable(_exception_text(err), cause=type(err).__name__, detail=str(err)) from err
    except httpx.HTTPError as err:
        raise HttpRetryError(
            f"{method} {url} failed: {_exception_text(err)}",
            url=url,
            attempts=attempts,
            cause=type(err).__name__,
            detail=str(err),
        ) from err


def check_response(response: httpx.Response, *, method: str, url: str, attempts: int) -> Any:
    """The parsed JSON of a 2xx answer; Retryable for 429 and 5xx (with any `retry-after`);
    HttpRetryError for any other status or a body that is not JSON, which no retry fixes."""
    status = response.status_code
    if 200 <= status < 300:
        try:
            return parse_json(response.content)
        except JsonRefused as err:
            raise HttpRetryError(f"{method} {url} returned HTTP {status} with {err}", url=url,
                                 attempts=attempts, status=status,
                                 cause=f"HTTP {status} with {err}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            empty = not response.content.strip()
            raise HttpRetryError(
                f"{method} {url} returned HTTP {status} with a body that is not JSON: "
                f"{preview(response.text)!r}",
                url=url,
                attempts=attempts,
                status=status,
                cause=f"HTTP {status} with an empty body" if empty else
                f"HTTP {status} with a body that is not JSON",
                detail="" if empty else repr(preview(response.text, 120)),
            ) from err
    if status != 429 and not 500 <= status < 600:
        raise HttpRetryError(
            f"{method} {url} was rejected with HTTP {status} (not retried): "
            f"{preview(response.text)!r}",
            url=url,
            attempts=attempts,
            status=status,
            cause=_status_text(status),
            detail=preview(response.text, 120),
        )
    raise Retryable(
        f"HTTP {status}: {preview(response.text)!r}",
        cause=_status_text(status),
        detail=preview(response.text, 120),
        status=status,
        retry_after_s=_retry_after_s(response),
    )


def post_json(
    url: str,
    payload: Mapping[str, Any] | None,
    policy: RetryPolicy = DEFAULT_POLICY,
    *,
    method: str = "POST",
    headers: Mapping[str, str] | None = None,
    client: BoundedClient | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rand: Callable[[], float] = random.random,
    cooldown: Cooldown | None = None,
) -> PostResult:
    """POST `payload` as JSON and return (parsed JSON, latency ms, attempts); another `method`
    (GET, DELETE) gets the same retries, with no body when `payload` is None.

    Retries HTTP 429, 5xx, timeouts and connection errors as `policy` says. With a shared
    `cooldown`, a `retry-after` pauses every caller of the service, not just this one. Raises
    HttpRetryError naming the URL and the last status or exception.
    """
    own_client = client is None
    http = client if client is not None else BoundedClient()
    started = time.perf_counter()
    try:
        if cooldown is not None and (pause := cooldown.remaining()) > 0:
            sleep(pause)
        attempts = 0
        while True:
            attempts += 1
            try:
                response = send_once(http, method, url, payload, headers=headers,
                                     policy=policy, attempts=attempts)
                data = check_response(response, method=method, url=url, attempts=attempts)
            except Retryable as err:
                failure = err
            else:
                return PostResult(data, (time.perf_counter() - started) * 1000.0, attempts)
            wait = None if failure.retry_after_s is None else min(failure.retry_after_s,
                                                                  policy.retry_after_cap_s)
            if wait is not None and cooldown is not None:
                cooldown.extend(wait)
            if attempts > policy.max_retries:
                raise failure.exhausted(method, url, attempts)
            if wait is None:
                wait = policy.backoff(attempts - 1, rand)
            if cooldown is not None:
                wait = max(wait, cooldown.remaining())
            sleep(wait)
    finally:
        if own_client:
            http.close()


class Breaker:
    """A circuit breaker shared by a client's threads: it opens after `after` failures in a
    row (0: never) and stays open for the run, remembering the failure that opened it, so a
    dead service costs a few requests rather than one per item."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.open_because: str | None = None
        self._lock = threading.Lock()
        self._in_a_row = 0

    def succeeded(self) -> None:
        with self._lock:
            self._in_a_row = 0

    def failed(self, reason: str) -> bool:
        """Count one failure; True when it is the one that opened the breaker."""
        with self._lock:
            self._in_a_row += 1
            opens = self.open_because is None and 0 < self.after <= self._in_a_row
            if opens:
                self.open_because = reason
        return opens
