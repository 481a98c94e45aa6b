"""Logistic scorer: a linear classifier trained online on the judge's verdicts.

Positives are the judge's acceptances, negatives its rejections (the rejection store). Features are
the text's embedding plus lexical anchor densities (see lexical.py), scaled by `lexical_weight`.
Unlike prototype similarity, a linear model learns WHICH directions separate substantive from
procedural text, so it needs no static descriptions and no embedder-specific cut.

Calibration needs each acceptance's score from a model that never saw it. `calibration: blocked`
(default) refits K models, each without one contiguous stretch of the acceptances in the order
they were learned, so a held-out score says how a turn from a session the model never saw scores.
`calibration: alo` computes approximate leave-one-out scores in closed form: one Newton step away
from the fitted optimum per left-out acceptance, exact to second order for this smooth,
L2-penalised loss, for the cost of one Hessian factorisation instead of K refits; but the other
turns of a left-out turn's session stay in, so its cut promised more recall on new sessions than
they got. `calibration: kfold` refits K models on shuffled folds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memeval.engine.scorers.base import SCORERS, Prototypes
from memeval.engine.scorers.lexical import LexicalFeatures
from memeval.registry import SEEDS, bounded

if TYPE_CHECKING:  # scikit-learn and scipy load on the first fit, not when the scorer registers
    from sklearn.linear_model import LogisticRegression


# alo: approximate leave-one-out; kfold: K shuffled folds; blocked: K contiguous folds in the
# order the acceptances were learned, so a held-out fold is a stretch of the stream (whole
# sessions, mostly) that its model never saw: turns of one session resemble each other, and a
# cut from leave-one-turn-out scores passes fewer of a new session's findings than it promises.
CALIBRATIONS = ("alo", "kfold", "blocked")


@dataclass
class LogisticConfig:
    c: float = bounded(1.0, above=0)
    min_learned: int = bounded(10, 2)
    calibration: str = "blocked"
    calibration_folds: int = bounded(5, 2)
    seed: int = bounded(0, *SEEDS)
    lexical_weight: float = bounded(0.3, 0)
    lexical_features: dict[str, str] = field(default_factory=dict)

    def validate(self) -> None:
        if self.c <= 0 or self.lexical_weight < 0:
            raise ValueError("c must be positive and lexical_weight non-negative")
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {', '.join(CALIBRATIONS)}, "
                             f"got '{self.calibration}'")
        if self.min_learned < 2 or self.calibration_folds < 2:
            raise ValueError("min_learned and calibration_folds must be at least 2")
        for name, pattern in self.lexical_features.items():  # a bad regex fails at composition
            try:
                re.compile(pattern)
            except re.error as err:  # not a ValueError: would escape as a raw traceback
                raise ValueError(f"lexical_features.{name}: bad regex {pattern!r}: {err}") from None


class LogisticScorer:
    name = "logistic"

    def __init__(self, cfg: LogisticConfig) -> None:
        self.cfg = cfg
        self.static_quality_texts: list[str] = []  # learns both sides; no static prototypes
        self.static_noise_texts: list[str] = []
        self.lexical = LexicalFeatures(cfg.lexical_features)
        self._model: LogisticRegression | None = None
        self._weights = np.zeros(0, dtype=np.float32)
        self._bias = 0.0
        self._quality = np.zeros((0, 0), dtype=np.float32)
        self._noise = np.zeros((0, 0), dtype=np.float32)

    def _features(self, vectors: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        if self.cfg.lexical_weight == 0 or not self.cfg.lexical_features:
            return vectors
        return np.hstack([vectors, self.cfg.lexical_weight * self.lexical(texts)])

    def _fit(self, quality: np.ndarray, noise: np.ndarray,
             start: LogisticRegression | None = None) -> LogisticRegression:
        """Warm-started from `start` when its shape fits: rebuilds every 25 additions change the
        data a little, so the previous optimum is a far better starting point than zero."""
        features = np.concatenate([quality, noise])
        targets = np.concatenate([np.ones(len(quality)), np.zeros(len(noise))])
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=self.cfg.c, class_weight="balanced", max_iter=5000,
                                   warm_start=True)
        if start is not None and start.coef_.shape[1] == features.shape[1]:
            model.coef_, model.intercept_ = start.coef_.copy(), start.intercept_.copy()
        return model.fit(features, targets)

    def fit(self, protos: Prototypes) -> bool:
        self._quality = self._features(protos.learned_quality, protos.learned_quality_texts)
        self._noise = self._features(protos.learned_noise, protos.learned_noise_texts)
        if min(len(self._quality), len(self._noise)) < self.cfg.min_learned:
            self._model = None
            return False
        self._model = self._fit(self._quality, self._noise, start=self._model)
        self._weights = self._model.coef_[0].astype(np.float32)
        self._bias = float(self._model.intercept_[0])
        return True

    def forget(self) -> None:
        self._model = None

    def score(self, vectors: np.ndarray, texts: Sequence[str] = ()) -> np.ndarray:
        if self._model is None:
            raise RuntimeError("logistic scorer used before fit() succeeded")
        # w·x + b directly: sklearn's per-call validation costs more than the dot product
        return (self._features(vectors, texts) @ self._weights + self._bias).astype(np.float32)

    def confidence(self, scores: np.ndarray) -> np.ndarray:
        """The model's probability (scores are logits); with balanced class weights it assumes
        even odds of keep and skip before reading the text."""
        from scipy.special import expit

        return expit(np.asarray(scores, dtype=np.float64)).astype(np.float32)

    def calibration_scores(self) -> np.ndarray:
        if self.cfg.calibration == "alo":
            return self._approximate_leave_one_out()
        folds = min(self.cfg.calibration_folds, len(self._quality))
        scores = np.zeros(len(self._quality), dtype=np.float32)
        from sklearn.model_selection import KFold

        shuffled = self.cfg.calibration == "kfold"
        splitter = KFold(folds, shuffle=shuffled, random_state=self.cfg.seed if shuffled else None)
        for train, held_out in splitter.split(self._quality):
            model = self._fit(self._quality[train], self._noise, start=self._model)
            scores[held_out] = model.decision_function(self._quality[held_out])
        return scores

    def _approximate_leave_one_out(self) -> np.ndarray:
        """s₋ᵢ ≈ sᵢ + hᵢ·cᵢ·gᵢ / (1 − hᵢ·cᵢ·pᵢ(1 − pᵢ)), with gᵢ = pᵢ − 1 the loss gradient at
        an acceptance, cᵢ its class weight and hᵢ = x̃ᵢᵀ H⁻¹ x̃ᵢ its leverage under the penalised
        Hessian H = Σ cⱼ pⱼ(1 − pⱼ) x̃ⱼx̃ⱼᵀ + I/C (intercept unpenalised), x̃ = [x, 1]."""
        # float32 and a Cholesky solve: the leverages need ~3 digits, and this runs at every
        # rebuild (a 395-wide Hessian: ~3 ms instead of ~12 ms in float64 with a general solve)
        k = len(self._quality)
        x = np.hstack([np.concatenate([self._quality, self._noise]),
                       np.ones((k + len(self._noise), 1), dtype=np.float32)])
        n = len(x)
        weights = np.concatenate([np.full(k, n / (2 * k)),
                                  np.full(len(self._noise), n / (2 * len(self._noise)))])
        scores = x @ np.append(self._weights, np.float32(self._bias))
        p = 1.0 / (1.0 + np.exp(-scores.astype(np.float64)))
        curvature = weights * p * (1 - p)
        penalty = np.full(x.shape[1], 1.0 / self.cfg.c, dtype=np.float32)
        penalty[-1] = 0.0
        hessian = (x * curvature[:, None].astype(np.float32)).T @ x + np.diag(penalty)
        q = x[:k]
        from scipy.linalg import cho_factor, cho_solve

        solved = cho_solve(cho_factor(hessian), q.T)
        leverage = np.einsum("ij,ji->i", q, solved).astype(np.float64)
        shift = leverage * weights[:k] * (p[:k] - 1.0) / (1.0 - leverage * curvature[:k])
        return (scores[:k] + shift).astype(np.float32)


@SCORERS.register("logistic", LogisticConfig)
def build_logistic(cfg: LogisticConfig) -> LogisticScorer:
    return LogisticScorer(cfg)
