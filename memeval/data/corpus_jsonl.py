"""memeval's own memory-corpus format (`dataset=memory_jsonl`): a JSONL file of memories and one
of labelled queries, for retrieval replay.

A memory line: `id` (text or integer), `text`, optional `timestamp` (ISO 8601, `Z` allowed;
without a zone it is taken as UTC), `session`, `source`, `metadata` (an object). A query line:
`id`, `query`, `relevant` (memory id -> grade 1 or 2, or a list of ids, each graded 2), optional
`asked_at`, `category`, `scope` (the memory ids it searches). Bad lines, unknown fields and
duplicate ids are reported with file and line and skipped (or raise with `on_error: raise`); so is
a query naming a memory that is not loaded, so one bad query never refuses the whole corpus.

The helpers below are shared with the benchmark loaders (locomo.py, longmemeval.py), which read
one JSON array each and name problems by position in it instead of by line.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from memeval.data.base import (
    CORPORA,
    CorpusMemory,
    CorpusQuery,
    DatasetError,
    LoadReport,
    MemoryCorpus,
)
from memeval.data.jsonl import SetKind, check_read_settings, load_rows
from memeval.data.memory_corpus import GRADES, checked_corpus

MEMORY_FIELDS = {"id", "text", "timestamp", "session", "source", "metadata"}
QUERY_FIELDS = {"id", "query", "relevant", "asked_at", "category", "scope"}


@dataclass
class MemoryJsonlConfig:
    gold_answers: ClassVar[bool] = False  # a query line has no 'answer' (QUERY_FIELDS)
    memories: str = "???"
    queries: str = "???"
    on_error: str = "skip"

    def validate(self) -> None:
        check_read_settings(self.on_error)


def count(report: LoadReport, key: str, n: int = 1) -> None:
    report.stats[key] = report.stats.get(key, 0) + n


def as_utc(value: datetime) -> datetime:
    """Every corpus time is UTC-aware, so a replay in time order compares them all; a time whose
    UTC falls outside the years 1–9999 is a ValueError naming it."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{value.isoformat()} lies outside the years 1-9999 once taken to "
                         f"UTC") from None


def input_path(path: str, what: str, setting: str) -> Path:
    file = Path(path).expanduser()
    if not file.is_file():
        raise DatasetError(f"{what} file not found: {file} (set {setting}=FILE)")
    return file


COMPRESSED = {b"\x1f\x8b": "gzip", b"PK\x03\x04": "zip", b"\x28\xb5\x2f\xfd": "zstd",
              b"BZh": "bzip2", b"\xfd7zXZ": "xz"}
"""The first bytes of a compressed file, so one is named instead of failing as bad UTF-8."""


def read_json_array(file: Path, what: str) -> list[Any]:
    """A benchmark's file: one JSON array, read whole (json.load once, however large)."""
    with file.open("rb") as handle:
        head = handle.read(8)
    for magic, kind in COMPRESSED.items():
        if head.startswith(magic):
            raise DatasetError(f"{file}: a {kind}-compressed file; decompress it first and set "
                               f"dataset.path to the {what} JSON inside")
    try:
        with file.open("rb") as handle:
            value = json.load(handle)
    except RecursionError:
        raise DatasetError(f"{file}: JSON nested too deeply to read") from None
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are ones
        raise DatasetError(f"{file}: not a JSON file ({err}); expected the {what} JSON "
                           f"array") from None
    if not isinstance(value, list):
        got = "one object" if isinstance(value, dict) else type(value).__name__
        raise DatasetError(f"{file}: expected the {what} JSON array, got {got}")
    return value


def _text(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"'{key}' must be non-empty text")
    return value


def _id(value: Any) -> str:
    # bool is an int to Python, never an id
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise ValueError("'id' must be non-empty text or an integer")
    return str(value)


def _optional_text(row: dict[str, Any], key: str) -> str | None:
    value = row.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"'{key}' must be text")
    return value


def _time(row: dict[str, Any], key: str) -> datetime | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"'{key}' must be an ISO 8601 time as text")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"'{key}' is not an ISO 8601 time: {value!r}") from None
    try:
        return as_utc(parsed)
    except ValueError as err:
        raise ValueError(f"'{key}' {err}") from None


def _check_fields(row: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(row) - allowed)
    if unknown:
        raise ValueError(f"unknown fields {unknown} (allowed: {', '.join(sorted(allowed))})")


def parse_memory(row: dict[str, Any]) -> CorpusMemory:
    _check_fields(row, MEMORY_FIELDS)
    metadata = row.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError("'metadata' must be an object")
    return CorpusMemory(id=_id(row.get("id")), text=_text(row, "text"),
                  timestamp=_time(row, "timestamp"), session=_optional_text(row, "session"),
                  source=_optional_text(row, "source"), metadata=metadata or {})


def _relevant(value: Any) -> dict[str, int]:
    if isinstance(value, list):
        return {_id(item): 2 for item in value}
    if isinstance(value, dict):
        for grade in value.values():
            if isinstance(grade, bool) or grade not in GRADES:
                raise ValueError(f"'relevant' grades must be {' or '.join(map(str, GRADES))}, "
                                 f"got {grade!r}")
        return {str(key): grade for key, grade in value.items()}
    raise ValueError("'relevant' must be an object (memory id -> grade) or a list of ids")


def parse_query(row: dict[str, Any], known: Collection[str]) -> CorpusQuery:
    """The query, once every memory it names is among the `known` ones."""
    _check_fields(row, QUERY_FIELDS)
    relevant = _relevant(row.get("relevant"))
    if not relevant:
        raise ValueError("'relevant' names no memory")
    scope = row.get("scope")
    if scope is not None:
        if not isinstance(scope, list) or not scope:
            raise ValueError("'scope' must be a non-empty list of memory ids")
        scope = tuple(dict.fromkeys(_id(item) for item in scope))
        unknown = [m for m in scope if m not in known]
        if unknown:
            raise ValueError(f"'scope' names memories that are not loaded: {unknown[:5]}")
        outside = sorted(set(relevant) - set(scope))
        if outside:
            raise ValueError(f"relevant memories {outside[:5]} are outside its 'scope'")
    missing = sorted(m for m in relevant if m not in known)
    if missing:
        raise ValueError(f"relevant memories {missing[:5]} are not loaded")
    category = row.get("category", "")
    if not isinstance(category, str | int) or isinstance(category, bool):
        raise ValueError("'category' must be text")
    return CorpusQuery(id=_id(row.get("id")), text=_text(row, "query"), relevant=relevant,
                       asked_at=_time(row, "asked_at"), category=str(category), scope=scope)


MEMORY_LINES = SetKind("memories", "dataset.memories", "an 'id' and a 'text'", file="memory")
QUERY_LINES = SetKind("queries", "dataset.queries",
                      "an 'id', a 'query' and the 'relevant' memories it names", file="query")


def load_memory_jsonl(memories_path: str | Path, queries_path: str | Path,
                      on_error: str = "skip") -> MemoryCorpus:
    """Memories, then the queries naming them, read by the labelled-JSONL loader (`load_rows`):
    bad lines and repeated ids by file and line, either file without a usable line an error."""
    memory_file = input_path(str(memories_path), "memory", "dataset.memories")
    query_file = input_path(str(queries_path), "query", "dataset.queries")
    report = LoadReport(source=f"{memory_file}, {query_file}")
    memories, _ = load_rows(memory_file, MEMORY_LINES, lambda row, _: parse_memory(row),
                            lambda memory: memory.id, on_error, report)
    known = {memory.id for memory in memories}
    queries, _ = load_rows(query_file, QUERY_LINES, lambda row, _: parse_query(row, known),
                           lambda query: query.id, on_error, report)
    return checked_corpus(memory_file.stem, memories, queries, report)


@CORPORA.register("memory_jsonl", MemoryJsonlConfig)
def build_memory_jsonl(cfg: MemoryJsonlConfig, **_: object) -> MemoryCorpus:
    return load_memory_jsonl(cfg.memories, cfg.queries, cfg.on_error)
