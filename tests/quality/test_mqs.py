"""compute_mqs pinned on hand-computed cases: components, rounding, clamping, chains, quirks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memeval.quality.mqs import MQSConstants, compute_mqs
from memeval.quality.policy import ConfidencePolicy, GateAction
from memeval.quality.record import MemoryRecord
from memeval.registry import ConfigError, to_dataclass


def rec(rid: str, confidence: float | None = 0.8, parents: tuple[str, ...] = (),
        **fields: object) -> MemoryRecord:
    return MemoryRecord(rid, f"memory {rid}", confidence, list(parents), **fields)  # type: ignore[arg-type]


def ledger(*records: MemoryRecord) -> dict[str, MemoryRecord]:
    return {r.id: r for r in records}


def test_fresh_record_rounds_half_to_even() -> None:
    b = compute_mqs(rec("a", 0.8))
    assert (b.confidence, b.usage, b.access) == pytest.approx((48.0, 12.5, 0.0))
    assert b.raw == pytest.approx(60.5) and b.score == 60  # Python's round, as the reference


def test_every_component_and_penalty() -> None:
    r = rec("a", 0.9, success_count=3, failure_count=1, access_count=14,
            conflicts=["b"], hedged=True)
    b = compute_mqs(r)
    assert b.confidence == pytest.approx(54.0)
    assert b.usage == pytest.approx(4 / 6 * 25)  # Laplace: (3+1)/(3+1+2)
    assert b.access == pytest.approx(15.0)  # capped at 10 accesses
    assert (b.conflict_penalty, b.hedged_penalty) == (10.0, 5.0)
    assert b.raw == pytest.approx(54 + 50 / 3 + 15 - 15) and b.score == 71


def test_clamped_at_zero_but_raw_kept() -> None:
    b = compute_mqs(rec("a", 0.1, failure_count=5, conflicts=["b", "c", "d"], hedged=True))
    assert b.raw == pytest.approx(6 + 25 / 7 - 30 - 5)
    assert b.score == 0


def test_maximum_is_one_hundred() -> None:
    assert compute_mqs(rec("a", 1.0, success_count=10**6, access_count=99)).score == 100


def test_weakest_link_over_the_chain() -> None:
    records = ledger(rec("a", 0.9), rec("b", 0.3, ("a",)), rec("c", 0.8, ("b",)))
    b = compute_mqs(records["c"], records)
    assert b.effective_confidence == 0.3 and b.confidence_basis == "ancestor b"
    assert b.score == round(0.3 * 60 + 12.5)
    assert compute_mqs(records["a"], records).effective_confidence == 0.9  # parents only


def test_a_stronger_chain_never_raises_the_declared_confidence() -> None:
    records = ledger(rec("a", 0.95), rec("b", 0.6, ("a",)))
    b = compute_mqs(records["b"], records)
    assert (b.effective_confidence, b.confidence_basis) == (0.6, "declared")


def test_cycles_end_and_count_each_ancestor_once() -> None:
    records = ledger(rec("a", 0.7, ("b",)), rec("b", 0.6, ("a",)))
    b = compute_mqs(records["a"], records)
    assert b.effective_confidence == 0.6 and not b.chain_truncated


def test_missing_ancestors_are_skipped_and_reported() -> None:
    records = ledger(rec("a", 0.2), rec("c", 0.8, ("gone", "a")))
    b = compute_mqs(records["c"], records)
    assert b.effective_confidence == 0.2 and b.missing_ancestors == ("gone",)


def test_only_five_hops_count() -> None:
    # r0 (0.1) <- r1 <- ... <- r6: from r6, r1 is 5 hops away, r0 is 6
    chain = [rec("r0", 0.1)] + [rec(f"r{i}", 0.8 + i / 100, (f"r{i - 1}",)) for i in range(1, 7)]
    records = ledger(*chain)
    b = compute_mqs(records["r6"], records)
    assert b.effective_confidence == pytest.approx(0.81) and b.confidence_basis == "ancestor r1"
    assert b.chain_truncated
    assert compute_mqs(records["r5"], records).effective_confidence == 0.1


def test_no_declared_confidence_counts_as_half() -> None:
    b = compute_mqs(rec("a", None))
    assert (b.effective_confidence, b.confidence_basis, b.score) == (0.5, "missing", 42)


def test_zero_confidence_is_a_value_unless_reproducing_the_reference() -> None:
    assert compute_mqs(rec("a", 0.0)).score == 12  # 0 × 60 + 12.5, rounded to even
    quirk = MQSConstants(zero_confidence_is_missing=True)
    b = compute_mqs(rec("a", 0.0), constants=quirk)
    assert (b.effective_confidence, b.confidence_basis, b.score) == (0.5, "missing", 42)


def test_the_reference_quirk_also_drops_a_zero_weakest_link() -> None:
    records = ledger(rec("a", 0.0), rec("b", 0.9, ("a",)))
    assert compute_mqs(records["b"], records).score == 12
    quirk = compute_mqs(records["b"], records, MQSConstants(zero_confidence_is_missing=True))
    # memledger: `(effective, else declared) or 0.5`, so the 0.0 ancestor reads as 0.5
    assert (quirk.effective_confidence, quirk.confidence_basis, quirk.score) == (
        0.5, "missing", 42)


def test_record_outcome_feeds_usage() -> None:
    r = rec("a", 0.8)
    when = datetime(2026, 11, 1, tzinfo=UTC)
    r.record_outcome(True, when)
    r.record_outcome(True, when)
    r.record_outcome(False, when)
    assert (r.success_count, r.failure_count, r.updated_at) == (2, 1, when)
    assert compute_mqs(r).usage == pytest.approx(3 / 5 * 25)


def test_invalid_records_and_constants() -> None:
    with pytest.raises(ValueError, match=r"must be a number in \[0, 1\], got 1\.2"):
        rec("a", 1.2)
    with pytest.raises(ValueError, match="non-negative"):
        rec("a", 0.5, access_count=-1)
    with pytest.raises(ConfigError, match="missing_confidence"):
        to_dataclass(MQSConstants, {"missing_confidence": 2.0}, "mqs")


@pytest.mark.parametrize(("confidence", "action"), [
    (0.0, GateAction.FILTER), (0.39, GateAction.FILTER), (0.4, GateAction.FLAG),
    (0.59, GateAction.FLAG), (0.6, GateAction.PASS), (1.0, GateAction.PASS)])
def test_confidence_gate_policy(confidence: float, action: GateAction) -> None:
    assert ConfidencePolicy()(confidence) is action
