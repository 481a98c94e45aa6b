"""Memory confidence with recency decay, per the openclaw memory-quality document.

    confidence = base(source_type) × 0.5 + recency × 0.3 + access_bonus × 0.1 + citation × 0.1
    recency      = exp(−days_old / 30)
    access_bonus = min(log1p(access_count) × 0.05, 0.10)
    citation     = 0.05 when the memory carries a citation

Every weight is configuration. As written, the ceiling is 0.5 + 0.3 + 0.01 + 0.005 = 0.815, so the
document's own example (0.9234) cannot occur; memeval keeps the formula and says so.

Relevance is a property of a query, not of a memory: memeval ranks by confidence × relevance,
applying relevance once. `compat: true` reproduces the reference code, which multiplies the
confidence by relevance and then ranks by confidence × relevance again (relevance squared),
counts age in whole days, and gives an unknown source type 0.50.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

DEFAULT_SOURCE_WEIGHTS = {"USER.md": 1.0, "MEMORY.md": 0.95, "AGENTS.md": 0.90, "session": 0.85,
                          "heartbeat": 0.70, "inferred": 0.50, "fallback": 0.40}


@dataclass
class ConfidenceWeights:
    source_weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_SOURCE_WEIGHTS))
    unknown_source: float = 0.40  # the document's fallback weight; the reference code uses 0.50
    source: float = 0.5
    recency: float = 0.3
    access: float = 0.1
    citation: float = 0.1
    half_life_days: float = 30.0  # the e-folding time of exp(−days / 30), as the document has it
    access_step: float = 0.05
    access_cap: float = 0.10
    citation_bonus: float = 0.05
    compat: bool = False

    def validate(self) -> None:
        weights = [*self.source_weights.values(), self.unknown_source, self.source, self.recency,
                   self.access, self.citation, self.access_step, self.access_cap,
                   self.citation_bonus]
        if min(weights) < 0:
            raise ValueError("confidence weights must be non-negative")
        if self.half_life_days <= 0:
            raise ValueError("half_life_days must be positive")


@dataclass(frozen=True)
class ConfidenceBreakdown:
    source: float
    recency: float
    access: float
    citation: float
    days_old: float

    @property
    def value(self) -> float:
        return min(1.0, max(0.0, self.source + self.recency + self.access + self.citation))


def confidence(weights: ConfidenceWeights, source_type: str, created_at: datetime,
               now: datetime, access_count: int, cited: bool) -> ConfidenceBreakdown:
    """The memory's own confidence, before conflict penalties and without any query."""
    unknown = 0.50 if weights.compat else weights.unknown_source
    base = weights.source_weights.get(source_type, unknown)
    days = max(0.0, (now - created_at).total_seconds() / 86400.0)
    if weights.compat:
        days = float(math.floor(days))
    bonus = min(math.log1p(max(access_count, 0)) * weights.access_step, weights.access_cap)
    return ConfidenceBreakdown(
        source=base * weights.source,
        recency=math.exp(-days / weights.half_life_days) * weights.recency,
        access=bonus * weights.access,
        citation=(weights.citation_bonus if cited else 0.0) * weights.citation,
        days_old=days)
