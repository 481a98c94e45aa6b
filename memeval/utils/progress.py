"""Progress on long work done below the experiments: a function takes a `Progress` and wraps the
loop that takes the time in it. A run passes `RunContext.progress` (a tqdm bar that honours the
run's `progress` setting), so no step of a run is silent; `quiet` shows nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

T = TypeVar("T")


class Progress(Protocol):
    """`items` as they are, shown as a bar named `desc` counting `total` of `unit`."""

    def __call__(self, items: Iterable[T], total: int, desc: str,
                 unit: str = ...) -> Iterator[T]: ...


def quiet(items: Iterable[T], total: int, desc: str, unit: str = "item") -> Iterator[T]:
    """No bar: for work outside a run (tests, notebooks, benchmarks)."""
    return iter(items)


def step(progress: Progress, desc: str, work: Callable[[], T]) -> T:
    """One piece of work that cannot report as it goes (a library's fit), shown as a bar of one
    step: its name is on screen while it runs."""
    (done,) = [work() for _ in progress((0,), 1, desc, "step")]  # the bar closes at its end
    return done


def under(progress: Progress, owner: str) -> Progress:
    """`progress` with each bar named as `owner`'s work (`owner: desc`), so a bar shown by a
    function that many callers use says whose step it is."""
    def named(items: Iterable[T], total: int, desc: str, unit: str = "item") -> Iterator[T]:
        return progress(items, total, f"{owner}: {desc}", unit)
    return named
