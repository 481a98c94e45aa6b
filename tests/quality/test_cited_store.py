"""The openclaw document's 16 test intents (its code passes 14), plus memeval's fixes."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from memeval.quality.cited_store import CitedMemoryStore, semantic_hash, version_hash
from memeval.quality.confidence import ConfidenceWeights, confidence
from memeval.quality.conflicts import (
    ConflictDetector,
    ConflictPenalties,
    ConflictRules,
    ConflictType,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def store(compat: bool = False) -> CitedMemoryStore:
    return CitedMemoryStore(ConfidenceWeights(compat=compat),
                            ConflictDetector(ConflictRules(compat=compat)), ConflictPenalties())


def value(source: str = "MEMORY.md", days: float = 0, accesses: int = 0,
          cited: bool = False) -> float:
    return confidence(ConfidenceWeights(), source, NOW - timedelta(days=days), NOW, accesses,
                      cited).value


# 1–5: confidence
def test_confidence_is_within_bounds() -> None:
    for source in ("USER.md", "fallback", "made-up"):
        for days in (0, 10, 1000):
            assert 0.0 <= value(source, days, accesses=10**6, cited=True) <= 1.0
    assert value("USER.md", 0, accesses=10**6, cited=True) == pytest.approx(0.815)  # the ceiling


def test_source_type_weights_order_confidence() -> None:
    assert value("USER.md") > value("inferred")
    assert value("MEMORY.md") > value("fallback")


def test_recent_memories_are_more_confident() -> None:
    assert value(days=0) > value(days=60)
    decayed = value(days=30) - value(days=0)
    assert decayed == pytest.approx(0.3 * (2.718281828 ** -1 - 1), rel=1e-6)


def test_frequent_access_raises_confidence() -> None:
    assert value(accesses=50) > value(accesses=0)


def test_a_citation_raises_confidence() -> None:
    assert value(cited=True) > value(cited=False)


# 6–8, 12: conflicts
def test_contradiction_is_detected() -> None:
    memories = store()
    memories.add("User likes cats", source_type="USER.md", now=NOW, path="memory/a.md")
    _, conflicts = memories.add("User dislikes cats", source_type="USER.md", now=NOW,
                                path="memory/b.md")
    assert [c.kind for c in conflicts] == [ConflictType.CONTRADICTION]


@pytest.mark.parametrize(("compat", "found"), [(False, True), (True, False)])
def test_temporal_conflict_is_detected(compat: bool, found: bool) -> None:
    """One of the two intents the reference code fails: only 'user' and 'in' are shared words."""
    detector = ConflictDetector(ConflictRules(compat=compat))
    conflict = detector.detect("User lives in New York now", "User lived in Boston before")
    assert (conflict is not None and conflict.kind == ConflictType.TEMPORAL) is found


def test_same_path_is_not_a_conflict() -> None:
    memories = store()
    memories.add("User likes cats", source_type="USER.md", now=NOW, path="USER.md")
    _, conflicts = memories.add("User dislikes cats", source_type="USER.md", now=NOW,
                                path="USER.md")
    assert conflicts == []


def test_add_returns_conflicts_and_penalises_both_sides() -> None:
    memories = store()
    first, _ = memories.add("The nightly build is green", source_type="session", now=NOW,
                            path="memory/a.md")
    second, conflicts = memories.add("The nightly build is not green", source_type="USER.md",
                                     now=NOW, path="memory/b.md")
    assert conflicts and conflicts[0].resolution == "manual_review"
    assert second.penalty == pytest.approx(0.15)  # higher confidence (USER.md): halved
    assert first.penalty == pytest.approx(0.30)


# 9–11, 13–15: search
def seeded(compat: bool = False) -> CitedMemoryStore:
    memories = store(compat)
    memories.add("User prefers tea in the morning", source_type="inferred",
                 now=NOW - timedelta(days=90), path="memory/2025-12-01.md", line_start=10,
                 line_end=12)
    memories.add("Deploys go through the staging cluster first", source_type="MEMORY.md",
                 now=NOW, path="MEMORY.md", line_start=3)
    return memories


def test_fallback_is_used_when_nothing_passes_and_says_why() -> None:
    result = seeded().search("tea morning", NOW, min_confidence=0.8)
    assert result.fallback_used and "min_confidence 0.8" in (result.fallback_reason or "")
    assert [r["content"] for r in result.results] == ["User prefers tea in the morning"]


def test_the_reference_hides_a_fallback_that_served() -> None:
    result = seeded(compat=True).search("tea morning", NOW, min_confidence=0.8)
    assert result.results and not result.fallback_used  # the bug memeval fixes


def test_no_fallback_when_results_pass() -> None:
    result = seeded().search("staging deploys", NOW, min_confidence=0.5)
    assert not result.fallback_used and result.fallback_reason is None and result.results


def test_the_fallback_is_transparent_in_the_payload() -> None:
    payload = seeded().search("tea", NOW, min_confidence=0.99).as_dict()
    assert payload["fallback"]["used"] is True and payload["fallback"]["reason"]
    empty = seeded().search("kubernetes", NOW, min_confidence=0.5).as_dict()
    assert empty["results"] == [] and empty["fallback"]["used"] is True
    assert "none is relevant" in empty["fallback"]["reason"]


def test_search_returns_citations() -> None:
    hit = seeded().search("tea", NOW).results[0]
    citation = hit["citation"]
    assert (citation["path"], citation["line_start"], citation["line_end"]) == \
        ("memory/2025-12-01.md", 10, 12)
    assert citation["excerpt"] == "User prefers tea in the morning"


def test_results_carry_confidence_relevance_and_combined_score() -> None:
    hit = seeded().search("staging cluster", NOW).results[0]
    assert 0.0 < hit["confidence"] <= 1.0 and 0.0 < hit["relevance_score"] <= 1.0
    assert hit["combined_score"] == pytest.approx(hit["confidence"] * hit["relevance_score"],
                                                  abs=1e-4)  # relevance applied once


def test_min_confidence_filters() -> None:
    memories = seeded()
    everything = memories.search("the", NOW, min_confidence=0.0).results
    confident = memories.search("the", NOW, min_confidence=0.6).results
    assert len(everything) == 2 and [r["source_type"] for r in confident] == ["MEMORY.md"]


# 16
def test_version_hash_is_8_hex_and_tracks_the_content() -> None:
    digest = version_hash("MEMORY.md", 3, "text")
    assert re.fullmatch(r"[0-9a-f]{8}", digest)
    assert digest != version_hash("MEMORY.md", 3, "text changed")
    assert re.fullmatch(r"[0-9a-f]{16}", semantic_hash("A  b"))
    assert semantic_hash("A  b") == semantic_hash("a b")


# memeval's fixes, against the reference's behaviour
def test_a_search_keeps_the_conflict_penalty_unless_compat() -> None:
    for compat, kept in ((False, True), (True, False)):
        memories = store(compat)
        memories.add("The build uses make", source_type="session", now=NOW, path="a.md")
        memories.add("The build does not use make", source_type="session", now=NOW, path="b.md")
        memories.search("build make", NOW)
        assert (memories.memories[0].penalty > 0) is kept


def test_compat_squares_relevance() -> None:
    hit = seeded(compat=True).search("staging cluster", NOW).results[0]
    own = seeded().search("staging cluster", NOW).results[0]
    assert hit["combined_score"] == pytest.approx(own["confidence"] * own["relevance_score"] ** 2,
                                                  abs=1e-3)


def test_word_boundaries_ignore_words_hidden_in_other_words() -> None:
    detector = ConflictDetector(ConflictRules())
    pair = ("This notable island is a canopy", "The notable island has a canopy walk, likewise")
    assert detector.detect(*pair) is None or detector.detect(*pair).kind != \
        ConflictType.CONTRADICTION
    substring = ConflictDetector(ConflictRules(compat=True)).detect(
        "This island has a canopy", "Nothing notable on the island")
    assert substring is not None and substring.kind == ConflictType.CONTRADICTION
