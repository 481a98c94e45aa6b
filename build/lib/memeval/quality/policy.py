"""memledger's confidence gate on a record's effective confidence: FILTER, FLAG or PASS."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from memeval.registry import bounded


class GateAction(StrEnum):
    FILTER = "FILTER"  # do not surface the record
    FLAG = "FLAG"  # surface it, marked for review
    PASS = "PASS"


@dataclass
class ConfidencePolicy:
    filter_below: float = bounded(0.4, 0, 1)
    flag_below: float = bounded(0.6, 0, 1)

    def validate(self) -> None:
        if not 0.0 <= self.filter_below <= self.flag_below <= 1.0:
            raise ValueError("need 0 <= filter_below <= flag_below <= 1")

    def __call__(self, effective_confidence: float) -> GateAction:
        if effective_confidence < self.filter_below:
            return GateAction.FILTER
        if effective_confidence < self.flag_below:
            return GateAction.FLAG
        return GateAction.PASS
