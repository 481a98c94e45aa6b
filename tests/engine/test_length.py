"""Length gate: what a turn claims (trimmed) under min_chars rejects; exactly min_chars passes."""

from __future__ import annotations

import pytest

from memeval.engine.gate.base import STAGES, Candidate
from memeval.engine.gate.gate import GateConfig
from memeval.engine.gate.length import LengthConfig, LengthGate
from memeval.engine.gate.narration import Narration
from memeval.entry import Entry
from memeval.registry import ConfigError, to_dataclass
from tests.engine.fakes import gate_node, stage_node


def candidate(text: str) -> Candidate:
    return Candidate(Entry("e", "q", text), "q", text, None)


@pytest.fixture(scope="module")
def gate() -> LengthGate:
    return LengthGate(to_dataclass(LengthConfig, stage_node("length"), "length"))


def test_shipped_minimum_counts_30_characters_of_claims(gate: LengthGate) -> None:
    node = stage_node("length")
    assert gate.min_chars == node["min_chars"] == 30 and node["measure"] == "claims"  # memoryd:
    # 80 of the whole turn


def test_exactly_min_chars_passes(gate: LengthGate) -> None:
    result = gate(candidate("x" * 30))
    assert result.passed
    assert result.score == 30.0
    assert result.threshold == 30.0


def test_one_short_rejects(gate: LengthGate) -> None:
    result = gate(candidate("x" * 29))
    assert not result.passed
    assert result.stage == "length"
    assert result.score == 29.0


def test_length_is_measured_after_trimming(gate: LengthGate) -> None:
    padded = "   \n" + "x" * 29 + "\t\n   "
    assert len(padded) > 30
    assert not gate(candidate(padded)).passed
    assert gate(candidate("  " + "x" * 30 + "  ")).passed


def test_negative_minimum_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="min_chars"):
        STAGES.validate({"name": "length", "min_chars": -1})


def test_measuring_claims_counts_what_the_turn_claims() -> None:
    narration = Narration(to_dataclass(GateConfig, gate_node(), "gate").narration)
    gate = LengthGate(LengthConfig(min_chars=40, measure="claims"), narration)
    plan = "Perfect! Now let me run the full benchmark with competitors to test everything:"
    finding = "Perfect! The issue is `\\qedhere` inside an align environment. Let me fix it."
    assert len(plan) > 40 and gate(candidate(plan)).score == 0.0
    result = gate(candidate(finding))
    assert result.passed and result.score == len("The issue is `\\qedhere` inside an align "
                                                 "environment.")
    thin = "Good, `vsla_fill` is only in the unified API. Let me check the basic API:"
    shipped = LengthGate(to_dataclass(LengthConfig, stage_node("length"), "length"), narration)
    assert shipped(candidate(thin)).passed and not gate(candidate(thin)).passed  # 39 claimed


def test_unknown_measure_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="view must be one of whole, claims"):
        STAGES.validate({"name": "length", "min_chars": 40, "measure": "words"})
