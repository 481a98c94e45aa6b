"""Dataset registry: a dataset config yields a list of entries plus a fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from memeval.entry import Entry
from memeval.registry import Registry
from memeval.utils.redact import redact


class DatasetError(ValueError):
    """A dataset that cannot be used as configured."""


@dataclass
class LoadReport:
    """What a loader skipped and why, so nothing is lost silently."""

    source: str
    rows_read: int = 0
    problems: list[str] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def skipped(self) -> int:
        return len(self.problems)


@dataclass
class Dataset:
    name: str
    entries: list[Entry]
    report: LoadReport

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.entries)


def redacted_names(dataset: Dataset) -> Dataset:
    """The dataset with entry ids, label sources and load problems redacted like its texts: they
    reach metrics, stores, span attributes and the console. An id that redaction changes gets its
    position appended (`[REDACTED:github_token]#12`), so ids stay unique."""
    entries = []
    for n, e in enumerate(dataset.entries):
        entry_id = redact(e.id)
        source = None if e.label_source is None else redact(e.label_source)
        if entry_id != e.id:
            entry_id = f"{entry_id}#{n}"
        changed = (entry_id, source) != (e.id, e.label_source)
        entries.append(replace(e, id=entry_id, label_source=source) if changed else e)
    report = replace(dataset.report, problems=[redact(p) for p in dataset.report.problems])
    return Dataset(name=dataset.name, entries=entries, report=report)


def fingerprint(entries: Sequence[Entry]) -> str:
    """Content hash over ids, texts and labels: two runs compare only on equal fingerprints."""
    digest = hashlib.sha256()
    for e in entries:
        row = [e.id, e.user_prompt, e.assistant_response, e.label]
        digest.update(json.dumps(row, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]


DATASETS: Registry[Dataset] = Registry("dataset")
