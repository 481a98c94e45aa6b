"""The pair conflict detector: a cross-encoder fine-tuned from the bundled MiniLM, fitted once
per module on a tiny set (seconds); what it learns, that the order of a pair's sides does not
change its answer, the newer side, the cut and the fit cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from memeval.quality.conflict_features import ConflictSide
from memeval.quality.conflict_model import CONFLICT_DETECTORS, Pair, Superseding
from memeval.quality.pair_model import (
    CLASSES,
    FLIPPED,
    PairConflictDetector,
    PairModelConfig,
    side_text,
    target,
)
from memeval.registry import ConfigError, to_dataclass
from memeval.utils.fit_cache import FitCache

S = ConflictSide
TINY = PairModelConfig(epochs=3, learning_rate=5e-4, batch_size=4, max_length=48)
PAIRS: list[Pair] = [
    (S("Use pnpm for installs", "2025-01-01"), S("Use npm for installs", "2025-02-01")),
    (S("Tabs for indentation"), S("Indent with tabs")),
    (S("We now deploy with helm, previously kubectl", "2025-03-01"),
     S("Deploy with kubectl", "2025-01-01")),
    (S("Never push to main"), S("Always push to main")),
]
LABELS = ["semantic", "none", "temporal", "contradiction"]
NEWER: list[str | None] = [None, None, "a", None]


@pytest.fixture(scope="module")
def fitted() -> PairConflictDetector:
    detector = PairConflictDetector(TINY)
    detector.fit(PAIRS * 4, LABELS * 4, newer=NEWER * 4)
    return detector


def test_it_learns_the_types_and_the_newer_side_of_its_training_pairs(
        fitted: PairConflictDetector) -> None:
    assert fitted.predict(PAIRS) == LABELS
    assert fitted.newer(PAIRS)[2] == "a"  # the helm memory supersedes, as labelled
    assert isinstance(fitted, Superseding)


def test_swapping_a_pairs_sides_keeps_its_type_and_swaps_its_newer_side(
        fitted: PairConflictDetector) -> None:
    swapped = [(b, a) for a, b in PAIRS]
    assert fitted.predict(swapped) == fitted.predict(PAIRS)
    flip = {"a": "b", "b": "a"}
    assert fitted.newer(swapped) == [flip[side] for side in fitted.newer(PAIRS)]
    both = fitted.probabilities(PAIRS)
    assert fitted.probabilities(swapped) == pytest.approx(both[:, FLIPPED])


def test_the_cut_on_none_trades_conflicts_for_none(fitted: PairConflictDetector) -> None:
    """At 0 every pair is none (P(none) >= 0 always); at 1 no pair is (none is never certain)
    and each conflict keeps its type."""
    found = {}
    for cut in (0.0, 1.0):
        fitted.cfg = PairModelConfig(**{**TINY.__dict__, "none_probability": cut})
        try:
            found[cut] = fitted.predict(PAIRS)
        finally:
            fitted.cfg = TINY
    assert found[0.0] == ["none"] * len(PAIRS)
    assert "none" not in found[1.0]
    assert [g for g, t in zip(found[1.0], LABELS, strict=True) if t != "none"] == \
        [t for t in LABELS if t != "none"]


def test_a_fit_is_kept_and_a_new_cut_reuses_it(tmp_path: Path) -> None:
    fits = FitCache(tmp_path)
    pairs, labels = PAIRS[:2] * 2, LABELS[:2] * 2
    once = PairModelConfig(epochs=1, batch_size=4, max_length=32)
    first = CONFLICT_DETECTORS.build({"name": "pair", **once.__dict__}, fits=fits)
    first.fit(pairs, labels)
    again = CONFLICT_DETECTORS.build({"name": "pair", **once.__dict__, "none_probability": 0.9},
                                     fits=FitCache(tmp_path))
    again.fit(pairs, labels)
    assert (fits.misses, fits.hits) == (1, 0)
    assert isinstance(again, PairConflictDetector) and isinstance(first, PairConflictDetector)
    assert again.weights is not None and first.weights is not None
    assert all((again.weights[k] == first.weights[k]).all() for k in first.weights)


def test_an_unfitted_model_refuses_to_predict() -> None:
    with pytest.raises(RuntimeError, match="only after fit"):
        PairConflictDetector(TINY).predict(PAIRS)


def test_a_temporal_pairs_class_names_its_newer_side() -> None:
    early, late = S("x", "2025-01-01T10:00:00Z"), S("y", "2025-02-01")
    assert CLASSES[target("temporal", "a", early, late)] == "temporal_first"
    assert CLASSES[target("temporal", "b", early, late)] == "temporal_second"
    assert CLASSES[target("temporal", None, late, early)] == "temporal_first"  # later date
    assert CLASSES[target("temporal", None, S("x"), S("y"))] == "temporal_second"  # as read
    assert CLASSES[target("semantic", "a", early, late)] == "semantic"
    assert [CLASSES[FLIPPED[i]] for i in range(len(CLASSES))] == [
        "none", "contradiction", "semantic", "temporal_second", "temporal_first"]


def test_a_side_is_read_with_its_date_when_known() -> None:
    assert side_text(S("Use uv", "2025-08-19T16:22:52-05:00"), True) == "2025-08-19 | Use uv"
    assert side_text(S("Use uv", "2025-08-19"), False) == "Use uv"
    assert side_text(S("Use uv", "soon"), True) == "Use uv"
    assert side_text(S("Use uv"), True) == "Use uv"


@pytest.mark.bad_input
def test_settings_outside_their_range_are_refused() -> None:
    with pytest.raises(ConfigError, match="epochs"):
        to_dataclass(PairModelConfig, {"epochs": 0}, "experiment.detector")
    with pytest.raises(ConfigError, match="learning_rate"):
        to_dataclass(PairModelConfig, {"learning_rate": 0.0}, "experiment.detector")
