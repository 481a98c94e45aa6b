"""Fit the content-aware trust score, out of fold and on a whole development set.

An L2 logistic regression of [trusted] on the trust terms (standardised inside each fit, then
folded back to weights in the terms' own units), so a record's log-odds is an intercept plus
one weight × term per term: the score stays decomposable the way MQS's breakdown is.
Score = 100 × P(trusted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memeval.quality.content_signals import ContentSignalsConfig
from memeval.registry import bounded
from memeval.utils.folds import out_of_fold, stratified_splits


@dataclass
class TrustScoreConfig:
    content: ContentSignalsConfig = field(default_factory=ContentSignalsConfig)
    regularisation: float = bounded(1.0, 0)  # inverse L2 strength (sklearn's C)

    def validate(self) -> None:
        if not self.regularisation > 0:
            raise ValueError("trust.regularisation must be positive")
        self.content.validate()


@dataclass(frozen=True)
class TrustModel:
    terms: tuple[str, ...]
    intercept: float
    weights: np.ndarray  # per term, in the term's own units

    def log_odds(self, x: np.ndarray) -> np.ndarray:
        return self.intercept + np.asarray(x, dtype=float) @ self.weights

    def score(self, x: np.ndarray) -> np.ndarray:
        """100 × P(trusted), per row of `x`."""
        return 100.0 / (1.0 + np.exp(-self.log_odds(x)))

    def contributions(self, row: Sequence[float]) -> dict[str, float]:
        """Each term's share of one record's log-odds; with the intercept they sum to it."""
        return {t: float(w * v) for t, w, v in zip(self.terms, self.weights, row, strict=True)}


def fit_trust_model(x: np.ndarray, trusted: np.ndarray, terms: Sequence[str],
                    cfg: TrustScoreConfig) -> TrustModel:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant term gets weight 0 whatever its scale
    from sklearn.linear_model import LogisticRegression  # loaded on the first fit

    model = LogisticRegression(C=cfg.regularisation, max_iter=1000)
    model.fit((x - mean) / scale, trusted)
    weights = model.coef_[0] / scale
    return TrustModel(tuple(terms), float(model.intercept_[0] - weights @ mean), weights)


def out_of_fold_trust(x: np.ndarray, trusted: np.ndarray, terms: Sequence[str],
                      cfg: TrustScoreConfig, folds: int, seed: int) -> np.ndarray:
    """Each record's score from a model fitted on the other folds only (stratified, seeded)."""
    def predict(train: np.ndarray, held: np.ndarray) -> np.ndarray:
        return fit_trust_model(x[train], trusted[train], terms, cfg).score(x[held])

    return np.asarray(out_of_fold(stratified_splits(trusted, folds, seed), len(x), predict),
                      dtype=float)
