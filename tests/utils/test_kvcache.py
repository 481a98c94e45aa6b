"""SqliteKV and content_key: the on-disk cache under embeddings and judge responses."""

from __future__ import annotations

import hashlib
import logging
import random
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from memeval.backends.embedders.cache import CachedEmbedder
from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.registry import ConfigError
from memeval.utils.kvcache import SqliteKV, check_writable_directory, content_key
from tests.engine.fakes import CountingEmbedder


def test_content_key_separates_parts() -> None:
    assert content_key("ab", "c") != content_key("a", "bc")
    assert content_key("a", "b") == content_key("a", "b")
    assert len(content_key("x")) == 64


def test_content_key_survives_lone_surrogates() -> None:
    assert content_key("bad \ud800 text") != content_key("bad  text")


def test_put_get_overwrite_and_len(tmp_path: Path) -> None:
    kv = SqliteKV(tmp_path / "kv.sqlite", "t")
    assert kv.get("k") is None and len(kv) == 0
    kv.put("k", b"\x00\x01")
    assert kv.get("k") == b"\x00\x01"
    kv.put("k", b"new")
    assert kv.get("k") == b"new" and len(kv) == 1


def test_get_many_over_the_chunk_size(tmp_path: Path) -> None:
    kv = SqliteKV(tmp_path / "kv.sqlite", "t")
    kv.put_many((f"k{i}", str(i).encode()) for i in range(1200))
    keys = [f"k{i}" for i in range(0, 1300, 1)]
    found = kv.get_many(keys)
    assert len(found) == 1200
    assert found["k1199"] == b"1199" and "k1250" not in found


def test_tables_are_separate_and_persist(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "kv.sqlite"
    a, b = SqliteKV(path, "a"), SqliteKV(path, "b")
    a.put("k", b"from a")
    assert b.get("k") is None
    a.close()
    assert SqliteKV(path, "a").get("k") == b"from a"


def test_bad_table_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bad table name"):
        SqliteKV(tmp_path / "kv.sqlite", "x; DROP TABLE y")


# --- damaged files: a truncated or corrupted cache loads what is valid and reports the rest ---

LOGGER = "memeval.utils.kvcache"


def _filled(path: Path, n: int = 3000, table: str = "t") -> dict[str, bytes]:
    """A real cache of n distinct values, checkpointed so damage to the file hits real rows."""
    values = {f"{table}{i:05d}": hashlib.sha256(f"{table}{i}".encode()).digest() * 3
              for i in range(n)}
    kv = SqliteKV(path, table)
    kv.put_many(values.items())
    kv.close()
    assert not Path(f"{path}-wal").exists()  # the last close checkpointed the WAL away
    return values


def _garble_middle_leaf(path: Path) -> None:
    """Overwrite the middle one of the file's table b-tree leaf pages (type byte 0x0D, page 1
    excluded) with garbage, leaving the pages before and after it whole."""
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    leaves = [i for i in range(1, len(data) // size) if data[i * size] == 0x0D]
    index = leaves[len(leaves) // 2]
    # An invalid page-type byte first, so SQLite certainly refuses the page: garbage that still
    # parses as cells is something no reader can tell from data (SQLite keeps no checksums).
    data[index * size : (index + 1) * size] = b"\xff" + random.Random(0).randbytes(size - 1)
    path.write_bytes(bytes(data))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == logging.WARNING]


def _damaged_copies(path: Path) -> list[Path]:
    """Damaged files kept beside `path`, without the -wal/-shm files kept alongside them."""
    return sorted(p for p in path.parent.glob(f"{path.name}.damaged-*")
                  if not p.name.endswith(("-wal", "-shm", "-journal")))


@pytest.mark.faults
def test_random_bytes_are_moved_aside_and_the_cache_starts_empty(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kv.sqlite"
    junk = random.Random(1).randbytes(50_000)
    path.write_bytes(junk)
    kv = SqliteKV(path, "t")
    assert kv.recovered is not None and kv.recovered.salvaged == 0
    assert _damaged_copies(path) == [kv.recovered.moved_to]
    assert kv.recovered.moved_to.read_bytes() == junk  # kept exactly as found
    assert len(kv) == 0
    kv.put("k", b"v")
    assert kv.get("k") == b"v"
    assert len(_warnings(caplog)) == 1
    kv.close()
    again = SqliteKV(path, "t")
    assert again.recovered is None and again.get("k") == b"v"


@pytest.mark.faults
def test_zero_length_file_is_an_empty_cache_not_damage(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite"
    path.touch()
    kv = SqliteKV(path, "t")
    assert kv.recovered is None and _damaged_copies(path) == []
    kv.put("k", b"v")
    assert kv.get("k") == b"v"


@pytest.mark.faults
def test_truncated_file_salvages_exactly_the_readable_rows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kv.sqlite"
    values = _filled(path)
    half = path.stat().st_size // 2
    with path.open("r+b") as f:
        f.truncate(half)
    kv = SqliteKV(path, "t")
    report = kv.recovered
    assert report is not None and 0 < report.salvaged < len(values)
    found = kv.get_many(list(values))
    assert len(found) == report.salvaged == len(kv)
    assert all(values[k] == v for k, v in found.items())  # nothing salvaged is wrong
    assert report.moved_to.stat().st_size == half and _damaged_copies(path) == [report.moved_to]
    (warning,) = _warnings(caplog)
    assert str(path) in warning and str(report.moved_to) in warning
    assert f"salvaged {report.salvaged} rows" in warning
    kv.put("new", b"fresh")
    assert kv.get("new") == b"fresh"
    kv.close()
    again = SqliteKV(path, "t")  # the salvage was written to disk, not just kept in memory
    assert again.recovered is None and len(again) == report.salvaged + 1


@pytest.mark.faults
def test_file_cut_mid_page_is_damage_not_zero_filled_values(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite"
    values = _filled(path)
    with path.open("r+b") as f:  # SQLite's own checks pass: it reads the lost bytes as zeros
        f.truncate(path.stat().st_size - 1000)
    kv = SqliteKV(path, "t")
    assert kv.recovered is not None and 0 < kv.recovered.salvaged < len(values)
    found = kv.get_many(list(values))
    assert len(found) == kv.recovered.salvaged
    assert all(values[k] == v for k, v in found.items())


@pytest.mark.faults
def test_salvage_drops_rows_of_the_wrong_types(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite"
    with closing(sqlite3.connect(path)) as conn:  # what a parsed-but-damaged cell can look like
        conn.execute("CREATE TABLE t (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        odd = [("int", 5), ("text", "abc"), (b"blob key", b"x")]
        conn.executemany("INSERT INTO t VALUES (?, ?)", odd)
        conn.commit()
    values = _filled(path)
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size - 1000)
    kv = SqliteKV(path, "t")
    assert kv.recovered is not None and kv.recovered.salvaged > 0
    assert kv.get_many(["int", "text"]) == {}  # not b"\0" * 5 (bytes(5)) or b"abc"
    assert len(kv) == kv.recovered.salvaged == len(kv.get_many(list(values)))  # no blob key


@pytest.mark.faults
def test_rows_only_in_the_wal_are_salvaged_and_the_wal_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite"
    values = _filled(path, 2000)
    late = {f"late{i:04d}": hashlib.sha256(f"late{i}".encode()).digest() for i in range(500)}
    with closing(sqlite3.connect(path)) as writer:  # a job that dies before any checkpoint
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.executemany("INSERT INTO t (key, value) VALUES (?, ?)", late.items())
        writer.commit()
        crashed = tmp_path / "crashed"
        crashed.mkdir()
        for suffix in ("", "-wal"):
            shutil.copyfile(f"{path}{suffix}", crashed / f"kv.sqlite{suffix}")
    path = crashed / "kv.sqlite"
    with path.open("r+b") as f:  # a partial copy of the main file
        f.truncate(path.stat().st_size // 2 + 100)
    as_found = {suffix: Path(f"{path}{suffix}").read_bytes() for suffix in ("", "-wal")}
    kv = SqliteKV(path, "t")
    assert kv.recovered is not None
    found = kv.get_many([*values, *late])
    assert late.items() <= found.items()  # every row that lived only in the WAL
    assert all({**values, **late}[k] == v for k, v in found.items())
    kept = kv.recovered.moved_to
    assert {s: Path(f"{kept}{s}").read_bytes() for s in as_found} == as_found  # untouched
    assert not list(crashed.glob("*.salvage*"))  # the whole-page working copy is cleaned up


@pytest.mark.faults
def test_garbage_page_found_mid_run_misses_only_its_rows_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kv.sqlite"
    values = _filled(path)
    _garble_middle_leaf(path)
    kv = SqliteKV(path, "t")  # the cheap open check does not read the middle of the file
    assert kv.recovered is None
    found = kv.get_many(list(values))
    lost = sorted(set(values) - set(found))
    assert 0 < len(lost) < 100  # one leaf's rows, not a whole 500-key chunk
    assert all(values[k] == v for k, v in found.items())
    assert kv.get_many(lost) == {}
    kv.put(lost[0], b"rewritten")  # replacing a row on the bad page: dropped, not raised
    assert kv.get(lost[0]) is None
    kv.put("new", b"fresh")  # the healthy part still takes writes
    assert kv.get("new") == b"fresh"
    (warning,) = _warnings(caplog)
    assert str(path) in warning
    assert not _damaged_copies(path)  # no swapping files under a running job


@pytest.mark.faults
def test_garbage_page_is_repaired_on_the_next_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kv.sqlite"
    values = _filled(path)
    _garble_middle_leaf(path)
    first = SqliteKV(path, "t")
    readable = first.get_many(list(values))
    first.close()
    caplog.clear()
    second = SqliteKV(path, "t")
    assert second.recovered is not None
    # The salvage walks past the bad page: it loses that page's rows and nothing after them.
    assert second.recovered.salvaged == len(readable) < len(values)
    assert second.get_many(list(values)) == readable
    assert len(_warnings(caplog)) == 1 and len(_damaged_copies(path)) == 1
    second.close()
    assert SqliteKV(path, "t").recovered is None  # repaired once, not on every open


@pytest.mark.faults
def test_a_stale_damage_report_is_checked_once_and_cleared(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite"
    values = _filled(path)
    marker = tmp_path / "kv.sqlite.needs-check"  # left by a job that saw damage since repaired
    marker.touch()
    kv = SqliteKV(path, "t")
    assert kv.recovered is None and not _damaged_copies(path)
    assert kv.get_many(list(values)) == values
    assert not marker.exists()  # later opens skip the full check again


@pytest.mark.faults
def test_recovery_keeps_the_other_tables_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite"
    a_values, b_values = _filled(path, 1500, "a"), _filled(path, 1500, "b")
    with path.open("r+b") as f:  # lose the last page: SQLite now refuses the whole file
        f.truncate(path.stat().st_size - 4096)
    a = SqliteKV(path, "a")
    assert a.recovered is not None
    b_found = SqliteKV(path, "b").get_many(list(b_values))
    assert a.recovered.salvaged == len(a.get_many(list(a_values))) + len(b_found)
    assert len(b_found) > 1000 and all(b_values[k] == v for k, v in b_found.items())


@pytest.mark.faults
def test_embedding_cache_embeds_correctly_over_a_damaged_file(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    texts = [f"text number {i}" for i in range(3000)]
    filling = CachedEmbedder(HashingEmbedder(32), path)
    filling.embed(texts)
    filling.store.close()
    assert not Path(f"{path}-wal").exists()  # the close checkpointed the vectors into the file
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)
    inner = CountingEmbedder(HashingEmbedder(32))
    cached = CachedEmbedder(inner, path)
    assert cached.store.recovered is not None
    out = cached.embed(texts)
    np.testing.assert_array_equal(out, HashingEmbedder(32).embed(texts))
    assert cached.hits == cached.store.recovered.salvaged > 0
    embedded = sum(map(len, inner.batches))
    assert embedded == cached.misses == len(texts) - cached.hits  # only the lost are recomputed
    cached.embed(texts)
    assert sum(map(len, inner.batches)) == embedded  # and were written to the fresh file


# --- a cache that cannot be opened at all is a setting to fix, named with its path ---


@pytest.mark.bad_input
def test_an_unopenable_cache_file_is_named_with_the_setting_to_change(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite"
    path.mkdir()  # what SQLite reports as "unable to open database file"
    with pytest.raises(ConfigError, match="unable to open database file") as caught:
        SqliteKV(path, "t")
    assert str(path) in str(caught.value) and "cache_dir=" in str(caught.value)
    assert not _damaged_copies(path)  # not damage: nothing is moved aside


@pytest.mark.bad_input
def test_a_cache_under_a_file_is_named_with_the_setting_to_change(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="MEMEVAL_CACHE_DIR") as caught:
        SqliteKV(blocker / "kv.sqlite", "t")
    assert str(blocker / "kv.sqlite") in str(caught.value)


def test_check_writable_directory(tmp_path: Path) -> None:
    made = tmp_path / "new" / "cache"
    check_writable_directory(made)
    assert made.is_dir() and not list(made.iterdir())  # created, and the probe left nothing
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        check_writable_directory(tmp_path / "file")
