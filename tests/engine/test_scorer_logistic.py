"""Logistic scorer: fits on both sides once it has enough, separates, calibrates out-of-fold."""

from __future__ import annotations

import numpy as np
import pytest
from omegaconf import OmegaConf

from memeval.engine.scorers.base import SCORERS, Prototypes
from memeval.engine.scorers.logistic import LogisticConfig, LogisticScorer
from memeval.registry import ConfigError
from tests.engine.fakes import CONF

DIM = 16


def cluster(sign: float, n: int, seed: int, spread: float = 0.6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centre = np.zeros(DIM, dtype=np.float32)
    centre[0] = sign
    rows = centre + spread * rng.normal(size=(n, DIM)).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def protos(quality: np.ndarray, noise: np.ndarray, quality_texts: list[str] | None = None,
           noise_texts: list[str] | None = None) -> Prototypes:
    empty = np.zeros((0, DIM), dtype=np.float32)
    return Prototypes(empty, empty, noise, quality,
                      learned_noise_texts=noise_texts or [""] * len(noise),
                      learned_quality_texts=quality_texts or [""] * len(quality))


def plain(**overrides: object) -> LogisticScorer:
    return LogisticScorer(LogisticConfig(lexical_features={}, **overrides))  # type: ignore[arg-type]


def test_needs_min_learned_on_both_sides() -> None:
    s = plain(min_learned=10)
    assert not s.fit(protos(cluster(1, 9, 0), cluster(-1, 30, 1)))
    with pytest.raises(RuntimeError, match="before fit"):
        s.score(cluster(1, 1, 2))
    assert not s.fit(protos(cluster(1, 30, 0), cluster(-1, 9, 1)))
    assert s.fit(protos(cluster(1, 10, 0), cluster(-1, 10, 1)))


def test_separates_two_clusters() -> None:
    s = plain(c=10.0)  # a loose fit: the default's stronger penalty pulls scores towards 0
    assert s.fit(protos(cluster(1, 40, 0), cluster(-1, 40, 1)))
    positives = s.score(cluster(1, 50, 10))
    negatives = s.score(cluster(-1, 50, 11))
    assert positives.dtype == np.float32
    assert (positives > 0).mean() >= 0.95
    assert (negatives < 0).mean() >= 0.95
    assert positives.mean() > negatives.mean() + 1.0


def test_blocked_calibration_holds_out_stretches_of_the_stream() -> None:
    """Two 'sessions' of acceptances, each in its own direction, learned one after the other:
    blocked folds score each session with a model that never saw it, so its held-out scores sit
    lower than shuffled folds', whose models saw most of each session. Seeds do not matter."""
    first, second = cluster(1, 30, 0), cluster(1, 30, 1)
    first[:, 1], second[:, 2] = 0.8, 0.8  # what each session's findings share
    quality = np.concatenate([first, second])
    quality /= np.linalg.norm(quality, axis=1, keepdims=True)
    noise = cluster(-1, 60, 2)
    scores = {}
    for calibration in ("kfold", "blocked"):
        s = plain(calibration=calibration, calibration_folds=2, seed=5)
        s.fit(protos(quality, noise))
        scores[calibration] = s.calibration_scores()
    assert scores["blocked"].mean() < scores["kfold"].mean()
    other_seed = plain(calibration="blocked", calibration_folds=2, seed=9)
    other_seed.fit(protos(quality, noise))
    np.testing.assert_allclose(other_seed.calibration_scores(), scores["blocked"], rtol=1e-5)


def test_calibration_scores_are_out_of_fold() -> None:
    s = plain(calibration="kfold", calibration_folds=5, seed=3)
    quality = cluster(1, 30, 0, spread=1.0)
    s.fit(protos(quality, cluster(-1, 30, 1, spread=1.0)))
    in_sample = s.score(quality)
    held_out = s.calibration_scores()
    assert held_out.shape == (30,)
    assert not np.allclose(held_out, in_sample, atol=1e-3)
    # a model that saw a text scores it higher than one that did not, on average
    assert held_out.mean() < in_sample.mean()
    np.testing.assert_array_equal(held_out, s.calibration_scores())  # seeded folds


def test_approximate_leave_one_out_matches_exact_refits() -> None:
    quality, noise = cluster(1, 30, 4, spread=1.0), cluster(-1, 40, 5, spread=1.0)
    s = plain(c=10.0, calibration="alo")
    s.fit(protos(quality, noise))
    approximate = s.calibration_scores()
    exact = []
    for i in range(len(quality)):
        alone = plain(c=10.0)
        alone.fit(protos(np.delete(quality, i, axis=0), noise))
        exact.append(float(alone.score(quality[i : i + 1])[0]))
    in_sample = s.score(quality)
    assert np.abs(approximate - exact).max() < 0.05 * np.ptp(exact)
    assert (approximate <= in_sample + 1e-6).all()  # leaving an acceptance out lowers its score


def test_lexical_features_carry_signal_the_embedding_lacks() -> None:
    node = OmegaConf.to_container(OmegaConf.load(CONF / "scorer" / "logistic.yaml"))
    assert isinstance(node, dict)
    node["seed"] = 0
    s = SCORERS.build(node)
    assert isinstance(s, LogisticScorer)
    same = np.tile(cluster(1, 1, 0), (24, 1))  # every text embeds identically
    good = [f"Set `max_workers = {i}` in src/app/config_{i}.py because the pool must stay "
            f"below the DB limit of {i * 10}." for i in range(12)]
    bad = [f"I'll check that now.\nLet me look at file {i}.\nOkay, running it." for i in range(12)]
    assert s.fit(protos(same[:12], same[12:], good, bad))
    scores = s.score(same[:2], [good[0].replace("0", "7"), bad[0].replace("0", "7")])
    assert scores[0] > 0 > scores[1]


def test_bad_lexical_regex_fails_validation() -> None:
    message = r"scorer 'logistic': lexical_features\.broken: bad regex"
    with pytest.raises(ConfigError, match=message):
        SCORERS.validate({"name": "logistic", "lexical_features": {"broken": "(unclosed"}})


def test_too_few_calibration_folds_fails_validation() -> None:
    with pytest.raises(ConfigError, match="calibration must be one of alo, kfold, blocked"):
        SCORERS.validate({"name": "logistic", "calibration": "loo"})
    with pytest.raises(ConfigError, match="calibration_folds"):
        SCORERS.validate({"name": "logistic", "calibration_folds": 1})


def test_confidence_is_the_models_probability() -> None:
    fitted = LogisticScorer(LogisticConfig(min_learned=2))
    assert fitted.fit(protos(cluster(1.0, 30, 0), cluster(-1.0, 30, 1)))
    vectors = np.vstack([cluster(1.0, 3, 2), cluster(-1.0, 3, 3)])
    logits = fitted.score(vectors)
    expected = fitted._model.predict_proba(vectors)[:, 1]  # type: ignore[union-attr]
    assert np.allclose(fitted.confidence(logits), expected, atol=1e-5)
    assert fitted.confidence(np.array([0.0]))[0] == pytest.approx(0.5)
    assert np.all(fitted.confidence(np.array([-800.0, 800.0])) == [0.0, 1.0])  # no overflow
