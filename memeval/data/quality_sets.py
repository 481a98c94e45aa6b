"""Loaders for the hand-labelled quality sets: memory records (trust labels), MAI scenarios,
memory pairs labelled by conflict type, and retrieval queries with graded relevant memories.

Both are JSONL with one object per line; a bad line is reported with file:line and skipped
(or raised with `on_error="raise"`), like every other loader.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from memeval.data.base import LoadReport
from memeval.data.jsonl import check_read_settings, note_problem, read_objects
from memeval.engine.quality.mai import MAI_LABELS, AttributedMemory
from memeval.engine.quality.record import Citation, MemoryRecord

TRUST_LABELS = ("untrusted", "questionable", "trusted")  # ordinal, worst first
T = TypeVar("T")


@dataclass(frozen=True)
class LabelledRecord:
    record: MemoryRecord
    label: str
    note: str = ""

    @property
    def trust_rank(self) -> int:
        return TRUST_LABELS.index(self.label)


@dataclass(frozen=True)
class Scenario:
    id: str
    ground_truth: str
    decision: str
    memories: list[AttributedMemory]
    ancestors: list[AttributedMemory]
    note: str = ""


CONFLICT_LABELS = ("contradiction", "temporal", "semantic", "none")


@dataclass(frozen=True)
class PairSide:
    content: str
    path: str | None = None
    timestamp: str | None = None


@dataclass(frozen=True)
class LabelledPair:
    id: str
    a: PairSide
    b: PairSide
    conflict: str
    note: str = ""

    @property
    def same_source(self) -> bool:
        return self.a.path is not None and self.a.path == self.b.path


@dataclass(frozen=True)
class LabelledQuery:
    id: str
    query: str
    relevant: dict[str, int]  # entry id -> grade (2 answers it, 1 helps)
    kind: str = ""
    superseded: tuple[str, ...] = ()
    note: str = ""


def _time(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _record(row: dict[str, Any]) -> LabelledRecord:
    label = row.pop("label")
    if label not in TRUST_LABELS:
        raise ValueError(f"label '{label}' is not one of {', '.join(TRUST_LABELS)}")
    note = row.pop("label_note", "")
    citation = row.pop("citation", None)
    known = {f.name for f in fields(MemoryRecord)}
    unknown = set(row) - known
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}")
    row["created_at"], row["updated_at"] = _time(row.get("created_at")), _time(
        row.get("updated_at"))
    record = MemoryRecord(**row, citation=Citation(**citation) if citation else None)
    return LabelledRecord(record, label, note)


def _scenario(row: dict[str, Any]) -> Scenario:
    if row["ground_truth"] not in MAI_LABELS:
        raise ValueError(f"ground_truth '{row['ground_truth']}' is not one of "
                         f"{', '.join(MAI_LABELS)}")
    return Scenario(row["scenario_id"], row["ground_truth"], row.get("agent_decision", ""),
                    [AttributedMemory(**m) for m in row["retrieved_memories"]],
                    [AttributedMemory(**m) for m in row.get("ancestors", [])],
                    row.get("label_note", ""))


def _pair(row: dict[str, Any]) -> LabelledPair:
    if row["conflict"] not in CONFLICT_LABELS:
        raise ValueError(f"conflict '{row['conflict']}' is not one of {', '.join(CONFLICT_LABELS)}")
    sides = [PairSide(**row[side]) for side in ("a", "b")]
    if not all(side.content.strip() for side in sides):
        raise ValueError("both memories need content")
    return LabelledPair(row["pair_id"], sides[0], sides[1], row["conflict"], row.get("note", ""))


def _query(row: dict[str, Any]) -> LabelledQuery:
    relevant = {str(k): int(v) for k, v in row["relevant"].items()}
    if not relevant or any(g not in (1, 2) for g in relevant.values()):
        raise ValueError("relevant must map entry ids to grades 1 or 2")
    if not str(row["query"]).strip():
        raise ValueError("empty query")
    return LabelledQuery(row["query_id"], row["query"], relevant, row.get("kind", ""),
                         tuple(row.get("superseded", [])), row.get("note", ""))


def _load(path: Path, parse: Callable[[dict[str, Any]], T], key: Callable[[T], str],
          on_error: str) -> tuple[list[T], LoadReport]:
    report = LoadReport(source=str(path))
    items: list[T] = []
    seen: set[str] = set()
    for number, row in read_objects(path, report, on_error):
        try:
            item = parse(row)
        except (KeyError, TypeError, ValueError) as err:
            reason = f"missing field {err}" if isinstance(err, KeyError) else str(err)
            note_problem(report, path, number, reason, on_error)
            continue
        if key(item) in seen:
            note_problem(report, path, number, f"duplicate id '{key(item)}'", on_error)
            continue
        seen.add(key(item))
        items.append(item)
    return items, report


def check_source(path: str, on_error: str, what: str) -> None:
    """Config check shared by the experiments that read a labelled set."""
    if not path:
        raise ValueError(f"{what} must name the labelled JSONL file")
    check_read_settings(on_error)


def load_memory_records(path: str | Path,
                        on_error: str = "skip") -> tuple[list[LabelledRecord], LoadReport]:
    return _load(Path(path), _record, lambda r: r.record.id, on_error)


def load_scenarios(path: str | Path, on_error: str = "skip") -> tuple[list[Scenario], LoadReport]:
    return _load(Path(path), _scenario, lambda s: s.id, on_error)


def load_conflict_pairs(path: str | Path,
                        on_error: str = "skip") -> tuple[list[LabelledPair], LoadReport]:
    return _load(Path(path), _pair, lambda p: p.id, on_error)


def load_queries(path: str | Path,
                 on_error: str = "skip") -> tuple[list[LabelledQuery], LoadReport]:
    return _load(Path(path), _query, lambda q: q.id, on_error)


def file_fingerprint(path: str | Path) -> str:
    """Content hash of a quality set, so calibration runs on different data never compare."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
