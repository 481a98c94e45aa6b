"""The registered kinds of hand-labelled quality set (QUALITY_SETS): memory records (trust labels
or grades), MAI scenarios, memory pairs labelled by conflict type, and retrieval queries with
graded relevant memories.

Each is JSONL with one object per line; a bad line is reported with file:line and skipped (or
raised with `on_error="raise"`), like every other loader. A set with nothing usable (every line
bad, an empty file, another kind of set) is a DatasetError under either setting, never a run on
zero rows. A set is served redacted, like every other input: its texts through `redact`, every
other string (ids, namespaces, creators, sessions, paths, the ids it refers to) one to one
through the file's `RedactedNames`, so every reference still holds.

A memory record's trust is a `label` (trusted | questionable | untrusted), a numeric `trust`
grade in [0, 1] (0: never act on it, 1: act on it without re-checking), or both. `conflicts` is
a list of record ids, or a count when the ids are unknown.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from memeval.data.base import (
    LoadReport,
    RedactedNames,
    Rule,
    names_held,
    redacted_report,
    redacted_value,
)
from memeval.data.jsonl import SetKind, check_read_settings, load_rows
from memeval.quality.mai import MAI_LABELS, AttributedMemory
from memeval.quality.record import Citation, MemoryRecord
from memeval.utils.redact import redact

TRUST_LABELS = ("untrusted", "questionable", "trusted")  # ordinal, worst first
TRUST_GRADE = "a number in [0, 1]: 0 never act on it, 1 act on it without re-checking"
# The data cards' grade scale: below the first edge untrusted, below the second questionable.
TRUST_BANDS = (0.35, 0.7)
TRUSTED_GRADE = TRUST_BANDS[-1]  # the data cards' lowest grade of a trusted record


def trust_band(grade: float) -> int:
    """The grade's band as an index into TRUST_LABELS."""
    return sum(grade >= edge for edge in TRUST_BANDS)


T = TypeVar("T")


@dataclass(frozen=True)
class QualitySet(Generic[T]):
    """A registered kind of quality set: what its lines hold, how a line is parsed, what
    identifies it, which of its fields are texts and which name another input's ids. `load`
    reads a file of it with the one labelled-JSONL loader (`load_rows`)."""

    kind: SetKind
    parse: Callable[[dict[str, Any]], T]
    key: Callable[[T], str]
    texts: tuple[str, ...]  # fields served through `redact`; every other string is a name
    refers: tuple[str, ...] = ()  # fields holding another input's ids (a dataset's entries)

    def load(self, path: str | Path, on_error: str = "skip",
             refs: RedactedNames | None = None) -> tuple[list[T], LoadReport]:
        """The file's items and load report, redacted. `refs`: the names of the input its
        `refers` fields name (`Dataset.names`), so they match it; else the file's own."""
        items, report = load_rows(Path(path), self.kind, lambda row, _: self.parse(row),
                                  self.key, on_error)
        rules: dict[str, Rule] = dict.fromkeys(self.texts, redact)
        if refs is not None:
            rules |= dict.fromkeys(self.refers, refs)
        names = names_held(items, rules)
        return [redacted_value(item, names, rules) for item in items], redacted_report(report)


QUALITY_SETS: dict[str, QualitySet[Any]] = {}
"""The third kind of input beside labelled entries and memory corpora (data/base.py): files an
experiment's settings name; `python -m memeval list datasets` lists them."""


def quality_set(name: str, kind: SetKind, parse: Callable[[dict[str, Any]], T],
                key: Callable[[T], str], texts: tuple[str, ...],
                refers: tuple[str, ...] = ()) -> QualitySet[T]:
    if name in QUALITY_SETS:
        raise ValueError(f"quality set '{name}' is registered twice")
    QUALITY_SETS[name] = registered = QualitySet(kind, parse, key, texts, refers)
    return registered


@dataclass(frozen=True)
class LabelledRecord:
    record: MemoryRecord
    label: str | None  # None when the record is graded only
    note: str = ""
    trust: float | None = None  # the numeric grade, when given

    @property
    def trust_rank(self) -> int:
        """The label's rank, worst first; a record graded only has none."""
        if self.label is None:
            raise ValueError(f"record '{self.record.id}' has a trust grade, not a label")
        return TRUST_LABELS.index(self.label)

    @property
    def trusted(self) -> bool:
        """The outcome a trust score predicts: labelled trusted, else graded at least
        TRUSTED_GRADE."""
        if self.label is not None:
            return self.label == "trusted"
        return (self.trust or 0.0) >= TRUSTED_GRADE


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
    newer: str | None = None  # for temporal pairs, the side that supersedes, when labelled
    kind: str | None = None  # what the memories are about (preference, fact, ...), when given

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


MAX_CONFLICT_COUNT = 1000  # far past the point where MQS's conflict penalty bottoms a score out


def _time(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _text(row: dict[str, Any], key: str, default: str | None = None) -> str:
    """A text field; without a default, a missing one is reported as missing."""
    value = row[key] if default is None else row.get(key)
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"field '{key}' must be text, got {value!r:.40}")
    return value


def _id(row: dict[str, Any], key: str) -> str:
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"field '{key}' must be text or a whole number, got {value!r:.40}")
    return str(value)


def _grade(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ValueError(f"trust must be {TRUST_GRADE}, got {value!r:.40}")  # NaN included
    return float(value)


def _conflicts(value: Any) -> Any:
    """A count of conflicts stands for that many references whose ids are unknown."""
    if isinstance(value, bool) or not isinstance(value, int):
        return value  # the record checks it is a list of ids
    if not 0 <= value <= MAX_CONFLICT_COUNT:
        raise ValueError(f"conflicts must be a list of record ids or a count in "
                         f"[0, {MAX_CONFLICT_COUNT}], got {value}")
    return [f"(unnamed conflict {i})" for i in range(1, value + 1)]


def _record(row: dict[str, Any]) -> LabelledRecord:
    label, trust = row.pop("label", None), _grade(row.pop("trust", None))
    if label is None and trust is None:
        raise ValueError(f"needs a trust label ({' | '.join(reversed(TRUST_LABELS))}) "
                         f"or a trust grade ({TRUST_GRADE})")
    if label is not None and label not in TRUST_LABELS:
        raise ValueError(f"label '{label!s:.40}' is not one of {', '.join(TRUST_LABELS)}")
    note = _text(row, "label_note", "")
    row.pop("label_note", None)
    citation = row.pop("citation", None)
    known = {f.name for f in fields(MemoryRecord)}
    unknown = set(row) - known
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}")
    row["id"], row["content"] = _id(row, "id"), _text(row, "content")
    if "conflicts" in row:
        row["conflicts"] = _conflicts(row["conflicts"])
    row["created_at"], row["updated_at"] = _time(row.get("created_at")), _time(
        row.get("updated_at"))
    record = MemoryRecord(**row, citation=Citation(**citation) if citation else None)
    return LabelledRecord(record, label, note, trust)


def _memories(row: dict[str, Any], key: str, default: list[Any] | None = None) -> list[Any]:
    value = row[key] if default is None else row.get(key) or default
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        raise ValueError(f"field '{key}' must be a list of memory objects")
    return [AttributedMemory(**{**m, "id": _id(m, "id")}) for m in value]


def _scenario(row: dict[str, Any]) -> Scenario:
    if row["ground_truth"] not in MAI_LABELS:
        raise ValueError(f"ground_truth '{row['ground_truth']!s:.40}' is not one of "
                         f"{', '.join(MAI_LABELS)}")
    return Scenario(_id(row, "scenario_id"), row["ground_truth"],
                    _text(row, "agent_decision", ""), _memories(row, "retrieved_memories"),
                    _memories(row, "ancestors", []), _text(row, "label_note", ""))


def _side(row: dict[str, Any], key: str) -> PairSide:
    side = row[key]
    if not isinstance(side, dict):
        raise ValueError(f"field '{key}' must be an object with the memory's content")
    if not _text(side, "content").strip():
        raise ValueError("both memories need content")
    return PairSide(**side)


def _pair(row: dict[str, Any]) -> LabelledPair:
    if row["conflict"] not in CONFLICT_LABELS:
        raise ValueError(f"conflict '{row['conflict']!s:.40}' is not one of "
                         f"{', '.join(CONFLICT_LABELS)}")
    newer = row.get("newer")
    if newer not in (None, "a", "b"):
        raise ValueError(f"newer '{newer!s:.40}' must be \"a\", \"b\" or null")
    return LabelledPair(_id(row, "pair_id"), _side(row, "a"), _side(row, "b"), row["conflict"],
                        _text(row, "note", ""), newer, _text(row, "kind", "") or None)


def _query(row: dict[str, Any]) -> LabelledQuery:
    given = row["relevant"]
    relevant = {str(k): int(v) for k, v in given.items()} if isinstance(given, dict) else {}
    if not relevant or any(g not in (1, 2) for g in relevant.values()):
        raise ValueError("relevant must map entry ids to grades 1 or 2")
    if not _text(row, "query").strip():
        raise ValueError("empty query")
    superseded = row.get("superseded") or []
    if not isinstance(superseded, list) or not all(isinstance(s, str) for s in superseded):
        raise ValueError("superseded must be a list of entry ids")
    return LabelledQuery(_id(row, "query_id"), row["query"], relevant, _text(row, "kind", ""),
                         tuple(superseded), _text(row, "note", ""))


def check_source(path: str, on_error: str, what: str) -> None:
    """Config check shared by the experiments that read a labelled set."""
    if not path:
        raise ValueError(f"{what} must name the labelled JSONL file")
    check_read_settings(on_error)


RECORDS = quality_set(
    "memory_records", SetKind("memory records", "experiment.records", "id, content, and a trust "
                              "label (trusted | questionable | untrusted) or grade"),
    _record, lambda r: r.record.id, texts=("content", "note"))
SCENARIOS = quality_set(
    "mai_scenarios", SetKind("MAI scenarios", "experiment.scenarios",
                             "scenario_id, ground_truth and retrieved_memories"),
    _scenario, lambda s: s.id, texts=("decision", "note"))
PAIRS = quality_set(
    "conflict_pairs", SetKind("conflict pairs", "experiment.pairs", "pair_id, a, b and conflict"),
    _pair, lambda p: p.id, texts=("content", "note", "kind"))
QUERIES = quality_set(
    "retrieval_queries", SetKind("retrieval queries", "experiment.queries",
                                 "query_id, query and relevant"),
    _query, lambda q: q.id, texts=("query", "note", "kind"), refers=("relevant", "superseded"))

load_memory_records = RECORDS.load
load_scenarios = SCENARIOS.load
load_conflict_pairs = PAIRS.load
load_queries = QUERIES.load


def file_fingerprint(path: str | Path) -> str:
    """Content hash of a quality set, so calibration runs on different data never compare."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
