"""Content-addressed on-disk cache (SQLite): shared by the embedding and judge-response caches.

SQLite gives atomic commits and safe concurrent readers/writers, so parallel sweep jobs on one
machine can share one cache file and a killed run never leaves a half-written entry behind. WAL
mode needs every process on the same host: on a cluster, give each node a local `cache_dir`
rather than one on NFS or another network filesystem.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path


def content_key(*parts: str) -> str:
    """sha256 over the parts, NUL-separated so ('ab','c') and ('a','bc') differ."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


class SqliteKV:
    """A bytes-valued key-value table in one SQLite file."""

    def __init__(self, path: str | Path, table: str) -> None:
        if not table.isidentifier():
            raise ValueError(f"bad table name {table!r}")
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.table = table
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value BLOB NOT NULL)"
        )
        self._conn.commit()

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, value FROM {self.table} WHERE key IN ({marks})", chunk
                )
                found.update((k, bytes(v)) for k, v in rows)
        return found

    def get(self, key: str) -> bytes | None:
        return self.get_many([key]).get(key)

    def put_many(self, items: Iterable[tuple[str, bytes]]) -> None:
        with self._lock:
            self._conn.executemany(
                f"INSERT OR REPLACE INTO {self.table} (key, value) VALUES (?, ?)", list(items)
            )
            self._conn.commit()

    def put(self, key: str, value: bytes) -> None:
        self.put_many([(key, value)])

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
