"""Prefilter: an exact acknowledgement AND a procedural opener, pinned to the shipped word lists."""

from __future__ import annotations

import pytest

from memeval.engine.gate.base import STAGES, Candidate
from memeval.engine.gate.gate import GateConfig
from memeval.engine.gate.narration import Narration
from memeval.engine.gate.prefilter import Prefilter, PrefilterConfig
from memeval.entry import Entry
from memeval.registry import ConfigError, to_dataclass
from tests.engine.fakes import gate_node, stage_node


@pytest.fixture(scope="module")
def shipped() -> Prefilter:
    """memoryd's rule alone: no narration to read, so narration_only cannot fire."""
    return Prefilter(to_dataclass(PrefilterConfig, stage_node("prefilter"), "prefilter"))


@pytest.fixture(scope="module")
def with_narration() -> Prefilter:
    """The shipped default: memoryd's rule, then narration_only over the shipped lists."""
    gate = to_dataclass(GateConfig, gate_node(), "gate")
    settings = to_dataclass(PrefilterConfig, stage_node("prefilter"), "prefilter")
    assert settings.narration_only
    return Prefilter(settings, Narration(gate.narration))


def candidate(user: str, text: str) -> Candidate:
    return Candidate(Entry("e1", user, text), user, text, None)


def fires(pre: Prefilter, user: str, text: str) -> bool:
    return not pre(candidate(user, text)).passed


@pytest.mark.parametrize(("user", "text"), [
    ("ok.", "I'll run the tests now"),
    ("ok", "I'll run the tests now"),
    ("OK!", "I'll run the tests now"),
    ("  Thanks  ", "I've updated the config."),
    ("thank you", "Let me check the logs first."),
    ("lgtm", "Done. Everything is merged."),
    ("👍", "I'll push the branch."),
    ("👍!", "I'll push the branch."),
    ("sure", "Sure! I'll take a look."),
    ("go ahead", "  Of course, starting now."),
    ("please do", "Absolutely, running it."),
])
def test_ack_plus_opener_fires(shipped: Prefilter, user: str, text: str) -> None:
    result = shipped(candidate(user, text))
    assert not result.passed
    assert result.stage == "prefilter"
    assert result.detail == "ack + procedural opener"


@pytest.mark.parametrize(("user", "text"), [
    ("ok", "The root cause is a missing index on orders.customer_id."),
    ("please fix it", "I'll patch the handler."),   # not an exact ack
    ("ok thanks", "I'll patch the handler."),        # two acks are not one ack
    ("ok..", "I'll patch the handler."),             # only ONE trailing character
    ("ok?", "I'll patch the handler."),              # '?' is not in ack_trailing
    ("okay", "Sure!I'll patch it."),                 # opener is 'sure! ' with the space
    ("", "I'll patch the handler."),                 # empty prompt never fires
    ("   ", "I'll patch the handler."),
    ("ok", "Here I'll patch the handler."),          # opener must be at the start
    ("ok", "I'll"),                                  # "i'll " needs its trailing space
])
def test_does_not_fire(shipped: Prefilter, user: str, text: str) -> None:
    result = shipped(candidate(user, text))
    assert result.passed
    assert result.detail == ""


def test_trailing_only_applies_to_literal_acks() -> None:
    pre = Prefilter(PrefilterConfig(acks=["re:y(es|ep)"], openers=["i'll "], ack_trailing="."))
    assert fires(pre, "yes", "I'll do it")
    assert fires(pre, "YEP", "I'll do it")
    assert not fires(pre, "yes.", "I'll do it")  # the regex would have to allow the dot itself


def test_regex_ack_is_a_full_match() -> None:
    pre = Prefilter(PrefilterConfig(acks=["re:ok+"], openers=["i'll "]))
    assert fires(pre, "okkk", "I'll do it")
    assert not fires(pre, "okkk then", "I'll do it")
    assert not fires(pre, "so okkk", "I'll do it")


def test_regex_opener_matches_at_start_only() -> None:
    pre = Prefilter(PrefilterConfig(acks=["ok"], openers=[r"re:(now )?running\b"]))
    assert fires(pre, "ok", "Running the migration")
    assert fires(pre, "ok", "now running the migration")
    assert not fires(pre, "ok", "The job is running now")


def test_regex_matching_empty_text_still_needs_a_prompt() -> None:
    pre = Prefilter(PrefilterConfig(acks=["re:.*"], openers=["re:.*"]))
    assert fires(pre, "anything", "anything")
    assert not fires(pre, "", "anything")


def test_bad_regex_fails_validation() -> None:
    with pytest.raises(ValueError, match="bad regex entry"):
        PrefilterConfig(acks=["re:(unclosed"]).validate()
    with pytest.raises(ConfigError, match="prefilter"):
        STAGES.validate({"name": "prefilter", "openers": ["re:[z-a]"]})


def test_literal_entries_are_not_regexes() -> None:
    pre = Prefilter(PrefilterConfig(acks=["o.k"], openers=["i'll "]))
    assert fires(pre, "o.k", "I'll do it")
    assert not fires(pre, "ook", "I'll do it")  # '.' is literal, not a wildcard


@pytest.mark.parametrize("text", [
    "Let me check the CMakeLists.txt to see the current GPU configuration:",
    "Perfect! Now let me run the full benchmark with competitors to test everything:",
    "Great. I'll start with the settings page and then work through the remaining screens.",
])
def test_narration_only_fires_whatever_the_user_said(with_narration: Prefilter,
                                                      text: str) -> None:
    result = with_narration(candidate("why is the GPU build slow?", text))
    assert not result.passed
    assert result.detail == "narration only"


@pytest.mark.parametrize("text", [
    "Perfect! The issue is `\\qedhere` inside an align environment. Let me fix it.",
    "I'll pin numpy because 2.0 breaks the ABI.",
    "Great! CUDA 12.6 is installed. Let me also check the gcc version:",
])
def test_narration_only_spares_a_claim(with_narration: Prefilter, text: str) -> None:
    assert with_narration(candidate("why is the GPU build slow?", text)).passed


def test_ack_rule_is_checked_first(with_narration: Prefilter) -> None:
    assert with_narration(candidate("ok", "I'll run it.")).detail == "ack + procedural opener"


def test_narration_only_off_is_memoryd_rule_alone() -> None:
    gate = to_dataclass(GateConfig, gate_node(), "gate")
    pre = Prefilter(PrefilterConfig(acks=["ok"], openers=["i'll "], narration_only=False),
                    Narration(gate.narration))
    assert pre(candidate("why?", "Let me check the logs.")).passed
