"""The memory record the quality scores read: memledger's fields, plus `record_outcome()`.

Confidence is optional: `None` means the writer declared none. 0.0 is a declared value (a
record kept only to remember a rejected idea), never "missing".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime


def check_confidence(owner: str, value: object) -> None:
    """None (undeclared) or a real number in [0, 1]; NaN, text and booleans are refused."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0.0 <= value <= 1.0:
        raise ValueError(f"{owner}: confidence must be a number in [0, 1], got {value!r}")


def check_ids(owner: str, name: str, value: object) -> None:
    """A list of memory ids: a string here would be walked a character at a time as ids, and a
    count has no ids to follow."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{owner}: {name} must be a list of memory ids, got {value!r:.80}")


@dataclass(frozen=True)
class Citation:
    path: str
    line_start: int
    line_end: int


@dataclass
class MemoryRecord:
    id: str
    content: str
    confidence: float | None = None
    derived_from: list[str] = field(default_factory=list)
    success_count: int = 0
    failure_count: int = 0
    access_count: int = 0
    conflicts: list[str] = field(default_factory=list)
    hedged: bool = False
    namespace: str = "default"
    created_by: str | None = None
    session_id: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    citation: Citation | None = None

    def __post_init__(self) -> None:
        owner = f"record '{self.id}'"
        check_confidence(owner, self.confidence)
        check_ids(owner, "derived_from", self.derived_from)
        check_ids(owner, "conflicts", self.conflicts)
        counts = (self.success_count, self.failure_count, self.access_count)
        if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts):
            raise ValueError(f"{owner}: counts must be non-negative whole numbers, "
                             f"got {counts!r:.80}")
        if not isinstance(self.hedged, bool):
            raise ValueError(f"{owner}: hedged must be true or false, got {self.hedged!r:.40}")

    def record_outcome(self, success: bool, when: datetime | None = None) -> None:
        """Acting on this memory worked (or did not): feeds MQS's usage component."""
        if success:
            self.success_count += 1
        else:
            self.failure_count += 1
        self.updated_at = when or datetime.now(UTC)
