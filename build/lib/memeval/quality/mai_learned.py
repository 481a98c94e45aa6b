"""A learned MAI: multinomial logistic regression over the scenario features (mai_features), all
of them or a named subset (e.g. METADATA, for decisions that name no memory).

Standardised features and a linear model keep it decomposable: a scenario's score for a label
is the intercept plus one contribution per feature (coefficient × standardised value), so a
label is explained term by term as the rubric's is. The L2 strength is chosen from `c` by
cross-validation inside each fit, on that fit's training rows alone, so a model scored out of
fold never chose anything on the fold it scores. Seeded, so a run repeats exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memeval.quality.mai import MAI_LABELS
from memeval.quality.mai_features import FEATURES
from memeval.registry import RANGE, Range, bounded
from memeval.utils.folds import out_of_fold as held_out_values
from memeval.utils.folds import stratified_splits

if TYPE_CHECKING:  # scikit-learn loads when a model is fitted, not when the module registers
    from sklearn.linear_model import LogisticRegression


@dataclass
class LearnedMAIConfig:
    c: list[float] = field(default_factory=lambda: [1.0],  # inverse L2 strengths to choose from
                           metadata={RANGE: Range(above=0)})
    inner_folds: int = bounded(3, 2)
    max_iter: int = bounded(2000, 1)

    def validate(self) -> None:
        if not self.c or any(value <= 0 for value in self.c):
            raise ValueError("learned.c must be a non-empty list of positive numbers")


class LearnedMAI:
    def __init__(self, cfg: LearnedMAIConfig, seed: int,
                 features: Sequence[str] = FEATURES) -> None:
        self.cfg = cfg
        self.seed = seed
        self.features = tuple(features)
        self.columns = [FEATURES.index(name) for name in self.features]
        self.mean = np.zeros(len(self.features))
        self.scale = np.ones(len(self.features))
        self.model = self._model(cfg.c[0])

    def _model(self, c: float) -> LogisticRegression:
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=c, max_iter=self.cfg.max_iter, random_state=self.seed)

    def _choose_c(self, z: np.ndarray, y: np.ndarray) -> float:
        """The `c` with the best inner cross-validated accuracy (the first on ties)."""
        folds = min(self.cfg.inner_folds, *np.unique(y, return_counts=True)[1])
        if len(self.cfg.c) == 1 or folds < 2:
            return self.cfg.c[0]
        splits = stratified_splits(y, folds, self.seed)
        accuracy = [np.mean([(self._model(c).fit(z[a], y[a]).predict(z[b]) == y[b]).mean()
                             for a, b in splits]) for c in self.cfg.c]
        return self.cfg.c[int(np.argmax(accuracy))]

    def fit(self, x: np.ndarray, labels: Sequence[str]) -> LearnedMAI:
        """`x` has every FEATURES column; the model reads its own."""
        x = x[:, self.columns]
        missing = set(MAI_LABELS) - set(labels)
        if missing:
            raise ValueError(f"the learned MAI needs every label to train; none is "
                             f"{', '.join(sorted(missing))}")
        self.mean = x.mean(axis=0)
        std = x.std(axis=0)
        self.scale = np.where(std > 0, std, 1.0)
        z, y = self._standard(x), np.array(labels)
        self.model = self._model(self._choose_c(z, y)).fit(z, y)
        return self

    def _standard(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean) / self.scale

    def predict(self, x: np.ndarray) -> list[str]:
        return [str(label) for label in self.model.predict(self._standard(x[:, self.columns]))]

    def contributions(self, row: np.ndarray) -> dict[str, dict[str, float]]:
        """Per label: the intercept and each feature's signed share of that label's logit."""
        z = self._standard(row[self.columns].reshape(1, -1))[0]
        return {str(label): {"intercept": float(b),
                             **{name: float(w * v) for name, w, v in zip(self.features, coef, z,
                                                                         strict=True)}}
                for label, coef, b in zip(self.model.classes_, self.model.coef_,
                                          self.model.intercept_, strict=True)}


def out_of_fold(x: np.ndarray, labels: Sequence[str], cfg: LearnedMAIConfig, folds: int,
                seed: int, features: Sequence[str] = FEATURES) -> list[str]:
    """Each scenario's label from a model fitted on the other folds only (stratified, seeded)."""
    y = np.array(labels)

    def predict(train: np.ndarray, held: np.ndarray) -> list[str]:
        return LearnedMAI(cfg, seed, features).fit(x[train], list(y[train])).predict(x[held])

    return [str(label) for label in held_out_values(stratified_splits(y, folds, seed), len(y),
                                                    predict)]
