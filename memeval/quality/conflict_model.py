"""Conflict detectors an experiment can name: `rules` (the reference word rules, unchanged) and
`learned` (a multinomial logistic regression over pair features, trained on labelled pairs).

Both take pairs of `Memory` and give one label per pair (none | contradiction | temporal |
semantic); `fit` is a no-op for the rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from memeval.quality.conflict_features import Memory, newer_side, pair_features
from memeval.quality.conflict_values import ConflictWords, ValueReader
from memeval.quality.conflicts import ConflictDetector, ConflictRules
from memeval.registry import Registry, bounded

Pair = tuple[Memory, Memory]


class PairDetector(Protocol):
    def fit(self, pairs: Sequence[Pair], labels: Sequence[str],
            cosines: Sequence[float] | None = None) -> None: ...

    def predict(self, pairs: Sequence[Pair],
                cosines: Sequence[float] | None = None) -> list[str]: ...


CONFLICT_DETECTORS: Registry[PairDetector] = Registry("conflict detector")


@dataclass
class LearnedConflictConfig:
    words: ConflictWords = field(default_factory=ConflictWords)
    inverse_regularisation: float = bounded(1.0, 1e-6)  # scikit-learn's C
    balanced: bool = True  # weigh classes by inverse frequency
    max_iter: int = bounded(5000, 1)
    seed: int = 0

    def validate(self) -> None:
        self.words.validate()


class RulesDetector:
    """The reference word rules behind the detector interface."""

    def __init__(self, rules: ConflictRules) -> None:
        self.detector = ConflictDetector(rules)

    def fit(self, pairs: Sequence[Pair], labels: Sequence[str],
            cosines: Sequence[float] | None = None) -> None:
        """Nothing to learn."""

    def predict(self, pairs: Sequence[Pair],
                cosines: Sequence[float] | None = None) -> list[str]:
        found = [self.detector.detect(a.content, b.content,
                                      a.path is not None and a.path == b.path) for a, b in pairs]
        return [c.kind.value if c else "none" for c in found]


class LearnedConflictDetector:
    def __init__(self, cfg: LearnedConflictConfig) -> None:
        self.cfg = cfg
        self.reader = ValueReader(cfg.words)
        self.model: Pipeline | None = None

    def features(self, pairs: Sequence[Pair],
                 cosines: Sequence[float] | None = None) -> np.ndarray:
        rows = [pair_features(self.reader.read(a.content), self.reader.read(b.content), a, b,
                              cosines[i] if cosines is not None else 0.0)
                for i, (a, b) in enumerate(pairs)]
        return np.asarray(rows, dtype=float)

    def fit(self, pairs: Sequence[Pair], labels: Sequence[str],
            cosines: Sequence[float] | None = None) -> None:
        classifier = LogisticRegression(C=self.cfg.inverse_regularisation,
                                        class_weight="balanced" if self.cfg.balanced else None,
                                        max_iter=self.cfg.max_iter,
                                        random_state=self.cfg.seed)
        self.model = make_pipeline(StandardScaler(), classifier)
        self.model.fit(self.features(pairs, cosines), np.asarray(labels))

    def predict(self, pairs: Sequence[Pair],
                cosines: Sequence[float] | None = None) -> list[str]:
        if self.model is None:
            raise RuntimeError("the learned conflict detector predicts only after fit()")
        return [str(label) for label in self.model.predict(self.features(pairs, cosines))]

    def newer(self, pairs: Sequence[Pair]) -> list[str]:
        """Per pair, the side ("a" or "b") that supersedes the other."""
        return [newer_side(self.reader.read(a.content), self.reader.read(b.content), a, b)
                for a, b in pairs]


@CONFLICT_DETECTORS.register("rules", ConflictRules)
def build_rules(cfg: ConflictRules) -> PairDetector:
    return RulesDetector(cfg)


@CONFLICT_DETECTORS.register("learned", LearnedConflictConfig)
def build_learned(cfg: LearnedConflictConfig) -> PairDetector:
    return LearnedConflictDetector(cfg)
