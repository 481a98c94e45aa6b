"""Threshold policies: fixed, and judge_quantile with empirical, normal and robust estimators."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import pytest
from omegaconf import OmegaConf

from memeval.config import compose
from memeval.engine.gate.threshold import (
    ThresholdConfig,
    fixed,
    judge_quantile,
    resolve_policy,
    threshold_settings,
)
from memeval.registry import ConfigError


def known(scores: list[float] | np.ndarray) -> Callable[[], np.ndarray]:
    return lambda: np.asarray(scores, dtype=np.float64)


def must_not_score() -> np.ndarray:
    raise AssertionError("scores computed although the policy cannot use them")


def test_fixed_returns_the_value() -> None:
    cfg = ThresholdConfig(policy="fixed", value=0.35)
    assert fixed(cfg, known([]), 0) == 0.35


def test_empirical_quantile() -> None:
    scores = np.arange(101) / 100  # 0.00 … 1.00
    cfg = ThresholdConfig(policy="judge_quantile", target_recall=0.98, estimator="empirical",
                          min_accepted=20)
    assert judge_quantile(cfg, known(scores), 101) == pytest.approx(0.02)
    cfg.margin = 0.005
    assert judge_quantile(cfg, known(scores), 101) == pytest.approx(0.015)


def test_empirical_quantile_passes_target_share() -> None:
    scores = np.random.default_rng(0).normal(size=500)
    cfg = ThresholdConfig(policy="judge_quantile", target_recall=0.9, estimator="empirical",
                          min_accepted=20)
    cut = judge_quantile(cfg, known(scores), 500)
    assert cut is not None
    assert (scores >= cut).mean() == pytest.approx(0.9, abs=0.005)


def test_normal_estimator() -> None:
    scores = [0.0, 1.0, 2.0, 3.0, 4.0]  # mean 2, sample sd √2.5
    cfg = ThresholdConfig(policy="judge_quantile", target_recall=0.975, estimator="normal",
                          min_accepted=5)
    expected = 2.0 - 1.959963985 * math.sqrt(2.5)
    assert judge_quantile(cfg, known(scores), 5) == pytest.approx(expected,
                                                                                  abs=1e-6)


def test_normal_estimator_at_full_recall_uses_four_sd() -> None:
    scores = [0.0, 1.0, 2.0, 3.0, 4.0]
    cfg = ThresholdConfig(policy="judge_quantile", target_recall=1.0, estimator="normal",
                          margin=0.5, min_accepted=5)
    expected = 2.0 - 4.0 * math.sqrt(2.5) - 0.5
    assert judge_quantile(cfg, known(scores), 5) == pytest.approx(expected)


def test_robust_estimator_reads_median_and_mad() -> None:
    scores = [0.0, 1.0, 2.0, 3.0, 10.0]  # median 2, MAD 1
    cfg = ThresholdConfig(policy="judge_quantile", target_recall=0.975, estimator="robust",
                          min_accepted=5)
    expected = 2.0 - 1.959963985 * 1.4826
    assert judge_quantile(cfg, known(scores), 5) == pytest.approx(expected, abs=1e-5)


def test_robust_estimator_holds_its_cut_when_a_judge_accepts_some_noise() -> None:
    """The case it exists for: 5% of the acceptances are noise the judge let through, scored far
    below the rest. The normal fit's cut falls by over two sd; the robust one's barely moves."""
    rng = np.random.default_rng(0)
    clean = rng.normal(2.0, 1.0, size=380)
    mistaken = np.concatenate([clean, rng.normal(-6.0, 1.0, size=20)])
    cuts = {}
    for estimator in ("normal", "robust"):
        cfg = ThresholdConfig(policy="judge_quantile", target_recall=0.99, estimator=estimator)
        cuts[estimator] = [judge_quantile(cfg, known(s), len(s)) for s in (clean, mistaken)]
    normal_before, normal_after = cuts["normal"]
    robust_before, robust_after = cuts["robust"]
    assert normal_before - normal_after > 2.0
    assert abs(robust_before - robust_after) < 0.4
    assert robust_before == pytest.approx(normal_before, abs=0.25)  # same cut on clean verdicts


def test_none_below_min_accepted() -> None:
    cfg = ThresholdConfig(policy="judge_quantile", min_accepted=20)
    assert judge_quantile(cfg, must_not_score, 19) is None
    assert judge_quantile(cfg, known(np.ones(19)), 19) is None
    assert judge_quantile(cfg, known(np.ones(20)), 20) == pytest.approx(1.0)


def test_unknown_policy_names_the_fix() -> None:
    with pytest.raises(ConfigError, match="did you mean 'judge_quantile'"):
        resolve_policy("judge_quantil")
    assert resolve_policy("fixed") is fixed


@pytest.mark.parametrize(("params", "match"), [
    ({"policy": "fixd"}, "did you mean 'fixed'"),
    ({"estimator": "gaussian"}, "estimator"),
    ({"target_recall": 0.0}, "target_recall"),
    ({"target_recall": 1.5}, "target_recall"),
    ({"min_accepted": 0}, "min_accepted"),
    ({"scores": "kfold"}, "held_out, prequential"),
])
def test_invalid_threshold_config(params: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        threshold_settings(params)


def test_defaults_are_a_default_runs() -> None:
    """One set of defaults: a ThresholdConfig built in code cuts where a default run does."""
    composed = OmegaConf.to_container(compose([]).threshold)
    assert composed == dataclasses.asdict(ThresholdConfig())
