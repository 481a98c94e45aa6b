"""Content-addressed on-disk cache (SQLite): shared by the embedding and judge-response caches.

SQLite gives atomic commits and safe concurrent readers/writers, so parallel sweep jobs on one
machine can share one cache file and a killed run never leaves a half-written entry behind. WAL
mode needs every process on the same host: on a cluster, give each node a local `cache_dir`
rather than one on NFS or another network filesystem.

A damaged file (partial copy, crash on a full disk, stray bytes) must not end a run: the cache
loads what is valid and reports the rest.

- Opening checks cheaply. SQLite's first statement reads the header and the schema and compares
  the header's page count with the file size, so a file that is not a database or is truncated
  fails at once, at a cost independent of its size. `PRAGMA quick_check` would also catch a bad
  page in the middle, but it reads every page: on a 68 MB cache it took 0.11 s warm and 2.5 s
  from a cold page cache on a 2-core machine, and 1 s / 19 s at 680 MB, on every open of every job.
  So it runs only when a previous run found damage and left the `<name>.needs-check` marker.
  A file cut mid-page passes SQLite's checks, so the size is checked to be whole pages too.
- Damage found at open: the file and its -wal/-shm/-journal siblings are renamed to
  `<name>.damaged-<UTC time>` (kept, never deleted), every row SQLite can still read is copied
  into a fresh file at the original path, and one warning says so (`SqliteKV.recovered`). An
  flock on the directory makes concurrent jobs that find the same damage recover it once.
- Damage found mid-run: lookups that hit it miss and writes that hit it are dropped (the values
  are recomputed), one warning is logged and the marker is left for the next open to repair. The
  file is not swapped mid-run: other jobs may hold it open, and the next open does it safely.

SQLite keeps no checksums, so "valid" means what SQLite returns without error: bytes overwritten
inside a cell that still parses are beyond anyone's detection.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memeval.registry import ConfigError
from memeval.utils.disk import disk_full

log = logging.getLogger(__name__)

_COLUMNS = "(key TEXT PRIMARY KEY, value BLOB NOT NULL)"
_ROWID_MIN, _ROWID_MAX = -(2**63), 2**63 - 1
_SIBLINGS = ("-wal", "-shm", "-journal")  # files SQLite keeps beside the database


def content_key(*parts: str) -> str:
    """sha256 over the parts, NUL-separated so ('ab','c') and ('a','bc') differ."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class RecoveryReport:
    """What opening a damaged file did, for callers that report it beyond the log."""

    salvaged: int  # rows copied into the fresh file, over every cache table in it
    moved_to: Path  # the damaged file, kept (with its -wal/-shm) for inspection


class SqliteKV:
    """A bytes-valued key-value table in one SQLite file."""

    def __init__(self, path: str | Path, table: str) -> None:
        if not table.isidentifier():
            raise ValueError(f"bad table name {table!r}")
        self.path = Path(path).expanduser()
        self.table = table
        self.recovered: RecoveryReport | None = None
        self._marker = self.path.with_name(f"{self.path.name}.needs-check")
        self._damage_reported = False
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = self._open()
        except (OSError, sqlite3.OperationalError) as error:  # not damage: that is recovered
            raise ConfigError(f"cannot open the cache {self.path} ({error}): make it writable, "
                              f"or point cache_dir= (or $MEMEVAL_CACHE_DIR) at a writable "
                              f"directory") from None

    def _open(self) -> sqlite3.Connection:
        conn = self._checked_connection()
        if conn is not None:
            return conn
        with _directory_lock(self.path.parent):
            # Another job may have repaired the file while this one waited for the lock.
            conn = self._checked_connection()
            if conn is not None:
                return conn
            self.recovered = _recover(self.path, self.table)
            self._marker.unlink(missing_ok=True)
        log.warning(
            "cache %s was damaged: salvaged %d rows into a fresh file, damaged file kept as %s",
            self.path, self.recovered.salvaged, self.recovered.moved_to,
        )
        conn = _connect(self.path, self.table, full_check=False)
        if conn is None:  # only a failing disk could damage the file just written
            raise sqlite3.DatabaseError(f"{self.path} is damaged again right after its recovery")
        return conn

    def _checked_connection(self) -> sqlite3.Connection | None:
        """The full check runs only if a run reported damage; passing it clears that report."""
        full_check = self._marker.exists()
        conn = _connect(self.path, self.table, full_check)
        if conn is not None and full_check:
            self._marker.unlink(missing_ok=True)
        return conn

    def _report_damage(self, error: sqlite3.DatabaseError) -> None:
        """Warn once per instance and leave the marker so the next open repairs the file."""
        if self._damage_reported:
            return
        self._damage_reported = True
        log.warning(
            "cache %s is damaged (%s): lookups there miss and writes there are dropped; "
            "it is repaired the next time it is opened", self.path, error,
        )
        with suppress(OSError):  # a full or read-only disk: the warning still stands
            self._marker.touch()

    def _select(self, keys: list[str]) -> dict[str, bytes]:
        marks = ",".join("?" * len(keys))
        rows = self._conn.execute(
            f"SELECT key, value FROM {self.table} WHERE key IN ({marks})", keys
        ).fetchall()
        return {k: bytes(v) for k, v in rows}

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                try:
                    found.update(self._select(chunk))
                except sqlite3.DatabaseError as error:
                    if not _is_damage(error):
                        raise
                    self._report_damage(error)
                    found.update(self._select_each(chunk))
        return found

    def _select_each(self, keys: list[str]) -> dict[str, bytes]:
        """Key by key, so an unreadable page costs only the keys stored on it, not the chunk."""
        found: dict[str, bytes] = {}
        for key in keys:
            try:
                found.update(self._select([key]))
            except sqlite3.DatabaseError as error:
                if not _is_damage(error):
                    raise
        return found

    def get(self, key: str) -> bytes | None:
        return self.get_many([key]).get(key)

    def put_many(self, items: Iterable[tuple[str, bytes]]) -> None:
        self._insert("REPLACE", items)

    def put(self, key: str, value: bytes) -> None:
        self.put_many([(key, value)])

    def add_missing(self, items: Iterable[tuple[str, bytes]]) -> int:
        """Insert only the keys not stored yet, in one transaction; how many were added.

        A stored value is kept: values come from content keys, so a key's local value is as good
        as an incoming one, and is the one this machine's runs have already used. On damage the
        rows are dropped as in `put_many`, and 0 are added.
        """
        return self._insert("IGNORE", items)

    def _insert(self, conflict: str, items: Iterable[tuple[str, bytes]]) -> int:
        """INSERT OR `conflict` in one transaction; rows written (0 when damage dropped them)."""
        rows = list(items)
        with self._lock:
            try:
                added = self._conn.executemany(
                    f"INSERT OR {conflict} INTO {self.table} (key, value) VALUES (?, ?)", rows
                ).rowcount
                self._conn.commit()
            except sqlite3.DatabaseError as error:
                self._conn.rollback()
                if error.sqlite_errorcode == sqlite3.SQLITE_FULL:
                    raise disk_full(self.path) from None
                if not _is_damage(error):
                    raise
                self._report_damage(error)
                return 0
        return int(added)

    def items(self, page: int = 1000) -> Iterator[tuple[str, bytes]]:
        """Every row in key order, read `page` rows at a time, so a large cache is never held in
        memory whole and the lock is not held between pages. Damage ends the listing early, with
        the warning of `_report_damage`."""
        after: str | None = None
        while True:
            where, bounds = ("", ()) if after is None else ("WHERE key > ?", (after,))
            with self._lock:
                try:
                    batch = self._conn.execute(
                        f"SELECT key, value FROM {self.table} {where} ORDER BY key LIMIT ?",
                        (*bounds, page),
                    ).fetchall()
                except sqlite3.DatabaseError as error:
                    if not _is_damage(error):
                        raise
                    self._report_damage(error)
                    return
            yield from ((key, bytes(value)) for key, value in batch)
            if len(batch) < page:
                return
            after = batch[-1][0]

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def check_writable_directory(directory: Path) -> None:
    """Create `directory` if needed and prove a file can be made in it; OSError if not. Lets a
    run name an unusable cache folder before any work, not at its first cache write."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=directory):
        pass


def _is_damage(error: sqlite3.DatabaseError) -> bool:
    """Corruption, as opposed to a lock timeout, a full disk or a bug, which still raise."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF  # primary code of an extended one
    return code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _connect(path: Path, table: str, full_check: bool) -> sqlite3.Connection | None:
    """A connection to a sound cache file, or None if it is damaged (see the module docstring).

    A file that ends mid-page passes SQLite's own checks (it reads the missing bytes as zeros, so
    rows there would come back silently wrong), hence the size check; SQLite only ever writes
    whole pages, and a job that sees a size mid-extension rechecks under the recovery lock.
    """
    conn = sqlite3.connect(path, timeout=60, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # first read: header, page count, schema
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        if path.stat().st_size % page_size or (
            full_check and conn.execute("PRAGMA quick_check(1)").fetchone() != ("ok",)
        ):
            conn.close()
            return None
        conn.execute(f"CREATE TABLE IF NOT EXISTS {table} {_COLUMNS}")
        conn.commit()
    except sqlite3.DatabaseError as error:
        conn.close()
        if _is_damage(error):
            return None
        raise
    return conn


@contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """Serialise recoveries across processes, so two jobs that open the same damaged file do not
    both move it aside (the second would move the first one's fresh file)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _recover(path: Path, table: str) -> RecoveryReport:
    """Move the damaged file aside, then copy what it still yields into a fresh file at `path`.

    Moving first means the salvage reads a file nobody else opens, and a crash midway leaves at
    worst an empty cache beside the intact damaged copy. A job that opens `path` during the
    salvage starts on the fresh file and sees the salvaged rows once they commit.
    """
    moved_to = _move_aside(path)
    with _salvage_source(moved_to) as source:
        uri = f"{source.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as damaged:
            # Lets SQLite read a truncated file up to its end instead of refusing it outright.
            damaged.execute("PRAGMA writable_schema=ON")
            salvaged = {name: _salvage_table(damaged, name)
                        for name in _cache_tables(damaged, table)}
    with closing(sqlite3.connect(path, timeout=60)) as fresh:
        fresh.execute("PRAGMA journal_mode=WAL")
        with fresh:  # one transaction: the fresh file holds all of the salvage or none of it
            fresh.execute("BEGIN")
            for name, rows in salvaged.items():
                fresh.execute(f"CREATE TABLE IF NOT EXISTS {name} {_COLUMNS}")
                # IGNORE: a job that opened the new path meanwhile wrote values at least as good.
                fresh.executemany(f"INSERT OR IGNORE INTO {name} (key, value) VALUES (?, ?)", rows)
    return RecoveryReport(sum(map(len, salvaged.values())), moved_to)


def _move_aside(path: Path) -> Path:
    """Rename the file and its siblings to `<name>.damaged-<UTC time>`, never over another."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target, n = path.with_name(f"{path.name}.damaged-{stamp}"), 0
    while any(Path(f"{target}{suffix}").exists() for suffix in ("", *_SIBLINGS)):
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    # Main file last: a fresh file at `path` must never be paired with the old WAL or journal.
    for suffix in (*_SIBLINGS, ""):
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.rename(f"{target}{suffix}")
    return target


@contextmanager
def _salvage_source(damaged: Path) -> Iterator[Path]:
    """The file to salvage from: `damaged` itself, or a copy cut to whole pages if it ends
    mid-page (SQLite would read the missing bytes as zeros). Afterwards removes whatever this
    and SQLite's read-only WAL reader created, so the salvage leaves the kept copy as moved."""
    found = {p for p in _family(damaged) if p.exists()}
    source, size, page = damaged, damaged.stat().st_size, _page_size(damaged)
    try:
        if page and size % page:
            source = damaged.with_name(f"{damaged.name}.salvage")
            shutil.copyfile(damaged, source)
            os.truncate(source, size - size % page)
            if Path(f"{damaged}-wal").exists():
                shutil.copyfile(f"{damaged}-wal", f"{source}-wal")
        yield source
    finally:
        for made in {*_family(damaged), *_family(source)} - found:
            made.unlink(missing_ok=True)


def _family(path: Path) -> list[Path]:
    return [path, *(Path(f"{path}{suffix}") for suffix in _SIBLINGS)]


def _page_size(path: Path) -> int:
    """The page size an SQLite header declares; 0 if `path` does not start with one."""
    with path.open("rb") as f:
        header = f.read(18)
    if len(header) < 18 or not header.startswith(b"SQLite format 3\0"):
        return 0
    size = int.from_bytes(header[16:18], "big")
    return 65536 if size == 1 else size  # 1 is how the 2-byte field spells 65536


def _cache_tables(conn: sqlite3.Connection, table: str) -> list[str]:
    """Every SqliteKV table in the file (others may share it), or just `table` if the schema is
    unreadable; tables of any other shape are left in the damaged copy."""
    try:
        schema = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.DatabaseError:
        return [table]
    names = {name for name, sql in schema if sql == f"CREATE TABLE {name} {_COLUMNS}"}
    return sorted(names | {table})


def _salvage_table(conn: sqlite3.Connection, table: str) -> list[tuple[str, bytes]]:
    """Every row the table's b-tree still yields, in rowid order, stepping over unreadable pages.

    Reading the table b-tree (not the key index) keeps each key with the value from its own cell;
    a row of the wrong types is damage that happened to parse, and is dropped. Batches that hit
    damage are retried a row at a time, so only rows SQLite cannot return are lost.
    """
    rows: list[tuple[str, bytes]] = []
    start = _ROWID_MIN
    while True:
        batch = _rows_from(conn, table, start, 256)
        if batch is None:
            batch = _rows_from(conn, table, start, 1)
        if batch is None:
            resume = _next_readable(conn, table, start)
            if resume is None:
                return rows
            start = resume
            continue
        rows.extend((k, v) for _, k, v in batch if isinstance(k, str) and isinstance(v, bytes))
        if len(batch) == 0 or batch[-1][0] == _ROWID_MAX:
            return rows
        start = batch[-1][0] + 1


def _rows_from(
    conn: sqlite3.Connection, table: str, start: int, limit: int
) -> list[tuple[int, object, object]] | None:
    """Up to `limit` rows from rowid `start` on, or None if any of them cannot be read."""
    try:
        return conn.execute(
            f"SELECT rowid, key, value FROM {table} WHERE rowid >= ? ORDER BY rowid LIMIT ?",
            (start, limit),
        ).fetchall()
    except sqlite3.DatabaseError:
        return None


def _next_readable(conn: sqlite3.Connection, table: str, bad: int) -> int | None:
    """The first rowid after `bad` a read can resume from, or None if the rest is unreadable.

    Gallops past the damage, then bisects back, so only the unreadable stretch is skipped at a
    cost of O(log rowid range) probes.
    """
    low, step = bad, 1
    while True:
        if low >= _ROWID_MAX:
            return None
        high = min(bad + step, _ROWID_MAX)
        if _rows_from(conn, table, high, 1) is not None:
            break
        low, step = high, step * 2
    while high - low > 1:
        middle = (low + high) // 2
        if _rows_from(conn, table, middle, 1) is not None:
            high = middle
        else:
            low = middle
    return high
