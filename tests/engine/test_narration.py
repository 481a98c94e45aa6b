"""Narration: what a turn claims once interjections and plans are set aside (shipped lists)."""

from __future__ import annotations

import pytest

from memeval.engine.gate.gate import GateConfig
from memeval.engine.gate.narration import Narration, NarrationConfig
from memeval.registry import to_dataclass
from tests.engine.fakes import gate_node


@pytest.fixture(scope="module")
def narration() -> Narration:
    return Narration(to_dataclass(GateConfig, gate_node(), "gate").narration)


@pytest.mark.parametrize(("text", "claims"), [
    # a finding between an interjection and a plan keeps only the finding
    ("Perfect! The issue is `\\qedhere` inside an align environment. Let me fix it.",
     "The issue is `\\qedhere` inside an align environment."),
    ("Now I understand! The script looks for the fixture database in the wrong path.",
     "The script looks for the fixture database in the wrong path."),
    ("Excellent question! We should assert the call, not the output string.",
     "We should assert the call, not the output string."),
    # an interjection is cut only when punctuation closes it: "I see the issue" is a claim
    ("I see the issue - there's a stray `\\$` after the brace. Let me fix it.",
     "I see the issue - there's a stray `\\$` after the brace."),
    # lead words before a plan, and a plan that gives a reason is a decision, kept
    ("Great, now let me run the build.", ""),
    ("First, I'll pin numpy because 2.0 breaks the ABI.",
     "First, I'll pin numpy because 2.0 breaks the ABI."),
    # the list a plan announces is its steps; a line after the list is a claim again
    ("Let me dig in. I'll check a few things:\n\n- `kubectl describe pod`\n- the logs\n\n"
     "The pod was OOMKilled.", "The pod was OOMKilled."),
    ("I'll tackle this in steps:  1. Read `views.py`. 2. Convert each view.", ""),
    # a numbered list that no plan announced is kept whole
    ("Two causes:\n1. The cache key never changes.\n2. The lock file is ignored.",
     "Two causes: 1. The cache key never changes. 2. The lock file is ignored."),
    ("Let me check the CMakeLists.txt to see the current GPU configuration:", ""),
    # imperative narration: after a lead word, or closed by a colon
    ("Now update the lane building logic to only show active sessions.", ""),
    ("Fix the `else { if` in both places:", ""),
    # without either, an action verb may open a finding
    ("Add-ons are loaded from `~/.config/tool/addons` before the settings file.",
     "Add-ons are loaded from `~/.config/tool/addons` before the settings file."),
    ("Run `make gen` first: the generated mocks are not committed.",
     "Run `make gen` first: the generated mocks are not committed."),
    # a tool's outcome is a status, not a finding; what follows it may be one
    ("All tests pass. Let me also run the linter.", ""),
    ("Build passes. The flag is read in `cmd/root.go`, not in `config.go`.",
     "The flag is read in `cmd/root.go`, not in `config.go`."),
    ("Good idea! Let me add the import first.", ""),
])
def test_claims(narration: Narration, text: str, claims: str) -> None:
    assert narration.claims(text) == claims


def test_without_interjections_or_rationale_only_plans_are_set_aside() -> None:
    bare = Narration(NarrationConfig(plans=["let me"]))
    assert bare.claims("Great! Let me look. It is in src/.") == "Great! It is in src/."
    assert bare.claims("Let me look because it broke.") == ""


def test_actions_and_status_are_switches() -> None:
    """Empty lists turn the imperative and status readings off (their ablation rows)."""
    plain = Narration(NarrationConfig(plans=["let me"], lead_words=["now"]))
    assert plain.claims("Now update the docs.") == "Now update the docs."
    assert plain.claims("All tests pass.") == "All tests pass."
    full = Narration(NarrationConfig(plans=["let me"], lead_words=["now"], actions=["update"],
                                     status=["all tests pass"]))
    assert full.claims("Now update the docs.") == ""
    assert full.claims("All tests pass.") == ""


def test_no_plans_is_refused() -> None:
    with pytest.raises(ValueError, match="plans is empty"):
        NarrationConfig().validate()
