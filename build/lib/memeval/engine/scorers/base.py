"""Scorer contract, the prototype sets it learns from, and the scorer registry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from memeval.registry import Registry


@dataclass
class Prototypes:
    """Embedded prototype sets: static ones from config, learned ones from the judge's verdicts
    (with their texts, for scorers that read more than the embedding)."""

    static_quality: np.ndarray
    static_noise: np.ndarray
    learned_noise: np.ndarray
    learned_quality: np.ndarray
    learned_noise_texts: list[str] = field(default_factory=list)
    learned_quality_texts: list[str] = field(default_factory=list)


class ContentScorer(Protocol):
    name: str

    @property
    def static_quality_texts(self) -> list[str]: ...

    @property
    def static_noise_texts(self) -> list[str]: ...

    def fit(self, protos: Prototypes) -> bool:
        """Adopt the prototypes; False when there is too little to score with (gate skipped)."""
        ...

    def forget(self) -> None:
        """Drop what only lived in memory (e.g. a warm start): a restarted daemon starts from its
        stores alone, so a resumed run and an uninterrupted one fit the same models."""
        ...

    def score(self, vectors: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """Higher = more like quality; `texts` are the embedded texts, row for row."""
        ...

    def confidence(self, scores: np.ndarray) -> np.ndarray:
        """Scores on this scorer's scale as a confidence in [0, 1] that the text is worth keeping:
        what a stored memory's MQS confidence is read from."""
        ...

    def calibration_scores(self) -> np.ndarray:
        """Scores of the learned quality prototypes (judge acceptances), each computed without
        that text's own influence, so a threshold set from them estimates recall honestly."""
        ...


IDENTICAL = 1.0 - 1e-4


def top_k_mean(sims: np.ndarray, k: int) -> np.ndarray:
    """Row-wise mean of the k largest values (all of them when fewer than k)."""
    if sims.shape[1] == 0:
        return np.zeros(sims.shape[0], dtype=np.float32)
    k = max(1, min(k, sims.shape[1]))
    top = np.partition(sims, sims.shape[1] - k, axis=1)[:, -k:]
    return top.mean(axis=1)


SCORERS: Registry[ContentScorer] = Registry("scorer")
