"""The terms a content-aware trust score is linear in: MQS's factors, then what they miss.

MQS's factors (as `mqs_fit.features` reads them): effective confidence, Laplace success rate,
capped accesses, the `hedged` flag. Then usage as counts (log-scaled successes and failures),
a citation, the conflicts split by side (this record the newer one: a likely supersession; the
older one; undated: unresolved), the chain (derived at all, how far the weakest direct ancestor's
own MQS falls short of 100, ancestors missing from the ledger) and the content signals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np

from memeval.quality.content_signals import SIGNALS, ContentSignals
from memeval.quality.mqs import MQSConstants, compute_mqs
from memeval.quality.record import MemoryRecord
from memeval.utils.progress import Progress, quiet

TERMS = ("confidence", "usage_rate", "access", "hedged", "successes", "failures", "cited",
         "newer_side", "older_side", "unresolved", "derived", "ancestor_shortfall",
         "missing_ancestors", *SIGNALS)


def _stamp(record: MemoryRecord) -> datetime | None:
    stamp = record.updated_at or record.created_at
    return None if stamp is None else stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def conflict_sides(record: MemoryRecord,
                   ledger: Mapping[str, MemoryRecord]) -> tuple[int, int, int]:
    """(newer, older, unresolved) counts of this record's conflicts: undated records, partners
    missing from the ledger and same-moment pairs are unresolved."""
    newer = older = unresolved = 0
    own = _stamp(record)
    for other_id in record.conflicts:
        other = ledger.get(other_id)
        theirs = None if other is None else _stamp(other)
        if own is None or theirs is None or own == theirs:
            unresolved += 1
        elif own > theirs:
            newer += 1
        else:
            older += 1
    return newer, older, unresolved


def trust_terms(record: MemoryRecord, ledger: Mapping[str, MemoryRecord],
                constants: MQSConstants, signals: ContentSignals) -> dict[str, float]:
    unit = replace(constants, confidence_points=1.0, usage_points=1.0, access_points_each=1.0,
                   conflict_penalty=1.0, hedged_penalty=1.0)
    b = compute_mqs(record, ledger, unit)
    parents = [ledger[i] for i in record.derived_from if i in ledger]
    weakest = min((compute_mqs(p, ledger, constants).score for p in parents), default=100)
    newer, older, unresolved = conflict_sides(record, ledger)
    return {
        "confidence": b.effective_confidence, "usage_rate": b.usage, "access": b.access,
        "hedged": b.hedged_penalty, "successes": math.log1p(record.success_count),
        "failures": math.log1p(record.failure_count),
        "cited": float(record.citation is not None),
        "newer_side": float(newer), "older_side": float(older), "unresolved": float(unresolved),
        "derived": float(bool(record.derived_from)),
        "ancestor_shortfall": (100 - weakest) / 100.0,
        "missing_ancestors": float(len(b.missing_ancestors)),
        **signals(record),
    }


def term_matrix(records: Sequence[MemoryRecord], constants: MQSConstants,
                signals: ContentSignals, progress: Progress = quiet) -> np.ndarray:
    """One row of TERMS per record, the records read as one ledger (one file, one store)."""
    ledger = {record.id: record for record in records}
    rows = [trust_terms(record, ledger, constants, signals)
            for record in progress(records, len(records), "trust terms", "record")]
    return np.asarray([[row[t] for t in TERMS] for row in rows], dtype=float).reshape(-1,
                                                                                      len(TERMS))
