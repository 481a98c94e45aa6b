"""kNN-margin scorer: top-k cosine to accepted minus top-k cosine to rejected; honest LOO."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.engine.scorers.base import SCORERS, Prototypes
from memeval.engine.scorers.knn_margin import KnnMarginConfig, KnnMarginScorer
from memeval.registry import ConfigError
from tests.engine.fakes import basis, unit

E1, E2, E3 = basis(0), basis(1), basis(2)
EMPTY = np.zeros((0, 4), dtype=np.float32)


def learned(quality: list[np.ndarray], noise: list[np.ndarray]) -> Prototypes:
    return Prototypes(EMPTY, EMPTY, np.stack(noise), np.stack(quality))


def scorer(k: int, min_learned: int = 1) -> KnnMarginScorer:
    return KnnMarginScorer(KnnMarginConfig(k=k, min_learned=min_learned))


def test_margin_formula() -> None:
    s = scorer(k=2)
    assert s.fit(learned([E1, unit(1, 1, 0, 0), E3], [unit(1, 0, 1, 0), E2]))
    # quality sims [1, 1/√2, 0] → top-2 mean (1 + 1/√2)/2; noise sims [1/√2, 0] → mean 1/(2√2)
    expected = (1 + 2 ** -0.5) / 2 - (2 ** -0.5) / 2
    assert expected == pytest.approx(0.5)
    assert s.score(E1[None, :])[0] == pytest.approx(expected, abs=1e-6)


def test_score_is_antisymmetric_in_the_two_sides() -> None:
    s = scorer(k=1)
    s.fit(learned([E1], [E2]))
    np.testing.assert_allclose(s.score(np.stack([E1, E2])), [1.0, -1.0], atol=1e-6)


def test_fit_needs_min_learned_on_both_sides() -> None:
    s = scorer(k=1, min_learned=2)
    assert not s.fit(learned([E1, E2, E3], [E1]))
    assert not s.fit(learned([E1], [E1, E2, E3]))
    assert s.fit(learned([E1, E2], [E1, E3]))


def test_calibration_excludes_the_text_and_its_identical_copies() -> None:
    s = scorer(k=1)
    quality = [E1, E1, unit(1, 1, 0, 0), E2]
    s.fit(learned(quality, [E3]))
    # in-sample every acceptance finds itself (cosine 1); held out, the nearest OTHER text
    # (identical copies excluded) is the diagonal, or E1/E2 for the diagonal: cosine 1/√2
    np.testing.assert_allclose(s.score(np.stack(quality)), [1, 1, 1, 1], atol=1e-6)
    np.testing.assert_allclose(s.calibration_scores(), [2 ** -0.5] * 4, atol=1e-6)


def test_calibration_shrinks_k_to_what_remains() -> None:
    s = scorer(k=5)
    s.fit(learned([E1, E1, E2], [E3]))
    # 3 texts, at most 2 identical → k = 1: row 0 sees only E2 (cos 0)
    np.testing.assert_allclose(s.calibration_scores(), [0.0, 0.0, 0.0], atol=1e-6)


def test_bad_k_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="knn_margin"):
        SCORERS.validate({"name": "knn_margin", "k": 0})


def test_confidence_maps_the_margin_linearly_with_zero_at_half() -> None:
    mapped = scorer(k=1).confidence(np.array([-2.0, -0.2, 0.0, 0.2, 2.0]))
    assert mapped.tolist() == pytest.approx([0.0, 0.4, 0.5, 0.6, 1.0])
