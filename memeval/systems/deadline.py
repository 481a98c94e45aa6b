"""Calls into code memeval did not write, each with a deadline, on one thread of their own.

A system's every call runs on a daemon thread owned by that system, and the run waits for it no
longer than the call's deadline. A call that overruns is abandoned: the thread is left to it (a
daemon thread never holds up the process's exit) and no further call is made into that system,
since it may be holding its own locks. Running every call on the same thread keeps a system
that ties objects to the thread that made them (an sqlite3 connection) working, and separates a
`KeyboardInterrupt` the system raises itself (a failure) from the user's Ctrl-C, which only the
main thread receives. Whatever the call raises, `SystemExit` included, comes back as
`SystemFailure` naming the system and the call; memeval's own named errors, which an adapter of
memeval's raises with a message of their own, pass through unchanged.

`os._exit` ends a process without unwinding: from a system's first call to its close, a call of
it from memeval's process raises instead, so a system cannot end a run with exit 0 and no results.
"""

from __future__ import annotations

import contextvars
import os
import posix
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from memeval.metrics.gate_metrics import SystemFailure
from memeval.utils.redact import redact

T = TypeVar("T")
SHOWN_CHARS = 300  # of a system's exception message: enough to act on, never a flood


class ExitRefused(BaseException):
    """A system called `os._exit` in memeval's process."""


_real_exit = os._exit
_guarded_pid: int | None = None
_holders = 0  # bounded systems not yet closed: os._exit is refused while there are any
exits_refused: list[int] = []  # the statuses asked for, from any thread


def _refuse_exit(status: int) -> NoReturn:
    if os.getpid() != _guarded_pid:  # a forked child (multiprocessing) exits as it means to
        _real_exit(status)
    exits_refused.append(status)
    raise ExitRefused(f"it called os._exit({status}), which would end memeval's process "
                      f"without its results")


def _hold_exit() -> None:
    global _guarded_pid, _holders
    _holders += 1
    _guarded_pid = os.getpid()
    os._exit = posix._exit = _refuse_exit


def _release_exit() -> None:
    global _holders
    _holders -= 1
    if _holders == 0:
        os._exit = posix._exit = _real_exit


def described(err: BaseException) -> str:
    """`Type: message`, redacted and cut short; a message that cannot be made is said so."""
    try:
        message = str(err)
    except BaseException:  # a system's own __str__ may raise anything
        message = "<its message could not be read>"
    text = redact(f"{type(err).__name__}: {message}" if message else type(err).__name__)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def named_errors() -> tuple[type[Exception], ...]:
    """memeval's own named errors: mistakes in a user's settings, data or environment, and a
    failing service or system, each said in one line; they pass the boundary unchanged."""
    from memeval.backends.embedders.base import EmbeddingError
    from memeval.backends.judges.base import JudgeError
    from memeval.data.base import DatasetError
    from memeval.registry import ConfigError
    from memeval.utils.disk import DiskFull

    return ConfigError, DatasetError, DiskFull, EmbeddingError, JudgeError, SystemFailure


@dataclass
class _Call:
    run: Callable[[], Any]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


_STOP = _Call(lambda: None)  # the thread's last call


@dataclass(frozen=True)
class Limits:
    """How long a call may take: `call_s`, plus `item_s` for each item of a call given many
    (memories to index, records to score, turns to prepare)."""

    call_s: float
    item_s: float = 0.0

    def of(self, items: int = 0) -> float:
        return self.call_s + self.item_s * items


class CallThread:
    """One system's calls, in order, on one daemon thread, each within its deadline."""

    def __init__(self, system: str, limits: Limits) -> None:
        _hold_exit()
        self._open = True
        self.system = system  # named in every failure (renamed once the system says its name)
        self.limits = limits
        self.stuck: str | None = None  # the call that overran: nothing more is sent
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, daemon=True,
                                        name="memeval-system")
        self._thread.start()

    def close(self) -> None:
        """No more calls: the thread ends, unless a call it is stuck in never does."""
        if self._open:
            self._open = False
            self._calls.put(_STOP)
            _release_exit()

    def _serve(self) -> None:
        while True:
            call = self._calls.get()
            if call is _STOP:
                return
            try:
                call.result = call.run()
            except BaseException as err:  # the system's, whatever it is
                call.error = err
            finally:
                call.done.set()

    def call(self, what: str, fn: Callable[..., T], *args: Any, items: int = 0,
             **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` on the system's thread, in the caller's context variables;
        SystemFailure when it raises or overruns `limits.of(items)` seconds."""
        if self.stuck is not None or not self._open:
            why = f"its {self.stuck} never returned" if self.stuck else "it was closed"
            raise SystemFailure(f"system '{self.system}': {what} not called, since {why}")
        context = contextvars.copy_context()
        call = _Call(lambda: context.run(fn, *args, **kwargs))
        self._calls.put(call)
        deadline = self.limits.of(items)
        if not call.done.wait(deadline):
            self.stuck = what
            raise SystemFailure(f"system '{self.system}': {what} did not return within "
                                f"{deadline:g} s (system.call_timeout_s"
                                + (", system.item_timeout_s per item" if items else "")
                                + "); no further call is made into it")
        if call.error is None:
            return call.result
        if isinstance(call.error, named_errors()):
            raise call.error
        raise self.failure(what, call.error) from None

    def failure(self, what: str, err: BaseException) -> SystemFailure:
        return SystemFailure(f"system '{self.system}' failed in {what}: {described(err)}")
