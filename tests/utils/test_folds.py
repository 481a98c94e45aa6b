"""The one out-of-fold loop: every item predicted once, by a model that never saw it."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import StratifiedKFold

from memeval.utils.folds import held_out_splits, out_of_fold, stratified_splits


def test_stratified_splits_are_scikit_learns_seeded_shuffled_folds() -> None:
    labels = np.array(["a", "b", "c"] * 7)
    ours = stratified_splits(labels, 4, seed=3)
    theirs = StratifiedKFold(4, shuffle=True, random_state=3).split(np.zeros((21, 2)), labels)
    for (train, held), (train2, held2) in zip(ours, theirs, strict=True):
        assert np.array_equal(train, train2) and np.array_equal(held, held2)


def test_each_item_comes_from_the_one_split_that_held_it_out() -> None:
    splits = held_out_splits(7, [np.array([0, 3]), np.array([1, 2, 6]), np.array([4, 5])])
    seen: list[set[int]] = []

    def predict(train: np.ndarray, held: np.ndarray) -> list[str]:
        assert not set(train) & set(held)
        seen.append(set(train.tolist()))
        return [f"{i} from {len(seen) - 1}" for i in held]

    found = out_of_fold(splits, 7, predict)
    assert found == ["0 from 0", "1 from 1", "2 from 1", "3 from 0", "4 from 2", "5 from 2",
                     "6 from 1"]
    assert seen[0] == {1, 2, 4, 5, 6}
