"""Shared machinery for judges that call an LLM over HTTP: prompt, retries, cost, response cache.

Providers differ only in wire format (endpoint, headers, body, where the text and token counts
live), so each subclass supplies those four pieces and inherits everything that must behave the
same across providers: the memoryd prompt, retry policy, cost accounting, the offline cache, the
preflight and the circuit breaker.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from memeval.backends.judges.base import NOT_SENT, JudgeError, Verdict
from memeval.backends.judges.prompt import PROMPT_VERSION, build_messages, parse_verdict
from memeval.entry import Entry
from memeval.registry import ConfigError, bounded
from memeval.utils.http_deadline import BoundedClient
from memeval.utils.http_retry import (
    Breaker,
    Cooldown,
    HttpEndpointConfig,
    HttpRetryError,
    PostResult,
    explain_failure,
    post_json,
    preview,
)
from memeval.utils.kvcache import SqliteKV, content_key
from memeval.utils.redact import redact

CACHE_FILE = "judge.sqlite"
JudgeT = TypeVar("JudgeT", bound="HttpJudge")
CACHE_TABLE = "judge_responses"
# The preflight's (system, user) messages, answered with one token at most: cheap on any API.
PROBE = ("Answer with the single word OK.", "OK?")

log = logging.getLogger(__name__)


@dataclass
class HttpJudgeConfig(HttpEndpointConfig):
    """Fields every HTTP judge accepts; prices are USD per million tokens, for cost accounting.

    `temperature: None` leaves it out of the request (the provider default), as the memoryd
    daemon did. `api_key_env` names the environment variable holding the key, never the key.
    `breaker_after`: after this many failed verdicts in a row, no request is sent for the rest of
    the run (cached verdicts are still served), so a dead or hanging server costs that many
    timeouts, not one per entry; 0 turns the breaker off.
    """

    max_tokens: int = bounded(1024, 1)
    temperature: float | None = bounded(None, 0, 2)
    price_input_per_mtok: float = bounded(0.0, 0)
    price_output_per_mtok: float = bounded(0.0, 0)
    cache: bool = True
    breaker_after: int = bounded(5, 0)

    def validate(self) -> None:
        super().validate()
        if self.max_tokens <= 0:
            raise ValueError("max_tokens must be positive")
        if self.temperature is not None and self.temperature < 0:
            raise ValueError("temperature must be >= 0 (or null to leave it unset)")
        if self.price_input_per_mtok < 0 or self.price_output_per_mtok < 0:
            raise ValueError("prices must be >= 0")
        if self.breaker_after < 0:
            raise ValueError("breaker_after must be >= 0 (0 turns the circuit breaker off)")


@dataclass(frozen=True)
class Completion:
    """One reply of the model: a cached one cost nothing and took no time."""

    text: str
    input_tokens: int
    output_tokens: int
    latency_ms: float
    cached: bool
    cost_usd: float


class HttpJudge:
    """Base class: subclasses set `provider` and implement the wire-format hooks."""

    provider = "http"

    def __init__(
        self,
        cfg: HttpJudgeConfig,
        *,
        cache_dir: Path | None = None,
        client: BoundedClient | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.cfg = cfg
        self.base_url = cfg.base_url.rstrip("/")
        self.name = f"{self.provider}:{cfg.model}"
        self._client = client if client is not None else BoundedClient()
        self._policy = cfg.retry_policy()
        self._sleep = sleep
        self._cooldown = Cooldown()  # callers in parallel (labeller=judge) pause together
        self._cache: SqliteKV | None = None
        if cache_dir is not None and cfg.cache:
            self._cache = SqliteKV(Path(cache_dir) / CACHE_FILE, CACHE_TABLE)
        self._breaker = Breaker(cfg.breaker_after)  # labelling asks from several threads

    # -- wire-format hooks ------------------------------------------------------------------

    @property
    def url(self) -> str:
        raise NotImplementedError

    def headers(self, api_key: str | None) -> dict[str, str]:
        raise NotImplementedError

    def body(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        raise NotImplementedError

    def extract(self, data: Any) -> tuple[str, int, int]:
        """(reply text, input tokens, output tokens); KeyError/TypeError on a bad shape."""
        raise NotImplementedError

    # -- shared behaviour -------------------------------------------------------------------

    def api_key(self) -> str | None:
        """The key from `api_key_env`; asked only when a request is about to be sent."""
        env = self.cfg.api_key_env
        if not env:
            return None
        key = os.environ.get(env, "").strip()
        if not key:
            reason = redact(
                f"environment variable {env} is not set: export the API key for "
                f"{self.base_url} in it, or set judge.api_key_env to the variable holding it"
            )
            raise JudgeError(f"{self.name}: {reason}", reason=reason)
        return key

    def cache_key(self, system: str, user: str) -> str:
        return content_key(
            self.provider,
            self.base_url,
            self.cfg.model,
            PROMPT_VERSION,
            str(self.cfg.temperature),
            str(self.cfg.max_tokens),
            system,
            user,
        )

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.cfg.price_input_per_mtok
            + output_tokens * self.cfg.price_output_per_mtok
        ) / 1_000_000

    def _verdict(
        self,
        raw: str,
        input_tokens: int,
        output_tokens: int,
        *,
        latency_ms: float,
        cached: bool,
    ) -> Verdict:
        skip, memory = parse_verdict(raw)
        return Verdict(
            skip=skip,
            model=self.name,
            memory=memory,
            latency_ms=latency_ms,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=0.0 if cached else self.cost_usd(input_tokens, output_tokens),
            cached=cached,
            raw=raw,
        )

    def _post(self, body: dict[str, Any]) -> PostResult:
        """One call with the retry policy; a failure is a JudgeError whose reason names the fix."""
        headers = self.headers(self.api_key())
        try:
            return post_json(
                self.url,
                body,
                self._policy,
                headers=headers,
                client=self._client,
                sleep=self._sleep,
                cooldown=self._cooldown,
            )
        except HttpRetryError as err:
            reason = explain_failure(err, setting="judge", key_env=self.cfg.api_key_env)
            raise JudgeError(f"{self.name}: {redact(str(err))}", reason=reason) from err

    def _reply(self, data: Any) -> tuple[str, int, int]:
        try:
            return self.extract(data)
        except (KeyError, IndexError, TypeError, ValueError) as err:
            reason = redact(
                f"unexpected response shape from {self.url} ({type(err).__name__}: {err}): "
                f"is judge.base_url a {self.provider} endpoint?"
            )
            raise JudgeError(
                f"{self.name}: {reason}: {redact(preview(json.dumps(data)))!r}", reason=reason
            ) from err

    def preflight(self) -> None:
        """The key is set and one tiny request gets a well-formed reply: otherwise the run stops
        before any work, with the fix named."""
        if not self.cfg.preflight:
            return
        try:
            self._reply(self._post(self.body(*PROBE, max_tokens=1)).data)
        except JudgeError as err:
            raise ConfigError(
                f"judge={self.provider} failed its preflight: {err.reason} (judge.preflight=false "
                f"skips the check, e.g. to replay from the judge cache offline)"
            ) from None

    def _failed(self, reason: str) -> None:
        if self._breaker.failed(reason):
            log.warning("%s failed %d times in a row: no more requests this run (judge."
                        "breaker_after); entries not in the judge cache count as judge errors. "
                        "Last error: %s", self.name, self.cfg.breaker_after, reason)

    def complete(self, system: str, user: str, expected: str = "SKIP or a memory"
                 ) -> Completion:
        """One reply to (system, user) with the endpoint's retries, cache and circuit breaker:
        the judge's verdicts, and any other use of the same model (an answerer, a grader).
        `expected` names what a blank reply should have held. The reply is redacted before it
        is cached or returned: a model may write a key it was never sent (from its training, or
        a tool's output), and an answer or a rewrite goes into tables and stores as it is."""
        key = self.cache_key(system, user)
        if self._cache is not None and (stored := self._cache.get(key)) is not None \
                and (record := cached_reply(stored)) is not None:
            text, tin, tout = record  # an older or imported cache may hold a raw reply
            return Completion(redact(text), tin, tout, latency_ms=0.0, cached=True, cost_usd=0.0)
        if self._breaker.open_because is not None:
            reason = NOT_SENT + self._breaker.open_because
            raise JudgeError(f"{self.name}: {reason}", reason=reason)
        try:
            result = self._post(self.body(system, user, self.cfg.max_tokens))
            raw, tin, tout = self._reply(result.data)
            raw = redact(raw)
            if not raw.strip():
                reason = redact(f"blank reply from {self.url} (expected {expected}): check "
                                f"the model and max_tokens")
                raise JudgeError(f"{self.name}: {reason}: "
                                 f"{redact(preview(json.dumps(result.data)))!r}", reason=reason)
        except JudgeError as err:
            self._failed(err.reason)
            raise
        self._breaker.succeeded()
        if self._cache is not None:
            self._cache.put(key, json.dumps({"text": raw, "input_tokens": tin,
                                             "output_tokens": tout}).encode("utf-8"))
        return Completion(raw, tin, tout, latency_ms=result.latency_ms, cached=False,
                          cost_usd=self.cost_usd(tin, tout))

    def judge(self, entry: Entry, user_prompt: str, assistant_text: str) -> Verdict:
        system, user = build_messages(user_prompt, assistant_text)
        try:
            done = self.complete(system, user)
        except JudgeError as err:
            raise JudgeError(f"{self.name} on entry '{entry.id}': {err.reason}",
                             reason=err.reason) from err
        return self._verdict(done.text, done.input_tokens, done.output_tokens,
                             latency_ms=done.latency_ms, cached=done.cached)

    def close(self) -> None:
        self._client.close()
        if self._cache is not None:
            self._cache.close()


def cached_reply(stored: bytes) -> tuple[str, int, int] | None:
    """(reply text, input tokens, output tokens) from a judge cache value, or None if it is not
    the JSON record `HttpJudge.judge` stores."""
    try:
        record = json.loads(stored)
        return str(record["text"]), int(record["input_tokens"]), int(record["output_tokens"])
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):  # inf; too deep
        return None


def usable_records(values: list[bytes]) -> list[bool]:
    """Per value: a record the judge can replay; shards from elsewhere are checked with it."""
    return [cached_reply(value) is not None for value in values]


def records_for(store: SqliteKV) -> Callable[[list[bytes]], list[bool]]:
    """How records imported into `store` are checked: each on its own, whatever it holds."""
    return usable_records


def _int(value: Any) -> int:
    """Token counts may be missing (some local servers omit `usage`): count them as 0."""
    return int(value) if value is not None else 0


def usage_tokens(usage: Any, input_field: str, output_field: str) -> tuple[int, int]:
    if not isinstance(usage, dict):
        return 0, 0
    return _int(usage.get(input_field)), _int(usage.get(output_field))


def build_with_deps(judge_class: type[JudgeT], cfg: HttpJudgeConfig,
                    deps: dict[str, Any]) -> JudgeT:
    """Shared factory body: `cache_dir` (Path | None) enables the response cache; `sleep` is
    injectable so tests of backoff never wait for real."""
    extra = {"sleep": deps["sleep"]} if deps.get("sleep") is not None else {}
    return judge_class(cfg, cache_dir=deps.get("cache_dir"), **extra)
