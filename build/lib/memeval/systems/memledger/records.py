"""memeval's memory records as memledger's, scored by memledger's own code.

`ledger_scores` is memledger's `compute_mqs` with the effective confidence memledger's own
chain walk gives (`compute_effective_confidence` over its `JsonArrayChainStore`, which reads
parents through `get`): here the ledger is the records handed in, so nothing is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memeval.quality.record import MemoryRecord

UNDECLARED = 0.5  # memledger's default confidence: a record always has one


def to_ledger_record(record: MemoryRecord) -> Any:
    """The same record as memledger's model; memeval's conflict ids become ConflictRefs (only
    their number counts in MQS)."""
    from memledger.models import ConflictRef
    from memledger.models import MemoryRecord as LedgerRecord

    conflicts = [ConflictRef(existing_id=other, existing_content="", similarity=1.0)
                 for other in record.conflicts]
    confidence = UNDECLARED if record.confidence is None else record.confidence
    return LedgerRecord(id=record.id, content=record.content, confidence=confidence,
                        derived_from=list(record.derived_from),
                        success_count=record.success_count, failure_count=record.failure_count,
                        access_count=record.access_count, conflicts=conflicts,
                        hedged=record.hedged, created_by=record.created_by,
                        session_id=record.session_id)


class _Records:
    """The one read memledger's chain walk makes (`get`), over records held in memory."""

    def __init__(self, records: Mapping[str, Any]) -> None:
        self._records = records

    async def get(self, record_id: str | None = None, **_: Any) -> Any:
        return self._records.get(record_id or "")


async def _effective(ledger: Mapping[str, Any]) -> dict[str, float]:
    from memledger.provenance.chain_store import JsonArrayChainStore
    from memledger.provenance.effective_confidence import compute_effective_confidence

    chains = JsonArrayChainStore(_Records(ledger))
    return {rid: await compute_effective_confidence(record, chains)
            for rid, record in ledger.items()}


async def ledger_effective(records: Sequence[MemoryRecord]) -> dict[str, float]:
    """Each record's effective confidence by memledger's own chain walk (weakest link)."""
    return await _effective({r.id: to_ledger_record(r) for r in records})


async def ledger_scores(records: Sequence[MemoryRecord]) -> list[int]:
    """memledger's MQS of each record, `records` being the whole ledger (for lineage)."""
    from memledger.models import compute_mqs

    ledger = {r.id: to_ledger_record(r) for r in records}
    effective = await _effective(ledger)
    return [int(compute_mqs(ledger[r.id], effective[r.id])) for r in records]
