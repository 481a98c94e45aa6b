"""memoryd scorer: avgQualitySim / (avgQualitySim + top-k noise sim), on hand-made vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memeval.config import compose
from memeval.engine.scorers.base import SCORERS, Prototypes, top_k_mean
from memeval.engine.scorers.memoryd import MemorydConfig, MemorydScorer
from memeval.registry import ConfigError
from tests.engine.fakes import basis, unit

E1, E2, E3 = basis(0), basis(1), basis(2)
EMPTY = np.zeros((0, 4), dtype=np.float32)


def scorer(k: int = 3, require_learned: bool = True) -> MemorydScorer:
    return MemorydScorer(MemorydConfig(k=k, require_learned=require_learned,
                                       quality_prototypes=["q"], noise_prototypes=["n"]))


def protos(quality: list[np.ndarray], noise: list[np.ndarray],
           learned_noise: list[np.ndarray] | None = None,
           learned_quality: list[np.ndarray] | None = None) -> Prototypes:
    def rows(v: list[np.ndarray] | None) -> np.ndarray:
        return np.stack(v) if v else EMPTY
    return Prototypes(rows(quality), rows(noise), rows(learned_noise), rows(learned_quality))


def test_shipped_config_builds() -> None:
    built = SCORERS.build(compose(["scorer=memoryd"]).scorer)
    assert isinstance(built, MemorydScorer)
    assert built.cfg.k == 3
    assert len(built.static_quality_texts) == 6 and len(built.static_noise_texts) == 3


def test_formula_on_hand_made_vectors() -> None:
    s = scorer(k=2, require_learned=False)
    diagonal = unit(1, 1, 0, 0)
    assert s.fit(protos([E1, E2], [E1, E2, E3, diagonal]))
    # avgQ = mean(1, 0) = 0.5; noise sims = [1, 0, 0, 1/√2] → top-2 mean = (1 + 1/√2) / 2
    expected = 0.5 / (0.5 + (1 + 1 / math.sqrt(2)) / 2)
    assert expected == pytest.approx(0.369398, abs=1e-6)
    (score,) = s.score(E1[None, :])
    assert score == pytest.approx(expected, abs=1e-6)


def test_k_larger_than_noise_set_uses_all() -> None:
    s = scorer(k=5, require_learned=False)
    s.fit(protos([E1], [E1, E2]))
    # avgQ = 1; top noise = mean(1, 0) = 0.5 → 1 / 1.5
    assert s.score(E1[None, :])[0] == pytest.approx(2 / 3, abs=1e-6)


@pytest.mark.parametrize("vector", [-E1, E3])
def test_non_positive_denominator_scores_half(vector: np.ndarray) -> None:
    s = scorer(k=1, require_learned=False)
    s.fit(protos([E1], [E1] if vector[0] < 0 else [E2]))
    # -E1: avgQ = -1, noise = -1 (sum -2); E3: both 0 (sum 0)
    assert s.score(vector[None, :])[0] == 0.5


def test_score_is_clipped_to_unit_interval() -> None:
    s = scorer(k=1, require_learned=False)
    s.fit(protos([unit(1, 1, 0, 0)], [unit(-1, 0, 2, 0)]))
    # avgQ = 1/√2 ≈ 0.71, noise = -1/√5 ≈ -0.45: denominator > 0, ratio ≈ 2.7 → clipped to 1
    assert s.score(E1[None, :])[0] == 1.0
    s.fit(protos([unit(-1, 0, 2, 0)], [unit(1, 1, 0, 0)]))
    # avgQ ≈ -0.45 < 0 < denominator ≈ 0.26: ratio < 0 → clipped to 0
    assert s.score(E1[None, :])[0] == 0.0


def test_learned_noise_replaces_static() -> None:
    s = scorer(k=1)
    static_only = protos([E1], [E1])
    assert not s.fit(static_only)  # require_learned: no rejection data yet → unavailable
    learned = protos([E1], [E1], learned_noise=[E3])
    assert s.fit(learned)
    # with static noise E1 the score would be 1/(1+1) = 0.5; learned noise E3 alone → 1/(1+0)
    assert s.score(E1[None, :])[0] == pytest.approx(1.0)


def test_without_require_learned_static_noise_is_used() -> None:
    s = scorer(k=1, require_learned=False)
    assert s.fit(protos([E1], [E1]))
    assert s.score(E1[None, :])[0] == pytest.approx(0.5)


def test_calibration_scores_are_plain_scores_of_acceptances() -> None:
    s = scorer(k=1)
    s.fit(protos([E1], [E2], learned_noise=[E2], learned_quality=[E1, unit(1, 1, 0, 0)]))
    np.testing.assert_allclose(s.calibration_scores(), [1.0, 0.5], atol=1e-6)


def test_top_k_mean() -> None:
    sims = np.array([[0.1, 0.9, 0.5], [0.3, 0.2, 0.1]], dtype=np.float32)
    np.testing.assert_allclose(top_k_mean(sims, 2), [0.7, 0.25], atol=1e-6)
    np.testing.assert_allclose(top_k_mean(sims, 10), [0.5, 0.2], atol=1e-6)
    np.testing.assert_array_equal(top_k_mean(np.zeros((2, 0)), 3), [0.0, 0.0])


def test_empty_prototype_lists_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="prototypes"):
        SCORERS.validate({"name": "memoryd", "quality_prototypes": []})


def test_confidence_is_the_score_itself() -> None:
    assert scorer().confidence(np.array([0.0, 0.3, 1.0, 1.2])).tolist() == \
        pytest.approx([0.0, 0.3, 1.0, 1.0])
