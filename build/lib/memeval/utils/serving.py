"""What memeval's servers (Phoenix's launcher, `memeval serve`) share: hosts that are loopback
only, and SIGTERM and SIGHUP unwinding like Ctrl-C so a server's `finally` always runs."""

from __future__ import annotations

import contextlib
import ipaddress
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any


def is_loopback(host: str) -> bool:
    """Literal loopback only: a name other than `localhost` is never resolved (no DNS)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP unwind like Ctrl-C: the child is in its own session and would
    otherwise outlive us, since Python dies on them without running `finally`. SIGINT is taken
    too: a process started from a background job inherits SIGINT ignored, and Python then
    installs no Ctrl-C handler, so the server would never stop on it."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[signum] = signal.signal(signum, _interrupt)
    try:
        yield
    finally:
        for restored, handler in previous.items():
            signal.signal(restored, handler)
