"""Which words, said by one memory of a pair and not the other, mark a conflict: a logistic model
over those words (hashed), learned from labelled pairs and stacked into the learned detector.

Word lists name the negations and antonyms someone thought of; real pairs flip a memory with
words nobody listed ("hates", "unsigned", "kept out of", "static-only"). The model learns them
from the pairs, and the detector weighs its class probabilities beside the hand-made features.
Its probabilities on the pairs it is fitted on come out of fold, so the detector does not learn
to trust a model that has seen the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from memeval.quality.words import stem, tokens
from memeval.utils.progress import Progress, quiet

if TYPE_CHECKING:  # scikit-learn loads when a model is fitted, not when the module registers
    from scipy.sparse import spmatrix
    from sklearn.linear_model import LogisticRegression


@cache
def _hasher() -> Any:
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=2**14, alternate_sign=False, token_pattern=r"\S+")


def said_by_one(a: str, b: str) -> str:
    """The word stems one memory says and the other does not, as one space-joined document."""
    left, right = {stem(t) for t in tokens(a)}, {stem(t) for t in tokens(b)}
    return " ".join(sorted(left ^ right))


class DifferenceWords:
    """The logistic model over `said_by_one` words: class probabilities per pair."""

    def __init__(self, inverse_regularisation: float, folds: int, seed: int) -> None:
        self.inverse_regularisation, self.folds, self.seed = inverse_regularisation, folds, seed
        self.model: LogisticRegression | None = None

    def _model(self) -> LogisticRegression:
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=self.inverse_regularisation, class_weight="balanced",
                                  max_iter=2000)

    @staticmethod
    def _bag(texts: Sequence[tuple[str, str]]) -> spmatrix:
        return _hasher().transform([said_by_one(a, b) for a, b in texts])

    def fit(self, texts: Sequence[tuple[str, str]], labels: Sequence[str],
            progress: Progress = quiet) -> np.ndarray:
        """Fit on all pairs; return each pair's probabilities from a model that did not see it,
        one fold after another under `progress` (a class missing from a fold's training pairs
        gets probability 0 there, as scikit-learn's cross_val_predict gives it)."""
        from sklearn.model_selection import StratifiedKFold

        x, y = self._bag(texts), np.asarray(labels)
        classes, counts = np.unique(y, return_counts=True)
        folds = StratifiedKFold(max(2, min(self.folds, int(counts.min()))), shuffle=True,
                                random_state=self.seed)
        held_out = np.zeros((len(y), len(classes)))
        for train, held in progress(folds.split(x, y), folds.get_n_splits(),
                                    "difference words", "fold"):
            model = self._model().fit(x[train], y[train])
            held_out[np.ix_(held, np.searchsorted(classes, model.classes_))] = \
                model.predict_proba(x[held])
        self.model = self._model().fit(x, y)
        return held_out

    def probabilities(self, texts: Sequence[tuple[str, str]]) -> np.ndarray:
        if self.model is None:
            raise RuntimeError("DifferenceWords gives probabilities only after fit()")
        return np.asarray(self.model.predict_proba(self._bag(texts)), dtype=float)
