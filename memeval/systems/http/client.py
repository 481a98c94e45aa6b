"""The one way `system=http` talks to a daemon: requests only to the configured base URL, no
redirects followed, retries with capped backoff (utils/http_retry.py), a circuit breaker over
turns, a preflight before any work, and failures as one line naming the setting to change.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from memeval.backends.judges.base import NOT_SENT
from memeval.registry import ConfigError
from memeval.systems.base import Capability, Hit
from memeval.systems.http.mapping import (
    ID_PLACEHOLDER,
    HttpSystemConfig,
    Route,
    SearchRoute,
    as_key,
    pluck,
)
from memeval.utils.http_deadline import BoundedClient
from memeval.utils.http_retry import (
    Breaker,
    Cooldown,
    HttpRetryError,
    PostResult,
    RetryPolicy,
    explain_failure,
    post_json,
)
from memeval.utils.redact import redact

log = logging.getLogger(__name__)


class DaemonError(RuntimeError):
    """A request gave no usable answer; `reason` says why in one line naming no entry."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def search_hits(route: SearchRoute, data: Any) -> list[Hit]:
    """The hits of a search answer: ids and scores at their paths, parallel; a shape they do
    not fit is a DaemonError naming the settings."""
    try:
        ids, scores = pluck(data, route.ids_field), pluck(data, route.scores_field)
        return [Hit(as_key(i), float(s)) for i, s in zip(ids, scores, strict=True)]
    except (KeyError, TypeError, ValueError) as err:
        raise DaemonError(f"the daemon's search answer has no parallel ids and scores at "
                          f"system.search.ids_field {route.ids_field!r} and scores_field "
                          f"{route.scores_field!r} ({type(err).__name__}: {err})") from None


class Daemon:
    """A client of one daemon, shared by every thread of a run."""

    def __init__(self, cfg: HttpSystemConfig, *, client: BoundedClient | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.cfg = cfg
        self.base = httpx.URL(cfg.base_url.rstrip("/") + "/")
        self.shown = redact(cfg.base_url)
        # never follow a redirect: a turn must not reach a host the user did not configure
        self._client = client if client is not None else BoundedClient(follow_redirects=False)
        self._sleep = sleep
        self._policy = RetryPolicy(timeout_s=cfg.timeout_s, max_retries=cfg.max_retries,
                                   backoff_max_s=cfg.backoff_max_s,
                                   max_body_bytes=int(cfg.max_body_mb * 2**20))
        self._cooldown = Cooldown()
        self._breaker = Breaker(cfg.breaker_after)

    def url(self, route: Route, key: str, memory_id: str = "") -> str:
        """The route's address under base_url; an id that could climb out of it is refused."""
        path = route.path.lstrip("/")
        if ID_PLACEHOLDER in path:
            if memory_id in ("", ".", ".."):
                raise DaemonError(redact(f"the daemon listed a memory id {memory_id!r} that "
                                         f"cannot name {route.path}"))
            path = path.replace(ID_PLACEHOLDER, quote(memory_id, safe=""))
        url = self.base.join(path)
        if (url.scheme, url.host, url.port) != (self.base.scheme, self.base.host, self.base.port) \
                or not url.raw_path.startswith(self.base.raw_path):
            raise DaemonError(redact(f"{key}.path {route.path!r} leaves system.base_url "
                                     f"{self.shown}"))
        return str(url)

    def _headers(self) -> dict[str, str]:
        env = self.cfg.api_key_env
        if not env:
            return {}
        key = os.environ.get(env, "").strip()
        if not key:
            raise DaemonError(f"environment variable {env} is not set: export the daemon's key "
                              f"in it, or set system.api_key_env to the variable holding it")
        return {"authorization": f"Bearer {key}"}

    def call(self, route: Route, key: str, payload: Mapping[str, Any] | None = None,
             memory_id: str = "") -> PostResult:
        """One request with the retry policy; a failure is a DaemonError naming the fix."""
        url = self.url(route, key, memory_id)
        try:
            return post_json(url, payload, self._policy, method=route.method,
                             headers=self._headers(), client=self._client, sleep=self._sleep,
                             cooldown=self._cooldown)
        except HttpRetryError as err:
            raise DaemonError(_reason(err, route, key, self.cfg.api_key_env)) from err

    def send_turn(self, payload: Mapping[str, Any]) -> PostResult:
        """An ingest behind the circuit breaker: once `breaker_after` turns in a row failed,
        nothing more is sent and each turn fails at once with the reason that opened it. An
        answer is no success yet: the caller says `answered` once it maps onto a verdict, or
        `failed`, so answers that never map open the breaker as dead requests do."""
        if self._breaker.open_because is not None:
            raise DaemonError(NOT_SENT + self._breaker.open_because)
        try:
            return self.call(self.cfg.ingest, "system.ingest", payload)
        except DaemonError as err:
            self.failed(err.reason)
            raise

    def answered(self) -> None:
        """A turn got its verdict: the failures in a row start again from none."""
        self._breaker.succeeded()

    def failed(self, reason: str) -> None:
        """A turn got no verdict (no answer, or one that does not map): counts to the breaker."""
        if self._breaker.failed(reason):
            log.warning("the daemon at %s failed %d turns in a row: no more are sent this run "
                        "(system.breaker_after); the rest count as errors. Last error: %s",
                        self.shown, self.cfg.breaker_after, reason)

    def listed(self, route: Route, key: str, list_field: str) -> list[Any]:
        data = self.call(route, key).data
        try:
            items = pluck(data, list_field)
        except KeyError:
            items = None
        if not isinstance(items, list):
            where = f"at {key}.list_field {list_field!r}" if list_field else "(the whole answer)"
            raise DaemonError(redact(f"{route.method} {self.url(route, key)} answered no list "
                                     f"{where}: check {key}.list_field"))
        return items

    def memory_ids(self) -> list[str]:
        memories = self.cfg.memories
        rows = self.listed(memories, "system.memories", memories.list_field)
        try:
            return [str(pluck(row, memories.id_field)) for row in rows]
        except KeyError:
            raise DaemonError(f"a listed memory has no {memories.id_field!r}: check "
                              f"system.memories.id_field") from None

    def wipe(self) -> int:
        """Delete every listed memory until none is listed (a daemon may list a page at a
        time), in at most `max_list_pages` rounds; a delete that leaves a memory listed, or a
        daemon listing new memories round after round, fails instead of looping."""
        deleted: set[str] = set()
        rounds = 0
        while ids := self.memory_ids():
            rounds += 1
            if rounds > self.cfg.max_list_pages:
                raise DaemonError(redact(
                    f"memories are still listed at {self.url(self.cfg.memories, 'system.memories')}"
                    f" after {self.cfg.max_list_pages} rounds of listing and deleting "
                    f"({len(deleted)} deleted): check system.memories, or raise "
                    f"system.max_list_pages if the daemon lists a small page at a time"))
            if set(ids) <= deleted:
                raise DaemonError(redact(f"memories {ids[:3]} are still listed after DELETE "
                                         f"{self.url(self.cfg.delete, 'system.delete', ids[0])}: "
                                         f"check system.delete"))
            for memory_id in ids:
                self.call(self.cfg.delete, "system.delete", memory_id=memory_id)
            deleted.update(ids)
        return len(deleted)

    def preflight(self) -> None:
        """Before any work: the daemon answers, and every mapped route exists. List routes are
        read, and a search is sent and read as the replay will read it; routes with effects are
        asked with GET, which any server that has them answers
        with something other than 404 (memoryd: 405) and which changes nothing. DELETE needs a
        memory id, so it is tried only when the first wipe runs."""
        if not self.cfg.preflight:
            return
        try:
            self._wait_until_listening()
            if self.cfg.memories.mapped:
                self.memory_ids()
            if self.cfg.rejections.mapped:
                self.listed(self.cfg.rejections, "system.rejections",
                            self.cfg.rejections.list_field)
            searched = Capability.SEARCH in self.cfg.capabilities
            for key in ("ingest", "restart", *(("index",) if searched else ())):
                route = getattr(self.cfg, key)
                if route.mapped:
                    self._exists(route, f"system.{key}")
            if searched:  # a real search, read as every search will be: its shape fits
                search = self.cfg.search
                search_hits(search, self.call(search, "system.search",
                                              search.body("memeval preflight", 1)).data)
        except DaemonError as err:
            raise ConfigError(f"system=http failed its preflight: {err.reason} (system.preflight"
                              f"=false skips the check)") from None

    def _wait_until_listening(self) -> None:
        """A daemon started alongside the run (e.g. `serve memoryd &`) may still be loading its
        model: a refused connection is retried every half second for `startup_wait_s`."""
        deadline = time.monotonic() + self.cfg.startup_wait_s
        waiting = False
        while True:
            try:
                self._status(str(self.base), {})
                return
            except httpx.ConnectError:
                if time.monotonic() >= deadline:
                    return  # the preflight's own request names the failure
                if not waiting:
                    waiting = True
                    log.warning("waiting up to %.0f s for the daemon at %s to listen "
                                "(system.startup_wait_s)", self.cfg.startup_wait_s, self.shown)
                self._sleep(0.5)
            except httpx.HTTPError:
                return  # listening, though answering badly: the preflight says how

    def _status(self, url: str, headers: Mapping[str, str]) -> int:
        """A GET's status alone: its body, which a stalling or huge answer would make endless,
        is never read."""
        with self._client.stream("GET", url, headers=dict(headers),
                                 timeout=self.cfg.timeout_s) as response:
            return response.status_code

    def _exists(self, route: Route, key: str) -> None:
        url = self.url(route, key)
        try:
            status = self._status(url, self._headers())
        except httpx.HTTPError as err:
            raise DaemonError(redact(f"{type(err).__name__} from {url}: is the daemon running? "
                                     f"check system.base_url")) from err
        if status == 404:
            raise DaemonError(redact(f"HTTP 404 from {url}: the daemon has no such route; check "
                                     f"system.base_url and {key}.path"))
        if 300 <= status < 400:
            raise DaemonError(redact(f"HTTP {status} from {url}: a redirect, and memeval follows "
                                     f"none; set system.base_url to the address that answers"))

    def close(self) -> None:
        self._client.close()


def _reason(err: HttpRetryError, route: Route, key: str, key_env: str | None) -> str:
    """One line: what failed, where, and the setting that fixes it."""
    status = err.status
    said = f" (server said: {err.detail})" if err.detail else ""
    if status is not None and 300 <= status < 400:
        return redact(f"{err.cause} from {err.url}: a redirect, and memeval follows none (turns "
                      f"go to system.base_url only); set system.base_url to the address that "
                      f"answers")
    if status == 404:
        return redact(f"{err.cause} from {err.url}: the daemon has no such route; check "
                      f"system.base_url and {key}.path{said}")
    if status == 405:
        return redact(f"{err.cause} from {err.url}: check {key}.method (sent {route.method})"
                      f"{said}")
    if status is not None and 400 <= status < 500 and status not in (401, 403, 429):
        return redact(f"{err.cause} from {err.url}: the daemon refused the request; check the "
                      f"field names under {key}{said}")
    return explain_failure(err, setting="system", key_env=key_env)
