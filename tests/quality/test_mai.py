"""The MAI rubric, one term at a time, on hand-computed scenarios."""

from __future__ import annotations

import pytest

from memeval.quality.mai import AttributedMemory, MAIRubric, evaluate_mai, label_of


def mem(mid: str, confidence: float | None = 0.9, creator: str | None = "agent-a",
        session: str | None = "s1", parents: tuple[str, ...] = (),
        hedged: bool = False) -> AttributedMemory:
    return AttributedMemory(mid, confidence, list(parents), creator, session, hedged)


def score(*memories: AttributedMemory, ancestors: tuple[AttributedMemory, ...] = ()) -> float:
    return evaluate_mai(memories, ancestors).score


def test_no_memories_is_unattributed() -> None:
    result = evaluate_mai([])
    assert (result.score, result.label, result.passed) == (0.0, "unattributed", False)


def test_confident_attributed_memories_score_one() -> None:
    result = evaluate_mai([mem("a"), mem("b")])
    assert result.score == 1.0 and result.label == "well_attributed" and result.passed
    assert set(result.terms.values()) == {0.0}


def test_attribution_share() -> None:
    assert score(mem("a"), mem("b", creator=None)) == pytest.approx(1 - 0.5 * 0.4)


def test_unhedged_low_confidence_memory() -> None:
    assert score(mem("a", 0.3), mem("b", 0.9)) == pytest.approx(0.75)  # mean 0.6: no mean term
    assert score(mem("a", 0.3, hedged=True), mem("b", 0.9)) == 1.0  # hedging owns the doubt


def test_unhedged_middling_memory() -> None:
    assert score(mem("a", 0.5), mem("b", 0.9)) == pytest.approx(0.9)


def test_mean_confidence_below_floor() -> None:
    assert score(mem("a", 0.5)) == pytest.approx(1 - 0.1 - 0.1 * 0.5)
    assert score(mem("a", 0.5, hedged=True)) == pytest.approx(0.95)


def test_missing_confidence_counts_as_half() -> None:
    assert score(mem("a", None)) == score(mem("a", 0.5))


def test_session_share_below_half() -> None:
    assert score(mem("a"), mem("b", session=None), mem("c", session=None)) == pytest.approx(
        1 - 2 / 3 * 0.15)
    assert score(mem("a"), mem("b"), mem("c", session=None), mem("d", session=None)) == 1.0


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_creator_or_session_is_unknown(blank: str) -> None:
    """memledger's own golden data writes "" for unknown: it must not count as attribution."""
    memories = [mem("a"), mem("b", creator=blank, session=blank), mem("c", session=blank)]
    unknown = [mem("a"), mem("b", creator=None, session=None), mem("c", session=None)]
    assert evaluate_mai(memories).terms == evaluate_mai(unknown).terms
    assert evaluate_mai(memories).terms["attribution"] == pytest.approx(-0.4 / 3)
    assert evaluate_mai(memories).terms["sessions"] == pytest.approx(-2 / 3 * 0.15)


def test_weak_provenance_chain() -> None:
    result = evaluate_mai([mem("a", parents=("p",))], [mem("p", 0.3)])
    assert result.terms["weak_chain"] == -0.2 and result.score == pytest.approx(0.8)
    assert score(mem("a", parents=("p",)), ancestors=(mem("p", 0.7),)) == 1.0


def test_truncated_provenance_chain() -> None:
    assert score(mem("a", parents=("gone",))) == pytest.approx(0.95)
    deep = [mem(f"p{i}", 0.9, parents=(f"p{i + 1}",)) for i in range(6)]
    assert score(mem("a", parents=("p0",)), ancestors=tuple(deep)) == pytest.approx(0.95)


def test_corroboration_by_two_creators() -> None:
    result = evaluate_mai([mem("a"), mem("b", creator="agent-b"), mem("c", creator=None)])
    assert result.terms["corroboration"] == 0.05
    assert result.score == pytest.approx(1 - 0.4 / 3 + 0.05)


def test_clamped_to_zero() -> None:
    low = [mem(f"m{i}", 0.1, creator=None, session=None) for i in range(4)]
    result = evaluate_mai(low)
    assert sum(result.terms.values()) < -1 and result.score == 0.0


@pytest.mark.parametrize(("value", "label"), [
    (0.7, "well_attributed"), (0.69, "partially_attributed"), (0.4, "partially_attributed"),
    (0.39, "unattributed")])
def test_label_bands(value: float, label: str) -> None:
    assert label_of(value, MAIRubric()) == label
