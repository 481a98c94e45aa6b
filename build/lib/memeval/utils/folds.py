"""Out-of-fold predictions, one loop for every model memeval scores on the data it learns from
(the trust score, MQS's fitted constants, the learned MAI, the learned conflict detector): each
item's value comes from a model fitted on the other folds only.

Folds are scikit-learn's StratifiedKFold, shuffled and seeded, so they are the ones every figure
was computed on before this helper existed. scikit-learn loads when folds are first made, not when
a module that uses them registers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

Split = tuple[np.ndarray, np.ndarray]  # (train indices, held-out indices)


def stratified_splits(labels: Sequence[Any] | np.ndarray, folds: int, seed: int) -> list[Split]:
    """StratifiedKFold(folds, shuffle=True, random_state=seed) over the labels."""
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(labels)
    return list(StratifiedKFold(folds, shuffle=True, random_state=seed)
                .split(np.zeros(len(y)), y))


def held_out_splits(n: int, held_out: Sequence[np.ndarray]) -> list[Split]:
    """Splits from each fold's held-out indices: the rest of the n items train."""
    return [(np.setdiff1d(np.arange(n), held), np.asarray(held)) for held in held_out]


def out_of_fold(splits: Iterable[Split], n: int,
                predict: Callable[[np.ndarray, np.ndarray], Sequence[Any] | np.ndarray]
                ) -> list[Any]:
    """Per item, what `predict(train, held)` (a model fitted on `train`, asked about `held`)
    gave it in the one split that held it out."""
    found: list[Any] = [None] * n
    for train, held in splits:
        for i, value in zip(held, predict(train, held), strict=True):
            found[int(i)] = value
    return found
