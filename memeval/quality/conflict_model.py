"""Conflict detectors an experiment can name: `rules` (the reference word rules, unchanged),
`learned` (a classifier over pair features, trained on labelled pairs: gradient-boosted trees by
default, which weigh features together, e.g. "values differ" only counts when the scopes agree;
or a multinomial logistic regression) and `pair` (a cross-encoder fine-tuned on the labelled
pairs, reading both memories together: quality/pair_model.py).

Both take pairs of `Memory` and give one label per pair (none | contradiction | temporal |
semantic); `fit` is a no-op for the rules.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memeval.quality.conflict_features import (
    ConflictSide,
    edit_features,
    newer_side,
    pair_features,
)
from memeval.quality.conflict_values import ConflictWords, ValueReader
from memeval.quality.conflicts import ConflictDetector, ConflictRules
from memeval.quality.difference_words import DifferenceWords
from memeval.quality.pair_model import PairConflictDetector, PairModelConfig
from memeval.registry import Registry, bounded
from memeval.utils.fit_cache import FitCache
from memeval.utils.progress import Progress, quiet, step

Pair = tuple[ConflictSide, ConflictSide]


class PairDetector(Protocol):
    """`progress` wraps the loop over pairs, the long part of fitting and predicting; `newer`,
    per training pair, the side a temporal pair's label says supersedes (a or b, or None)."""

    def fit(self, pairs: Sequence[Pair], labels: Sequence[str],
            cosines: Sequence[float] | None = None, progress: Progress = quiet,
            newer: Sequence[str | None] | None = None) -> None: ...

    def predict(self, pairs: Sequence[Pair], cosines: Sequence[float] | None = None,
                progress: Progress = quiet) -> list[str]: ...


@runtime_checkable
class Superseding(Protocol):
    """A detector that also says which memory of a pair supersedes the other."""

    def newer(self, pairs: Sequence[Pair]) -> list[str]: ...


CONFLICT_DETECTORS: Registry[PairDetector] = Registry("conflict detector")


@dataclass
class LearnedConflictConfig:
    words: ConflictWords = field(default_factory=ConflictWords)
    classifier: str = "boosted_trees"  # or logistic
    balanced: bool = True  # weigh classes by inverse frequency
    max_iter: int = bounded(200, 1)  # boosting rounds, or the logistic solver's iterations
    seed: int = 0
    # boosted_trees: scikit-learn's HistGradientBoostingClassifier settings.
    max_depth: int = bounded(3, 1)
    learning_rate: float = bounded(0.05, 1e-6, 1)
    min_samples_leaf: int = bounded(5, 1)
    # logistic: scikit-learn's C, on standardised features.
    inverse_regularisation: float = bounded(0.1, 1e-6)
    # A pair is `none` when the model gives none at least this probability, else its most
    # probable conflict type; null: the most probable label. Below 0.5 it trades recall for
    # precision (the classes are weighted equally in training).
    none_probability: float | None = bounded(None, 0, 1)
    # Stack a logistic model over the words only one memory says (quality/difference_words.py):
    # its scikit-learn C, and the folds its probabilities on the training pairs come from.
    difference_words: bool = True
    difference_regularisation: float = bounded(3.0, 1e-6)
    difference_folds: int = bounded(5, 2)
    # Add how one memory's words turn into the other's (conflict_features.edit_features): a value
    # swapped inside an unchanged entry, as real teams rewrite their memory files.
    edit_features: bool = False

    def validate(self) -> None:
        self.words.validate()
        if self.classifier not in CLASSIFIERS:
            raise ValueError(f"classifier must be one of {sorted(CLASSIFIERS)}, "
                             f"got {self.classifier!r}")


def _boosted_trees(cfg: LearnedConflictConfig) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier  # loaded on the first fit

    return HistGradientBoostingClassifier(
        max_depth=cfg.max_depth, learning_rate=cfg.learning_rate, max_iter=cfg.max_iter,
        min_samples_leaf=cfg.min_samples_leaf,
        class_weight="balanced" if cfg.balanced else None, random_state=cfg.seed)


def _logistic(cfg: LearnedConflictConfig) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(
        C=cfg.inverse_regularisation, class_weight="balanced" if cfg.balanced else None,
        max_iter=cfg.max_iter, random_state=cfg.seed))


CLASSIFIERS: dict[str, Callable[[LearnedConflictConfig], Any]] = {
    "boosted_trees": _boosted_trees, "logistic": _logistic}


class RulesDetector:
    """The reference word rules behind the detector interface."""

    def __init__(self, rules: ConflictRules) -> None:
        self.detector = ConflictDetector(rules)

    def fit(self, pairs: Sequence[Pair], labels: Sequence[str],
            cosines: Sequence[float] | None = None, progress: Progress = quiet,
            newer: Sequence[str | None] | None = None) -> None:
        """Nothing to learn."""

    def predict(self, pairs: Sequence[Pair], cosines: Sequence[float] | None = None,
                progress: Progress = quiet) -> list[str]:
        found = [self.detector.detect(a.content, b.content,
                                      a.path is not None and a.path == b.path)
                 for a, b in progress(pairs, len(pairs), "conflict rules", "pair")]
        return [c.kind.value if c else "none" for c in found]


class LearnedConflictDetector:
    """`fits`: where fitted models are kept by settings and training pairs (utils/fit_cache.py),
    so the same folds and the same development pairs are fitted once, whichever run asks."""

    def __init__(self, cfg: LearnedConflictConfig, fits: FitCache | None = None) -> None:
        self.cfg = cfg
        self.fits = fits
        self.read = _reader(cfg.words)
        self.model: Any = None
        self.words = self._difference_words()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled for the fit cache without the memoised reader, which is rebuilt."""
        return {key: value for key, value in self.__dict__.items() if key != "read"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.read = _reader(self.cfg.words)

    def _difference_words(self) -> DifferenceWords | None:
        cfg = self.cfg
        return DifferenceWords(cfg.difference_regularisation, cfg.difference_folds,
                               cfg.seed) if cfg.difference_words else None

    def features(self, pairs: Sequence[Pair], cosines: Sequence[float] | None = None,
                 words: np.ndarray | None = None, progress: Progress = quiet) -> np.ndarray:
        """One row per pair: `pair_features`, then (when stacked) the difference-word model's
        class probabilities, `words` if given, else from the fitted model. Reading the values
        both memories state is what takes the time: `progress` shows it."""
        rows = np.asarray([pair_features(self.read(a.content), self.read(b.content), a, b,
                                         cosines[i] if cosines is not None else 0.0)
                           + (edit_features(a.content, b.content) if self.cfg.edit_features
                              else [])
                           for i, (a, b) in enumerate(progress(pairs, len(pairs),
                                                               "conflict pairs", "pair"))],
                          dtype=float)
        if self.words is None:
            return rows
        if words is None:
            words = self.words.probabilities(_texts(pairs))
        return np.hstack([rows.reshape(len(pairs), -1), words])

    def fit(self, pairs: Sequence[Pair], labels: Sequence[str],
            cosines: Sequence[float] | None = None, progress: Progress = quiet,
            newer: Sequence[str | None] | None = None) -> None:
        """`newer` is not read: the newer side comes from the memories' cues and dates."""
        if self.fits is None:
            self.model, self.words = self._fitted(pairs, labels, cosines, progress)
            return
        key = (repr(self.cfg), training_digest(pairs, labels, cosines))
        self.model, self.words = self.fits.fit(
            "conflict_detector", key, lambda: self._fitted(pairs, labels, cosines, progress))

    def _fitted(self, pairs: Sequence[Pair], labels: Sequence[str],
                cosines: Sequence[float] | None,
                progress: Progress) -> tuple[Any, DifferenceWords | None]:
        """The classifier and its difference-word model, fitted anew (shared ones stay as
        they are: a cached fit may be in use by another detector)."""
        self.words = self._difference_words()
        held_out = self.words.fit(_texts(pairs), labels, progress) if self.words is not None \
            else None
        model = CLASSIFIERS[self.cfg.classifier](self.cfg)
        x = self.features(pairs, cosines, held_out, progress)
        step(progress, "conflict classifier", lambda: model.fit(x, np.asarray(labels)))
        return model, self.words

    def predict(self, pairs: Sequence[Pair], cosines: Sequence[float] | None = None,
                progress: Progress = quiet) -> list[str]:
        if self.model is None:
            raise RuntimeError("the learned conflict detector predicts only after fit()")
        x = self.features(pairs, cosines, progress=progress)
        if self.cfg.none_probability is None:
            return [str(label) for label in self.model.predict(x)]
        classes = [str(c) for c in self.model.classes_]
        probabilities = self.model.predict_proba(x)
        none = classes.index("none")
        conflicts = probabilities.copy()
        conflicts[:, none] = -1.0
        return ["none" if row[none] >= self.cfg.none_probability else classes[int(best)]
                for row, best in zip(probabilities, conflicts.argmax(axis=1), strict=True)]

    def newer(self, pairs: Sequence[Pair]) -> list[str]:
        """Per pair, the side ("a" or "b") that supersedes the other."""
        return [newer_side(self.read(a.content), self.read(b.content), a, b)
                for a, b in pairs]


def _texts(pairs: Sequence[Pair]) -> list[tuple[str, str]]:
    return [(a.content, b.content) for a, b in pairs]


def training_digest(pairs: Sequence[Pair], labels: Sequence[str],
                    cosines: Sequence[float] | None) -> str:
    """What a fit reads of its training pairs, as one digest: both memories whole, the labels
    and the cosines, in order."""
    rows = [(repr(a), repr(b), label) for (a, b), label in zip(pairs, labels, strict=True)]
    return hashlib.sha256(repr((rows, None if cosines is None else list(cosines)))
                          .encode()).hexdigest()


_READERS: dict[str, Callable[[str], Any]] = {}


def _reader(words: ConflictWords) -> Callable[[str], Any]:
    """One memoised value reader per word list: the same texts recur across folds, detectors
    and runs in a process."""
    key = repr(words)
    if key not in _READERS:
        _READERS[key] = functools.lru_cache(maxsize=65536)(ValueReader(words).read)
    return _READERS[key]


@CONFLICT_DETECTORS.register("rules", ConflictRules)
def build_rules(cfg: ConflictRules, **_: object) -> PairDetector:
    return RulesDetector(cfg)


@CONFLICT_DETECTORS.register("learned", LearnedConflictConfig)
def build_learned(cfg: LearnedConflictConfig, fits: FitCache | None = None) -> PairDetector:
    return LearnedConflictDetector(cfg, fits)


@CONFLICT_DETECTORS.register("pair", PairModelConfig)
def build_pair(cfg: PairModelConfig, fits: FitCache | None = None) -> PairDetector:
    return PairConflictDetector(cfg, fits)
