"""A learned MAI: multinomial logistic regression over the scenario features (mai_features).

Standardised features and a linear model keep it decomposable: a scenario's score for a label
is the intercept plus one contribution per feature (coefficient × standardised value), so a
label is explained term by term as the rubric's is. Seeded, so a run repeats exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from memeval.quality.mai import MAI_LABELS
from memeval.quality.mai_features import FEATURES
from memeval.registry import bounded


@dataclass
class LearnedMAIConfig:
    c: float = bounded(1.0, 0)  # inverse L2 strength
    max_iter: int = bounded(2000, 1)

    def validate(self) -> None:
        if self.c <= 0:
            raise ValueError("learned.c must be positive")


class LearnedMAI:
    def __init__(self, cfg: LearnedMAIConfig, seed: int) -> None:
        self.cfg = cfg
        self.seed = seed
        self.mean = np.zeros(len(FEATURES))
        self.scale = np.ones(len(FEATURES))
        self.model = LogisticRegression(C=cfg.c, max_iter=cfg.max_iter, random_state=seed)

    def fit(self, x: np.ndarray, labels: Sequence[str]) -> LearnedMAI:
        missing = set(MAI_LABELS) - set(labels)
        if missing:
            raise ValueError(f"the learned MAI needs every label to train; none is "
                             f"{', '.join(sorted(missing))}")
        self.mean = x.mean(axis=0)
        std = x.std(axis=0)
        self.scale = np.where(std > 0, std, 1.0)
        self.model.fit(self._standard(x), np.array(labels))
        return self

    def _standard(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean) / self.scale

    def predict(self, x: np.ndarray) -> list[str]:
        return [str(label) for label in self.model.predict(self._standard(x))]

    def contributions(self, row: np.ndarray) -> dict[str, dict[str, float]]:
        """Per label: the intercept and each feature's signed share of that label's logit."""
        z = self._standard(row.reshape(1, -1))[0]
        return {str(label): {"intercept": float(b),
                             **{name: float(w * v) for name, w, v in zip(FEATURES, coef, z,
                                                                         strict=True)}}
                for label, coef, b in zip(self.model.classes_, self.model.coef_,
                                          self.model.intercept_, strict=True)}


def out_of_fold(x: np.ndarray, labels: Sequence[str], cfg: LearnedMAIConfig, folds: int,
                seed: int) -> list[str]:
    """Each scenario's label from a model fitted on the other folds only (stratified, seeded)."""
    y = np.array(labels)
    predicted = np.empty(len(y), dtype=object)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train, held in splitter.split(x, y):
        model = LearnedMAI(cfg, seed).fit(x[train], list(y[train]))
        predicted[held] = model.predict(x[held])
    return [str(label) for label in predicted]
