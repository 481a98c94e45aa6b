"""An HTTP client whose every request ends by one deadline: connect, headers and body together.

httpx's `timeout` bounds each socket operation, not the exchange: a server that sends a header
line (or a body byte) every second, never finishing, resets it on every read and holds a run for
ever. A BoundedClient takes a request's timeout (its largest phase) as the budget for the whole
exchange instead: from the moment the request is sent, every connect, TLS handshake, write and
read of its connection is given only the time left, and the first one to start or time out past
the deadline raises httpx's own timeout error (ConnectTimeout, WriteTimeout or ReadTimeout)
saying "no whole answer within N s". No thread or timer is involved: the deadline rides with the
request in a context variable, which the connection's socket operations read.

Every client memeval owns is one: judges, answerers, embedders, daemons, Phoenix, and the OpenAI
clients memeval hands to mem0.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple, TypeVar

import httpcore
import httpx


class _Deadline(NamedTuple):
    at: float  # time.monotonic() by which the exchange must be over
    budget_s: float  # what the request was given, for the message

    def refused(self, kind: type[httpcore.TimeoutException]) -> httpcore.TimeoutException:
        return kind(f"no whole answer within {self.budget_s:g} s")


_CURRENT: ContextVar[_Deadline | None] = ContextVar("memeval_http_deadline", default=None)
_T = TypeVar("_T")


@contextmanager
def _bounded_by(deadline: _Deadline) -> Iterator[None]:
    """Socket operations in this block end by `deadline`."""
    token = _CURRENT.set(deadline)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def _within(timeout: float | None, kind: type[httpcore.TimeoutException],
            operation: Callable[[float | None], _T]) -> _T:
    """`operation(timeout)` given no more than the time left; past the deadline, `kind`."""
    deadline = _CURRENT.get()
    if deadline is None:
        return operation(timeout)
    left = deadline.at - time.monotonic()
    if left <= 0:
        raise deadline.refused(kind)
    try:
        return operation(left if timeout is None else min(timeout, left))
    except httpcore.TimeoutException:
        if time.monotonic() >= deadline.at:
            raise deadline.refused(kind) from None
        raise


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return _within(timeout, httpcore.ReadTimeout, lambda t: self.inner.read(max_bytes, t))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _within(timeout, httpcore.WriteTimeout, lambda t: self.inner.write(buffer, t))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(_within(timeout, httpcore.ConnectTimeout, lambda t:
                                       self.inner.start_tls(ssl_context, server_hostname, t)))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own backend, its every socket operation held to the current deadline."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self.inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(_within(timeout, httpcore.ConnectTimeout, lambda t:
                                       self.inner.connect_tcp(host, port, t, local_address,
                                                              socket_options)))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore.NetworkStream:
        return _DeadlineStream(_within(timeout, httpcore.ConnectTimeout, lambda t:
                                       self.inner.connect_unix_socket(path, t, socket_options)))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class _DeadlineBody(httpx.SyncByteStream):
    """A response body read under its request's deadline, however late the caller reads it."""

    def __init__(self, inner: httpx.SyncByteStream, deadline: _Deadline) -> None:
        self.inner, self.deadline = inner, deadline

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self.inner)
        while True:
            with _bounded_by(self.deadline):
                chunk = next(chunks, None)
            if chunk is None:
                return
            yield chunk

    def close(self) -> None:
        self.inner.close()


def _budget(request: httpx.Request) -> float | None:
    """The request's largest timeout phase, the budget for its whole exchange (None: unbounded,
    which a caller must ask for explicitly with timeout=None)."""
    phases = [t for t in request.extensions.get("timeout", {}).values() if t is not None]
    return max(phases) if phases else None


class _DeadlineTransport(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        if isinstance(inner, httpx.HTTPTransport):  # a mock transport has no sockets to bound
            pool = inner._pool  # every connection it opens takes its backend from here
            pool._network_backend = _DeadlineBackend(pool._network_backend)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        budget = _budget(request)
        if budget is None:
            return self.inner.handle_request(request)
        deadline = _Deadline(time.monotonic() + budget, budget)
        with _bounded_by(deadline):
            response = self.inner.handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _DeadlineBody(response.stream, deadline)
        return response

    def close(self) -> None:
        self.inner.close()


class BoundedClient(httpx.Client):
    """httpx.Client, each of its transports (the direct one and any proxy's) under a deadline."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx.BaseTransport:
        return _DeadlineTransport(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx.BaseTransport:
        return _DeadlineTransport(super()._init_proxy_transport(*args, **kwargs))
