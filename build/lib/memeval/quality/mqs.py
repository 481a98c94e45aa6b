"""Memory Quality Score: memledger's composite 0–100, with the breakdown it does not expose.

    confidence  effective_confidence × 60      (weakest link over `derived_from`, 5 hops)
    usage       (s + 1) / (s + f + 2) × 25     (Laplace: one outcome never pins 0 or 100)
    access      min(access_count, 10) × 1.5
    penalties   −10 per conflict, −5 if hedged
    score       round(sum), clamped to [0, 100]

A record with no declared confidence gets `missing_confidence` (0.5). memledger 2.0.1 also
treats a confidence of 0.0 as missing (`(effective, else declared) or 0.5`): a record its writer
marked as worthless, or one resting on a worthless ancestor, scores like an unknown one. memeval
keeps 0.0, and `zero_confidence_is_missing` reproduces memledger for comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from memeval.quality.lineage import Derived, Lineage, trace
from memeval.quality.record import MemoryRecord
from memeval.registry import bounded


@dataclass
class MQSConstants:
    confidence_points: float = bounded(60.0, 0)
    usage_points: float = bounded(25.0, 0)
    access_points_each: float = bounded(1.5, 0)
    access_cap: int = bounded(10, 0)
    conflict_penalty: float = bounded(10.0, 0)
    hedged_penalty: float = bounded(5.0, 0)
    missing_confidence: float = bounded(0.5, 0, 1)
    max_hops: int = bounded(5, 0)
    zero_confidence_is_missing: bool = False

    def validate(self) -> None:
        weights = (self.confidence_points, self.usage_points, self.access_points_each,
                   self.conflict_penalty, self.hedged_penalty)
        if min(weights) < 0:
            raise ValueError("MQS points and penalties must be non-negative")
        if self.access_cap < 0 or self.max_hops < 0:
            raise ValueError("access_cap and max_hops must be non-negative")
        if not 0.0 <= self.missing_confidence <= 1.0:
            raise ValueError("missing_confidence must be in [0, 1]")


@dataclass(frozen=True)
class MQSBreakdown:
    """Every term of one record's score, so a report can say why it is what it is."""

    record_id: str
    declared_confidence: float | None
    effective_confidence: float
    confidence_basis: str  # "declared", "missing", or "ancestor <id>" (the weakest link)
    confidence: float
    usage: float
    access: float
    conflict_penalty: float
    hedged_penalty: float
    raw: float  # before rounding and clamping; may be negative
    score: int
    missing_ancestors: tuple[str, ...] = ()
    chain_truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def effective_confidence(record: MemoryRecord, ledger: Mapping[str, MemoryRecord],
                         constants: MQSConstants) -> tuple[float, str, Lineage]:
    """min(declared, every ancestor within max_hops) and where it came from; an undeclared
    confidence (the record's or an ancestor's) counts as `missing_confidence`."""

    def declared(r: Derived) -> float:
        return constants.missing_confidence if r.confidence is None else r.confidence

    own = declared(record)
    basis = "missing" if record.confidence is None else "declared"
    lineage = trace([record.id], ledger, constants.max_hops, declared)
    if lineage.weakest_confidence is not None and lineage.weakest_confidence < own:
        own, basis = lineage.weakest_confidence, f"ancestor {lineage.weakest}"
    if constants.zero_confidence_is_missing and own == 0.0:  # memledger: `conf or 0.5`
        own, basis = constants.missing_confidence, "missing"
    return own, basis, lineage


def compute_mqs(record: MemoryRecord, ledger: Mapping[str, MemoryRecord] | None = None,
                constants: MQSConstants | None = None) -> MQSBreakdown:
    constants = constants or MQSConstants()
    effective, basis, lineage = effective_confidence(record, ledger or {}, constants)
    successes, failures = record.success_count, record.failure_count
    usage = (successes + 1) / (successes + failures + 2) * constants.usage_points
    access = min(record.access_count, constants.access_cap) * constants.access_points_each
    conflicts = len(record.conflicts) * constants.conflict_penalty
    hedged = constants.hedged_penalty if record.hedged else 0.0
    confidence = effective * constants.confidence_points
    raw = confidence + usage + access - conflicts - hedged
    return MQSBreakdown(
        record_id=record.id, declared_confidence=record.confidence,
        effective_confidence=effective, confidence_basis=basis, confidence=confidence,
        usage=usage, access=access, conflict_penalty=conflicts, hedged_penalty=hedged,
        raw=raw, score=int(min(100, max(0, round(raw)))),
        missing_ancestors=lineage.missing, chain_truncated=lineage.truncated)
