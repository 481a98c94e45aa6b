"""A full disk under memeval's own writes: one DiskFull naming where, what was needed and what is
free, with the previous version of the file whole and no temporary file left behind."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from memeval.utils.atomic import write_atomic
from memeval.utils.disk import DiskFull
from memeval.utils.kvcache import SqliteKV

pytestmark = pytest.mark.faults


def test_an_atomic_write_on_a_full_disk_keeps_the_old_file_and_names_the_need(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "pass-2.json"
    target.write_bytes(b"the previous version")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(DiskFull) as refused:
        write_atomic(target, b"x" * 3 * 2**20)
    message = str(refused.value)
    assert message.startswith(f"no space left on the disk holding {target} (3.0 MiB needed, ")
    assert "free some space" in message and "\n" not in message
    assert target.read_bytes() == b"the previous version"
    assert [p.name for p in tmp_path.iterdir()] == ["pass-2.json"]


def test_a_cache_that_cannot_grow_is_a_disk_full_naming_it(tmp_path: Path) -> None:
    """SQLite's own SQLITE_FULL, reached by capping the file's pages as a full disk would."""
    cache = SqliteKV(tmp_path / "embeddings.sqlite", "vectors")
    connection: Any = cache._conn
    (pages,) = connection.execute("PRAGMA page_count").fetchone()
    connection.execute(f"PRAGMA max_page_count={pages + 1}")
    with pytest.raises(DiskFull, match=f"^no space left on the disk holding "
                                       f"{tmp_path / 'embeddings.sqlite'} "):
        cache.put_many((f"k{i}", os.urandom(4096)) for i in range(64))
    assert cache.get_many(["k0"]) == {}  # the failed transaction left nothing half written
