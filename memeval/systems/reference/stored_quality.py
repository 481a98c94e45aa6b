"""MQS on the memories a replay pass stored: does the score put substantive memories above the
low-value ones the gate let through? (See quality/stored.py for how records are built.)"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from memeval.engine.gate.gate import Decision, Gate
from memeval.engine.store.memory_store import StoredMemory
from memeval.metrics.separation import separation
from memeval.quality.mqs import compute_mqs
from memeval.quality.record import MemoryRecord
from memeval.quality.stored import StoredMQSConfig, records_from_store
from memeval.utils.progress import Progress, quiet


def gate_confidences(gate: Gate, scores: Sequence[float | None]) -> list[float | None]:
    """Write-time content scores on the scorer's confidence scale; None where none was taken."""
    content = gate.content_gate
    known = [i for i, s in enumerate(scores) if s is not None]
    confidences: list[float | None] = [None] * len(scores)
    if content is None or not known:
        return confidences
    mapped = content.scorer.confidence(np.asarray([scores[i] for i in known], dtype=np.float32))
    for i, value in zip(known, mapped.tolist(), strict=True):
        confidences[i] = float(value)
    return confidences


def stored_records(gate: Gate, decisions: Sequence[Decision], cfg: StoredMQSConfig
                   ) -> tuple[list[StoredMemory], list[Decision], list[MemoryRecord]]:
    """The pass's stored memories, the decision that wrote each, and the record MQS scores."""
    memories = gate.memories.memories
    by_entry = {d.entry_id: d for d in decisions}
    written = [by_entry[m.source_id] for m in memories]
    return memories, written, records_from_store(
        memories, gate.memories.vectors, gate_confidences(gate, [d.score for d in written]), cfg)


def stored_memory_quality(gate: Gate, decisions: Sequence[Decision], cfg: StoredMQSConfig, *,
                          resamples: int, seed: int, progress: Progress = quiet
                          ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One pass's stored memories scored: a summary for metrics.json and a row per memory."""
    memories, written, records = stored_records(gate, decisions, cfg)
    breakdowns = [compute_mqs(record, None, cfg.mqs)
                  for record in progress(records, len(records), "MQS", "memory")]
    rows = [{"pass": memory.pass_no, "memory_id": memory.id, "entry_id": memory.source_id,
             "label": decision.label, "label_source": decision.label_source,
             "content_score": decision.score, "hedged": record.hedged,
             "conflict_with": record.conflicts[0] if record.conflicts else None,
             "gate_action": str(cfg.policy(b.effective_confidence)),
             **{k: v for k, v in b.as_dict().items()
                if k not in ("record_id", "missing_ancestors", "chain_truncated")}}
            for memory, decision, record, b in zip(memories, written, records, breakdowns,
                                                   strict=True)]
    labels = [row["label"] for row in rows]
    scores = [row["score"] for row in rows]
    common = {"resamples": resamples, "seed": seed}
    sources = sorted({str(row["label_source"]) for row in rows if row["label"] is not None})
    summary = {
        "memories": len(rows),
        "mqs": separation(scores, labels, **common),
        # e.g. human labels apart from a labeller's on a mixed replay
        "mqs_by_label_source": {
            source: separation(scores, [label if str(row["label_source"]) == source else None
                                        for row, label in zip(rows, labels, strict=True)],
                               **common) for source in sources},
        "confidence_only": separation([row["effective_confidence"] for row in rows], labels,
                                      **common),
        "by_label": {str(label): _label_summary([r for r in rows if r["label"] == label])
                     for label in sorted(set(labels), key=str)},
    }
    return summary, rows


def _label_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"memories": len(rows),
            "mean_mqs": float(np.mean([r["score"] for r in rows])),
            "hedged_share": float(np.mean([r["hedged"] for r in rows])),
            "conflicted_share": float(np.mean([r["conflict_with"] is not None for r in rows])),
            "missing_confidence_share": float(np.mean([r["confidence_basis"] == "missing"
                                                       for r in rows])),
            "gate_actions": dict(Counter(r["gate_action"] for r in rows))}
