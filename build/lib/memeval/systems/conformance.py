"""Does memeval score memories as memledger does? `python -m memeval conformance`.

MQS: memeval's `compute_mqs` against memledger's own `compute_mqs` (its weakest-link effective
confidence from its own chain walk) on every bundled memory record, with memeval's defaults and
with `zero_confidence_is_missing`; then the scores memledger's real API reports for the same
records (added, their outcomes recorded, their accesses replayed, read back by `search`). MAI:
memledger's own evaluator on its golden set (shipped in its wheel), memeval's MAI on that set,
and memledger's evaluator on memeval's scenarios. Each disagreement is listed with its cause.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.data.quality_sets import load_memory_records, load_scenarios
from memeval.quality.mai import AttributedMemory, MAIRubric, evaluate_mai
from memeval.quality.mqs import MQSConstants, compute_mqs, effective_confidence
from memeval.quality.record import MemoryRecord
from memeval.systems.memledger.records import UNDECLARED, ledger_effective, ledger_scores
from memeval.systems.memledger.runtime import EmbedderBridge, Loop, open_memledger, vec_enabled

RECORDS = "mqs/memory_records_v1.jsonl"
SCENARIOS = "mai/attribution_scenarios_v1.jsonl"


@dataclass
class Agreement:
    """How often two scorers gave the same answer, and every case where they did not."""

    what: str
    agree: int = 0
    total: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    def add(self, item: str, ours: Any, theirs: Any, why: str) -> None:
        self.total += 1
        if ours == theirs:
            self.agree += 1
        else:
            self.disagreements.append({"id": item, "a": ours, "b": theirs, "why": why})


# MQS ------------------------------------------------------------------------------------------
def _mqs_cause(record: MemoryRecord, ledger: dict[str, MemoryRecord],
               constants: MQSConstants, theirs: float) -> str:
    """Why the two scores differ; `theirs` is memledger's effective confidence."""
    ours, basis, _ = effective_confidence(record, ledger, constants)
    if theirs == 0.0:  # memledger: `(effective, else declared) or 0.5`
        where = "as declared" if record.confidence == 0.0 else "from an ancestor"
        return (f"effective confidence 0.0 {where}: memledger reads `0.0 or 0.5` as 0.5, "
                f"memeval scores {ours}")
    return f"effective confidence: memeval {ours} ({basis}), memledger {theirs}"


def mqs_in_process(records: Sequence[MemoryRecord], loop: Loop,
                   zero_is_missing: bool) -> Agreement:
    constants = MQSConstants(zero_confidence_is_missing=zero_is_missing)
    ledger = {r.id: r for r in records}
    theirs = loop.run(ledger_scores(records))
    effective = loop.run(ledger_effective(records))
    result = Agreement("memeval " + ("zero_confidence_is_missing=true" if zero_is_missing
                                     else "default") + " vs memledger.models.compute_mqs")
    for record, score in zip(records, theirs, strict=True):
        result.add(record.id, compute_mqs(record, ledger, constants).score, score,
                   _mqs_cause(record, ledger, constants, effective[record.id]))
    return result


async def _through_api(ledger: Any, records: Sequence[MemoryRecord]) -> dict[str, int]:
    """Each record added with its declared fields, outcomes recorded, accesses replayed (up to
    MQS's cap), then read back through `search` as memledger reports it."""
    namespace = "/conformance"
    for record in records:
        await ledger.add(record.content, namespace=namespace, record_id=record.id,
                         confidence=UNDECLARED if record.confidence is None else record.confidence,
                         hedged=record.hedged, derived_from=list(record.derived_from),
                         created_by=record.created_by, session_id=record.session_id,
                         metadata={"memeval_id": record.id})
        for success in [True] * record.success_count + [False] * record.failure_count:
            await ledger.record_outcome(record.id, success=success)
        for _ in range(min(record.access_count, MQSConstants().access_cap)):
            await ledger._backend.record_access([record.id])
    scores = {}
    for record in records:
        found = await ledger.search(record.content, namespace=namespace, top_k=1,
                                    filters={"memeval_id": record.id})
        scores[record.id] = int(found.records[0].quality_score)
    return scores


def _api_cause(record: MemoryRecord, ledger: dict[str, MemoryRecord]) -> str:
    causes = []
    if record.confidence == 0.0:
        causes.append("declared 0.0 is read back as 0.5")
    if record.conflicts:
        causes.append(f"its {len(record.conflicts)} conflict(s) are not stored, so search's "
                      f"score has no conflict penalty")
    own = UNDECLARED if record.confidence is None else record.confidence
    weakest, basis, _ = effective_confidence(record, ledger, MQSConstants())
    if weakest < own:
        causes.append(f"search scores declared confidence {own} without a gate, not the "
                      f"weakest link ({weakest}, {basis})")
    return "; ".join(causes) or "unexplained"


def mqs_through_api(records: Sequence[MemoryRecord], loop: Loop) -> list[Agreement]:
    """What memledger's API reports against memledger's own MQS (`ledger_scores`) and against
    memeval's (defaults)."""
    embedder = HashingEmbedder(256)
    with tempfile.TemporaryDirectory(prefix="memeval-conformance-") as folder:
        ledger = loop.run(open_memledger(Path(folder) / "ledger.db", embedder.dim, 0.65,
                                         embedder=EmbedderBridge(embedder.embed),
                                         model="openai/memeval"))
        try:
            if not vec_enabled(ledger):
                raise RuntimeError("sqlite-vec did not load: memledger's search would not "
                                   "find each record")
            reported = loop.run(_through_api(ledger, records))
        finally:
            loop.run(ledger.close())
    theirs = loop.run(ledger_scores(records))
    effective = loop.run(ledger_effective(records))
    by_id = {r.id: r for r in records}
    constants = MQSConstants()
    own = Agreement("memledger.models.compute_mqs vs memledger's API (search quality_score)")
    ours = Agreement("memeval default vs memledger's API (search quality_score)")
    for record, score in zip(records, theirs, strict=True):
        api = _api_cause(record, by_id) if score != reported[record.id] else ""
        own.add(record.id, score, reported[record.id], api)
        mine = compute_mqs(record, by_id, constants).score
        formula = _mqs_cause(record, by_id, constants, effective[record.id]) \
            if mine != score else ""
        ours.add(record.id, mine, reported[record.id], "; ".join(c for c in (formula, api) if c))
    return [own, ours]


# MAI ------------------------------------------------------------------------------------------
def golden_set() -> list[dict[str, Any]]:
    """memledger's 30 labelled scenarios, shipped inside its wheel."""
    from evaluators.calibration.replay import _load_dataset

    return list(_load_dataset())


def _ledger_mai(memories: Sequence[dict[str, Any]]) -> tuple[float, str]:
    from evaluators import evaluate_attribution_integrity
    from evaluators.calibration.replay import _score_to_label

    result = evaluate_attribution_integrity("decision", list(memories), threshold=0.7)
    return float(result.score), str(_score_to_label(result.score))


def as_memeval(memory: dict[str, Any]) -> AttributedMemory:
    """One of memledger's golden-set memories as memeval's MAI reads it."""
    return AttributedMemory(id=memory["id"], confidence=memory.get("confidence"),
                            derived_from=list(memory.get("derived_from") or []),
                            created_by=memory.get("created_by"),
                            session_id=memory.get("session_id"),
                            hedged=bool(memory.get("hedged", False)),
                            namespace=memory.get("namespace") or "default")


def _as_ledger(memory: AttributedMemory) -> dict[str, Any]:
    return {"id": memory.id, "confidence": memory.confidence,
            "derived_from": memory.derived_from, "created_by": memory.created_by or "",
            "session_id": memory.session_id or "", "hedged": memory.hedged,
            "namespace": memory.namespace}


def _mai_cause(terms: dict[str, float], memories: Sequence[AttributedMemory],
               ledger_score: float) -> str:
    causes = []
    if any(m.confidence == 0.0 for m in memories):
        causes.append("a memory declared 0.0: memledger reads it as 0.5")
    if terms.get("weak_chain") or terms.get("truncated_chain"):
        causes.append("memeval walks derived_from (weak or truncated chain); memledger's "
                      "evaluator, given no chain, does not")
    return "; ".join(causes) or f"scores differ (memledger {ledger_score})"


def mai_tables(scenarios_path: str | Path) -> dict[str, Agreement]:
    """Per scenario: each evaluator against the ground truth, and the two against each other."""
    rubric = MAIRubric()
    tables = {name: Agreement(name) for name in (
        "memledger evaluator vs ground truth (memledger's 30)",
        "memeval MAI vs ground truth (memledger's 30)",
        "memeval MAI vs memledger evaluator (memledger's 30)",
        "memledger evaluator vs ground truth (memeval's scenarios)",
        "memeval MAI vs ground truth (memeval's scenarios)",
        "memeval MAI vs memledger evaluator (memeval's scenarios)")}
    t = list(tables.values())
    for case in golden_set():
        memories = [as_memeval(m) for m in case["retrieved_memories"]]
        score, theirs = _ledger_mai(case["retrieved_memories"])
        ours = evaluate_mai(memories, (), rubric)
        truth, sid = case["ground_truth"], case["scenario_id"]
        t[0].add(sid, theirs, truth, f"memledger scores {score}")
        t[1].add(sid, ours.label, truth, f"memeval scores {round(ours.score, 4)}")
        t[2].add(sid, ours.label, theirs, _mai_cause(ours.terms, memories, score))
    scenarios, _ = load_scenarios(scenarios_path)
    for scenario in scenarios:
        score, theirs = _ledger_mai([_as_ledger(m) for m in scenario.memories])
        ours = evaluate_mai(scenario.memories, scenario.ancestors, rubric)
        truth, sid = scenario.ground_truth, scenario.id
        t[3].add(sid, theirs, truth, f"memledger scores {score}")
        t[4].add(sid, ours.label, truth, f"memeval scores {round(ours.score, 4)}")
        t[5].add(sid, ours.label, theirs, _mai_cause(ours.terms, scenario.memories, score))
    return tables


def conformance(records_path: str | Path, scenarios_path: str | Path) -> dict[str, Any]:
    records = [item.record for item in load_memory_records(records_path)[0]]
    loop = Loop(600.0)
    try:
        mqs = [mqs_in_process(records, loop, zero_is_missing=False),
               mqs_in_process(records, loop, zero_is_missing=True),
               *mqs_through_api(records, loop)]
    finally:
        loop.stop()
    return {"mqs": [asdict(a) for a in mqs],
            "mai": [asdict(a) for a in mai_tables(scenarios_path).values()]}
