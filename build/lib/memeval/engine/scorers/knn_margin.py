"""kNN-margin scorer: learns BOTH sides from the judge, not just noise.

score = mean top-k cosine to judge-accepted texts − mean top-k cosine to judge-rejected texts.
memoryd compares against static quality descriptions whose cosine scale differs from real agent
text; comparing like with like (real accepted vs real rejected texts) keeps the score centred
near 0 for any embedder, and the threshold is calibrated from the accepted side's own scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memeval.engine.scorers.base import IDENTICAL, SCORERS, Prototypes, top_k_mean
from memeval.registry import bounded


@dataclass
class KnnMarginConfig:
    k: int = bounded(5, 1)
    min_learned: int = bounded(10, 1)

    def validate(self) -> None:
        if self.k < 1 or self.min_learned < 1:
            raise ValueError("k and min_learned must be at least 1")


class KnnMarginScorer:
    name = "knn_margin"

    def __init__(self, cfg: KnnMarginConfig) -> None:
        self.cfg = cfg
        self.static_quality_texts: list[str] = []  # learns both sides; no static prototypes
        self.static_noise_texts: list[str] = []
        self._quality = np.zeros((0, 0), dtype=np.float32)
        self._noise = np.zeros((0, 0), dtype=np.float32)

    def fit(self, protos: Prototypes) -> bool:
        self._quality = protos.learned_quality
        self._noise = protos.learned_noise
        return min(len(self._quality), len(self._noise)) >= self.cfg.min_learned

    def forget(self) -> None:
        """Holds nothing but the prototypes `fit` replaces."""

    def _margin(self, quality_sims: np.ndarray, vectors: np.ndarray, k: int) -> np.ndarray:
        quality = top_k_mean(quality_sims, k)
        noise = top_k_mean(vectors @ self._noise.T, self.cfg.k)
        return (quality - noise).astype(np.float32)

    def score(self, vectors: np.ndarray, texts: Sequence[str] = ()) -> np.ndarray:
        return self._margin(vectors @ self._quality.T, vectors, self.cfg.k)

    def confidence(self, scores: np.ndarray) -> np.ndarray:
        """The margin is a difference of cosines in [-2, 2], mapped linearly so 0 (as close to
        both sides) is 0.5; real margins are small, so confidences stay near 0.5."""
        return np.clip((1.0 + np.asarray(scores, dtype=np.float32)) / 2.0, 0.0, 1.0)

    def calibration_scores(self) -> np.ndarray:
        """Leave-one-out: each accepted text ignores itself (and any identical copy)."""
        sims = self._quality @ self._quality.T
        identical = sims >= IDENTICAL
        sims = np.where(identical, -2.0, sims)  # -2: below any cosine
        k = max(1, min(self.cfg.k, sims.shape[1] - int(identical.sum(axis=1).max())))
        return self._margin(sims, self._quality, k)


@SCORERS.register("knn_margin", KnnMarginConfig)
def build_knn_margin(cfg: KnnMarginConfig) -> KnnMarginScorer:
    return KnnMarginScorer(cfg)
