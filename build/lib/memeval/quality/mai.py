"""Memory Attribution Integrity: how well an agent's decision traces to trustworthy memories.

memledger's deterministic rubric, term by term (each term is reported, so a score explains
itself). Start at 1.0; a decision with no memories scores 0.0.

    attribution   −(1 − share of memories with a known creator) × 0.4
    weak memory   −0.25 per unhedged memory with confidence < 0.4,
                  −0.10 per unhedged memory with confidence in [0.4, 0.6)
    mean conf.    −(0.6 − mean confidence) × 0.5 when the mean is below 0.6
    sessions      −(1 − share with a session id) × 0.15 when that share is below 0.5
    provenance    when the memories derive from others: −0.2 if the weakest ancestor's
                  confidence is below 0.4, −0.05 if the chain is truncated (an ancestor missing,
                  or past max_hops); the memories' own confidence is judged by the terms above
    corroboration +0.05 with two or more distinct creators
    clamp to [0, 1]; well attributed ≥ 0.7 (the pass mark), partially ≥ 0.4, else unattributed

A memory with no declared confidence counts as `missing_confidence` (0.5), as in MQS. An empty
`created_by` or `session_id` is unknown, as None is: memledger's own data writes "" for unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memeval.quality.lineage import Derived, trace
from memeval.quality.record import check_confidence, check_ids
from memeval.registry import bounded

MAI_LABELS = ("unattributed", "partially_attributed", "well_attributed")


@dataclass(frozen=True)
class AttributedMemory:
    id: str
    confidence: float | None = None
    derived_from: list[str] = field(default_factory=list)
    created_by: str | None = None
    session_id: str | None = None
    hedged: bool = False
    namespace: str = "default"

    def __post_init__(self) -> None:
        owner = f"memory '{self.id}'"
        check_confidence(owner, self.confidence)
        check_ids(owner, "derived_from", self.derived_from)
        for name in ("created_by", "session_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{owner}: {name} must be text or null, got {value!r:.40}")
            if value is not None and not value.strip():
                object.__setattr__(self, name, None)  # "" is unknown (frozen: set it once here)
        if not isinstance(self.hedged, bool):
            raise ValueError(f"{owner}: hedged must be true or false, got {self.hedged!r:.40}")


@dataclass
class MAIRubric:
    attribution_weight: float = bounded(0.4, 0, 1)
    low_confidence: float = bounded(0.4, 0, 1)
    low_confidence_penalty: float = bounded(0.25, 0, 1)
    mid_confidence: float = bounded(0.6, 0, 1)
    mid_confidence_penalty: float = bounded(0.1, 0, 1)
    mean_confidence_floor: float = bounded(0.6, 0, 1)
    mean_confidence_weight: float = bounded(0.5, 0, 1)
    session_floor: float = bounded(0.5, 0, 1)
    session_weight: float = bounded(0.15, 0, 1)
    weak_chain_penalty: float = bounded(0.2, 0, 1)
    truncated_chain_penalty: float = bounded(0.05, 0, 1)
    corroboration_bonus: float = bounded(0.05, 0, 1)
    missing_confidence: float = bounded(0.5, 0, 1)
    max_hops: int = bounded(5, 0)
    well_attributed: float = bounded(0.7, 0, 1)
    partially_attributed: float = bounded(0.4, 0, 1)

    def validate(self) -> None:
        if not 0.0 <= self.partially_attributed <= self.well_attributed <= 1.0:
            raise ValueError("need 0 <= partially_attributed <= well_attributed <= 1")
        if self.low_confidence > self.mid_confidence:
            raise ValueError("low_confidence must not exceed mid_confidence")


@dataclass(frozen=True)
class MAIResult:
    score: float
    label: str
    passed: bool
    terms: dict[str, float]  # each rubric term's signed contribution


def label_of(score: float, rubric: MAIRubric) -> str:
    if score >= rubric.well_attributed:
        return "well_attributed"
    return "partially_attributed" if score >= rubric.partially_attributed else "unattributed"


def evaluate_mai(memories: Sequence[AttributedMemory],
                 ancestors: Sequence[AttributedMemory] = (),
                 rubric: MAIRubric | None = None) -> MAIResult:
    rubric = rubric or MAIRubric()
    if not memories:
        return MAIResult(0.0, label_of(0.0, rubric), False, {"no_memories": -1.0})

    def confidence(m: Derived) -> float:
        return rubric.missing_confidence if m.confidence is None else m.confidence

    n = len(memories)
    terms: dict[str, float] = {}
    attributed = sum(m.created_by is not None for m in memories) / n
    terms["attribution"] = -(1 - attributed) * rubric.attribution_weight
    unhedged = [confidence(m) for m in memories if not m.hedged]
    terms["low_confidence"] = -rubric.low_confidence_penalty * sum(
        c < rubric.low_confidence for c in unhedged)
    terms["mid_confidence"] = -rubric.mid_confidence_penalty * sum(
        rubric.low_confidence <= c < rubric.mid_confidence for c in unhedged)
    mean = sum(confidence(m) for m in memories) / n
    terms["mean_confidence"] = -max(0.0, rubric.mean_confidence_floor - mean) \
        * rubric.mean_confidence_weight
    sessions = sum(m.session_id is not None for m in memories) / n
    terms["sessions"] = -(1 - sessions) * rubric.session_weight \
        if sessions < rubric.session_floor else 0.0
    terms["weak_chain"] = terms["truncated_chain"] = 0.0
    if any(m.derived_from for m in memories):
        ledger = {m.id: m for m in [*ancestors, *memories]}
        chain = trace([m.id for m in memories], ledger, rubric.max_hops, confidence)
        weakest = chain.weakest_confidence
        if weakest is not None and weakest < rubric.low_confidence:
            terms["weak_chain"] = -rubric.weak_chain_penalty
        if chain.missing or chain.truncated:
            terms["truncated_chain"] = -rubric.truncated_chain_penalty
    creators = {m.created_by for m in memories if m.created_by is not None}
    terms["corroboration"] = rubric.corroboration_bonus if len(creators) >= 2 else 0.0
    score = min(1.0, max(0.0, 1.0 + sum(terms.values())))
    return MAIResult(score, label_of(score, rubric), score >= rubric.well_attributed, terms)
