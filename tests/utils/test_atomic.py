"""Atomic writes: the old file or the new one, and no temporary file left on any exception."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memeval.utils import atomic
from memeval.utils.atomic import remove_stale_temps, write_text_atomic


class Stop(KeyboardInterrupt):
    """An exception as a signal handler would raise it, at any point of the write."""


@pytest.mark.faults
@pytest.mark.parametrize("step", ["fdopen", "fsync", "replace"])
def test_an_exception_at_any_step_keeps_the_old_file_and_leaves_no_temp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    target = tmp_path / "out.json"
    write_text_atomic(target, "old")

    def fail(*args: object, **kwargs: object) -> None:
        raise Stop

    monkeypatch.setattr(atomic.os, step, fail)
    with pytest.raises(Stop):
        write_text_atomic(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


@pytest.mark.faults
def test_an_exception_as_the_temp_file_is_created_leaves_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The name is known before the file exists, so even this instant is cleaned up."""
    real_open = os.open

    def open_then_stop(path: str, flags: int, mode: int = 0o777) -> int:
        os.close(real_open(path, flags, mode))
        raise Stop

    monkeypatch.setattr(atomic.os, "open", open_then_stop)
    with pytest.raises(Stop):
        write_text_atomic(tmp_path / "out.json", "new")
    assert list(tmp_path.iterdir()) == []


def test_remove_stale_temps_takes_only_temps_of_the_named_file(tmp_path: Path) -> None:
    for name in (".a.jsonl.k3j4h5g6.tmp", ".a.jsonl.0123456789abcdef.tmp",  # old and new names
                 ".b.jsonl.0123456789abcdef.tmp", "a.jsonl", "a.tmp"):
        (tmp_path / name).write_text("x")
    removed = remove_stale_temps(tmp_path, "a.jsonl")
    assert [p.name for p in removed] == [".a.jsonl.0123456789abcdef.tmp", ".a.jsonl.k3j4h5g6.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".b.jsonl.0123456789abcdef.tmp", "a.jsonl", "a.tmp"]
    assert [p.name for p in remove_stale_temps(tmp_path)] == [".b.jsonl.0123456789abcdef.tmp"]
