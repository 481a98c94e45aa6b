"""Hedging detection: word-boundary markers, counted once each, with count and density floors."""

from __future__ import annotations

import pytest

from memeval.quality.hedging import HedgeDetector, HedgingConfig


def detector(**overrides: object) -> HedgeDetector:
    return HedgeDetector(HedgingConfig(**overrides))  # type: ignore[arg-type]


def test_markers_match_whole_words_only() -> None:
    found = detector().markers("The mayor's mighty dog: unlikelyhood. Maybe it MIGHT rain.")
    assert found == ["maybe", "might"]


def test_a_longer_marker_is_counted_once() -> None:
    assert detector().markers("I'm not sure this helps.") == ["i'm not sure"]


def test_multiword_markers_allow_any_whitespace() -> None:
    assert detector().markers("It  seems\nto work, I\tthink.") == ["it  seems", "i\tthink"]


def test_needs_both_the_count_and_the_density() -> None:
    hedgy = "Maybe the cache is stale; it might also be the lock."
    assert detector()(hedgy)
    assert not detector(min_markers=3)(hedgy)
    padded = hedgy + " word" * 400  # 2 markers in ~410 words: below 0.5 per 100
    assert not detector()(padded)
    assert detector(min_per_100_words=0.0)(padded)


def test_confident_text_is_not_hedged() -> None:
    assert not detector()("Fixed: the migration adds a NOT NULL column with a default.")


@pytest.mark.parametrize("overrides", [{"markers": []}, {"markers": ["ok", " "]},
                                       {"min_markers": 0}, {"min_per_100_words": -1.0}])
def test_bad_settings_are_refused(overrides: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="hedging"):
        HedgingConfig(**overrides).validate()  # type: ignore[arg-type]
