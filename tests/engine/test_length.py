"""Length gate: trimmed length under min_chars rejects; exactly min_chars passes."""

from __future__ import annotations

import pytest

from memeval.engine.gate.base import STAGES, Candidate
from memeval.engine.gate.length import LengthConfig, LengthGate
from memeval.entry import Entry
from memeval.registry import ConfigError, to_dataclass
from tests.engine.fakes import stage_node


def candidate(text: str) -> Candidate:
    return Candidate(Entry("e", "q", text), "q", text, None)


@pytest.fixture(scope="module")
def gate() -> LengthGate:
    return LengthGate(to_dataclass(LengthConfig, stage_node("length"), "length"))


def test_shipped_minimum_is_80(gate: LengthGate) -> None:
    assert gate.min_chars == 80


def test_exactly_min_chars_passes(gate: LengthGate) -> None:
    result = gate(candidate("x" * 80))
    assert result.passed
    assert result.score == 80.0
    assert result.threshold == 80.0


def test_one_short_rejects(gate: LengthGate) -> None:
    result = gate(candidate("x" * 79))
    assert not result.passed
    assert result.stage == "length"
    assert result.score == 79.0


def test_length_is_measured_after_trimming(gate: LengthGate) -> None:
    padded = "   \n" + "x" * 79 + "\t\n   "
    assert len(padded) > 80
    assert not gate(candidate(padded)).passed
    assert gate(candidate("  " + "x" * 80 + "  ")).passed


def test_negative_minimum_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="min_chars"):
        STAGES.validate({"name": "length", "min_chars": -1})
