"""A content-addressed cache as Parquet shards, so machines share warm caches as plain files.

The SQLite caches must stay node-local (WAL needs every process on one host), so nodes of a
cluster and CI jobs share them by copying shard files (object store, artifact, rsync) instead.

A shard is `<cache>/<sha256>.parquet`: columns `key` (string) and `value` (binary), at most
SHARD_ROWS rows in key order, and key-value metadata `memeval.cache`, `memeval.identity`
(optional: what produced the values, e.g. an embedder), `memeval.rows` and `memeval.format`.
The name is the digest of the rows sorted by key (key bytes, NUL, value length as 8 bytes big
endian, value bytes), so the same rows always make the same file, an intact copy that exists
already is never rewritten, and a shard whose bytes changed is refused even when Parquet still
reads it.
Files arrive from other machines, so nothing is imported from a shard that fails a check, and a
caller's validator can refuse single values (e.g. a vector that is not of unit length).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memeval.utils.atomic import write_atomic
from memeval.utils.kvcache import SqliteKV

SHARD_ROWS = 4096  # rows per shard file
MAX_SHARD_BYTES = 256 * 2**20  # a shard's rows uncompressed: 4096 vectors 3072 wide take 50 MB
_FORMAT = "1"
_SCHEMA = pa.schema([("key", pa.string()), ("value", pa.binary())])


class ShardError(Exception):
    """A shard that cannot be trusted; str() is the reason."""


@dataclass(frozen=True)
class ImportReport:
    shards: int  # shard files read successfully
    imported: int  # rows added to the cache
    present: int  # rows skipped because the key was already cached (local value kept)
    invalid: int  # rows refused by the validator (counted, not imported)
    damaged: tuple[str, ...]  # one line per damaged shard: "<path>: <reason>"


def write_shards(folder: Path, cache: str, rows: Iterable[tuple[str, bytes]],
                 identity: str = "") -> list[Path]:
    """Write `rows` as shards in `folder/<cache>/`; the paths written or already present.

    Rows are taken SHARD_ROWS distinct keys at a time, in the order given (a key repeated within
    those keeps its last value): given in key order, as `export_store` gives them, the same rows
    make the same shards on every machine, so copies from several machines merge without
    duplicates.
    """
    directory = _directory(folder, cache)
    paths: list[Path] = []
    chunk: dict[str, bytes] = {}
    for key, value in rows:
        chunk[key] = value
        if len(chunk) == SHARD_ROWS:
            paths.append(_write_shard(directory, cache, chunk, identity))
            chunk = {}
    if chunk:
        paths.append(_write_shard(directory, cache, chunk, identity))
    return paths


def _check_size(metadata: pq.FileMetaData) -> None:
    """Before anything is decompressed: rows and their uncompressed bytes as its footer declares
    them (a few kB of zstd can declare a gigabyte)."""
    if metadata.num_rows > SHARD_ROWS:
        raise ShardError(f"{metadata.num_rows} rows, more than a shard holds ({SHARD_ROWS})")
    size = sum(metadata.row_group(g).column(c).total_uncompressed_size
               for g in range(metadata.num_row_groups) for c in range(metadata.num_columns))
    if size > MAX_SHARD_BYTES:
        raise ShardError(f"its rows take {size} bytes uncompressed, over the {MAX_SHARD_BYTES} "
                         f"a shard may")


def read_shard(path: Path, cache: str) -> list[tuple[str, bytes]]:
    """The rows of one shard of `cache`, or ShardError naming the first check it fails."""
    try:
        with path.open("rb") as handle:
            parquet = pq.ParquetFile(handle)
            _check_size(parquet.metadata)
            table = parquet.read()
        table.validate(full=True)  # offsets and UTF-8, which reading alone does not check
    except ShardError:
        raise
    except Exception as error:  # damage surfaces as many types (ArrowInvalid, OSError, …)
        detail = f"{type(error).__name__}: {' '.join(str(error).split())}"  # on one line
        raise ShardError(f"not a readable Parquet file ({detail})") from None
    if table.schema.remove_metadata() != _SCHEMA:
        columns = ", ".join(f"{field.name}: {field.type}" for field in table.schema)
        raise ShardError(f"columns are ({columns}), not (key: string, value: binary)")
    keys, values = table.column("key").to_pylist(), table.column("value").to_pylist()
    meta = {k.decode(errors="replace"): v.decode(errors="replace")
            for k, v in (table.schema.metadata or {}).items()}
    if meta.get("memeval.format") != _FORMAT:
        raise ShardError(f"format {meta.get('memeval.format')!r}, not {_FORMAT!r}")
    if meta.get("memeval.cache") != cache:
        raise ShardError(f"holds the {meta.get('memeval.cache')!r} cache, not {cache!r}")
    if meta.get("memeval.rows") != str(len(keys)):
        raise ShardError(f"{len(keys)} rows where its metadata says "
                         f"{meta.get('memeval.rows')!r}")
    if None in keys or None in values:
        raise ShardError("a key or value is null")
    if len(set(keys)) != len(keys):
        raise ShardError(f"{len(keys) - len(set(keys))} duplicate key(s)")
    rows = list(zip(keys, values, strict=True))
    try:
        digest = _digest(rows)
    except ValueError as error:
        raise ShardError(str(error)) from None
    if path.name != f"{digest}.parquet":
        raise ShardError(f"its rows do not match its name (their digest is {digest})")
    return rows


def import_shards(folder: Path, cache: str, store: SqliteKV,
                  valid: Callable[[list[bytes]], list[bool]] | None = None) -> ImportReport:
    """Add the rows of every shard in `folder/<cache>/` that `store` lacks.

    A damaged shard is skipped whole and reported; each sound one is added in one transaction.
    A key already in `store` keeps its local value. `valid` (values -> keep each?) refuses rows
    that a run could not use; they are counted, not imported.
    """
    directory = _directory(folder, cache)
    paths = sorted(path for path in directory.glob("*.parquet") if path.is_file())
    if not paths:
        raise ShardError(f"no shards in {directory}")
    shards = imported = present = invalid = 0
    damaged: list[str] = []
    for path in paths:
        try:
            rows = read_shard(path, cache)
        except ShardError as error:
            damaged.append(f"{path}: {error}")
            continue
        shards += 1
        if valid is not None:
            keep = valid([value for _, value in rows])
            invalid += keep.count(False)
            rows = [row for row, ok in zip(rows, keep, strict=True) if ok]
        added = store.add_missing(rows)
        imported += added
        present += len(rows) - added
    return ImportReport(shards, imported, present, invalid, tuple(damaged))


def export_store(store: SqliteKV, folder: Path, cache: str) -> list[Path]:
    """Every row of `store` as shards of `cache` in `folder`, read page by page in key order."""
    return write_shards(folder, cache, store.items())


def _directory(folder: Path, cache: str) -> Path:
    if not cache.isidentifier():  # a name, never a path out of `folder`
        raise ValueError(f"bad cache name {cache!r}")
    return Path(folder).expanduser() / cache


def _digest(rows: Sequence[tuple[str, bytes]]) -> str:
    """sha256 over the rows sorted by key; ValueError for a key holding NUL, which would make
    the encoding ambiguous."""
    digest = hashlib.sha256()
    for key, value in sorted(rows, key=lambda row: row[0]):
        encoded = key.encode("utf-8")
        if b"\0" in encoded:
            raise ValueError(f"key {key!r} holds a NUL character")
        digest.update(encoded)
        digest.update(b"\0")
        digest.update(len(value).to_bytes(8, "big"))
        digest.update(value)
    return digest.hexdigest()


def _write_shard(directory: Path, cache: str, chunk: dict[str, bytes], identity: str) -> Path:
    """Write one shard under its digest, atomically (`write_atomic`): a reader never sees half a
    file, and an interrupted writer leaves only a `.tmp` file, which import does not read."""
    rows = sorted(chunk.items())
    path = directory / f"{_digest(rows)}.parquet"
    if path.is_file():
        with suppress(ShardError):  # a damaged copy is replaced
            read_shard(path, cache)
            return path
    table = pa.table([pa.array([key for key, _ in rows], pa.string()),
                      pa.array([value for _, value in rows], pa.binary())],
                     schema=_SCHEMA.with_metadata({"memeval.cache": cache,
                                                  "memeval.identity": identity,
                                                  "memeval.rows": str(len(rows)),
                                                  "memeval.format": _FORMAT}))
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer)
    write_atomic(path, buffer.getvalue().to_pybytes())
    return path
