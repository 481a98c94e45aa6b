"""JSONL ring buffer of judged texts, persisted by whole-file atomic rewrite (as memoryd does).

The rejection store holds the most recent `capacity` rejections and feeds the learned noise
prototypes; the same structure holds judge acceptances for scorers that learn both sides.
A damaged file loads every valid line and reports the rest instead of failing.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from memeval.utils.atomic import remove_stale_temps, write_text_atomic
from memeval.utils.problems import Problems

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoreRecord:
    """The memoryd rejection-store fields (plus the entry id, for analysis); texts are redacted
    before they get here."""

    time: float
    stage: str
    user_len: int
    asst_len: int
    user_prefix: str
    asst_text: str
    source_id: str = ""


class RingStore:
    def __init__(self, path: str | Path | None, capacity: int = 500, text_chars: int = 500,
                 distinct: bool = True, flush_every: int = 1) -> None:
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.path = Path(path) if path is not None else None
        self.capacity = capacity
        self.text_chars = text_chars
        self.distinct = distinct
        self.flush_every = flush_every
        self._unflushed = 0
        # Oldest first; keyed by text when distinct (a repeat moves to the end in O(1)), else by
        # arrival. Each record is serialised once, on the way in: a flush is then a join.
        self._slots: OrderedDict[str | int, tuple[StoreRecord, str]] = OrderedDict()
        self._arrivals = itertools.count()
        self.load_problems: list[str] = []
        if self.path is not None:  # a rewrite a killed run left unfinished (the file is whole)
            remove_stale_temps(self.path.parent, self.path.name)
        self.reload()

    def reload(self) -> None:
        """Read the persisted buffer (a daemon restart); bad lines are reported, not fatal."""
        self.sync()
        self._slots.clear()
        self.load_problems = []
        if self.path is None or not self.path.exists():
            return
        damaged = Problems()
        for number, line in enumerate(self.path.read_bytes().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                self._append(StoreRecord(**json.loads(line.decode("utf-8"))))
            except (ValueError, TypeError, UnicodeDecodeError) as err:
                damaged.add(f"{self.path}:{number}", str(err))
        self.load_problems = damaged.lines()  # a few of each kind, and how many
        for problem in self.load_problems:
            log.warning("skipped damaged store line %s", problem)

    def add(self, stage: str, user_prompt: str, assistant_text: str, source_id: str = "") -> bool:
        """Append; with `distinct`, a text already held moves to most-recent instead of repeating
        (replayed passes would otherwise fill the buffer with copies of the same texts).
        True when the buffer gained a text it did not hold."""
        text = assistant_text[: self.text_chars]
        new = not (self.distinct and text in self._slots)
        record = StoreRecord(
            time=time.time(), stage=stage, user_len=len(user_prompt),
            asst_len=len(assistant_text), user_prefix=user_prompt[:100],
            asst_text=text, source_id=source_id,
        )
        self._append(record)
        self._unflushed += 1
        if self._unflushed >= self.flush_every:
            self.flush()
        return new

    def _append(self, record: StoreRecord) -> None:
        key = record.asst_text if self.distinct else next(self._arrivals)
        self._slots.pop(key, None)
        if len(self._slots) == self.capacity:
            self._slots.popitem(last=False)
        self._slots[key] = (record, json.dumps(vars(record), ensure_ascii=False) + "\n")

    @property
    def records(self) -> list[StoreRecord]:
        """Held records, oldest first."""
        return [record for record, _ in self._slots.values()]

    def sync(self) -> None:
        """Write pending additions, if any (pass ends, restarts)."""
        if self._unflushed:
            self.flush()

    def flush(self) -> None:
        """Whole-file atomic rewrite. With `flush_every` > 1, a crash loses at most that many
        recent additions (learning signal, never a run's results); each file stays whole."""
        self._unflushed = 0
        if self.path is not None:
            write_text_atomic(self.path, "".join(line for _, line in self._slots.values()))

    def recent_texts(self, n: int) -> list[str]:
        """The most recent n texts, oldest first."""
        newest = itertools.islice(reversed(self._slots.values()), max(n, 0))
        return [record.asst_text for record, _ in newest][::-1]

    def __len__(self) -> int:
        return len(self._slots)
