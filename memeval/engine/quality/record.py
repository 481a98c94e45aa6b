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
        check_confidence(f"record '{self.id}'", self.confidence)
        counts = (self.success_count, self.failure_count, self.access_count)
        if min(counts) < 0:
            raise ValueError(f"record '{self.id}': counts must be non-negative, got {counts}")

    def record_outcome(self, success: bool, when: datetime | None = None) -> None:
        """Acting on this memory worked (or did not): feeds MQS's usage component."""
        if success:
            self.success_count += 1
        else:
            self.failure_count += 1
        self.updated_at = when or datetime.now(UTC)
