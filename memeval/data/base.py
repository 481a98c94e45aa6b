"""Dataset registry: a dataset config yields a list of entries plus a fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from memeval.data.entry import Entry
from memeval.registry import Registry


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


def fingerprint(entries: Sequence[Entry]) -> str:
    """Content hash over ids, texts and labels: two runs compare only on equal fingerprints."""
    digest = hashlib.sha256()
    for e in entries:
        row = [e.id, e.user_prompt, e.assistant_response, e.label]
        digest.update(json.dumps(row, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]


DATASETS: Registry[Dataset] = Registry("dataset")
