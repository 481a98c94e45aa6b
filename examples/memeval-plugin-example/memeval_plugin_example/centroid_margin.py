"""`scorer=centroid_margin`: the reference gate's content score from two centroids.

score = cosine to the centroid of the judge's acceptances − cosine to the centroid of its
rejections; one comparison per side, so it stays cheap however many verdicts are learned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memeval.engine.scorers.base import SCORERS, Prototypes
from memeval.registry import bounded


def unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)


@dataclass
class CentroidMarginConfig:
    min_learned: int = bounded(10, 1)  # verdicts per side before the stage scores anything


class CentroidMarginScorer:
    name = "centroid_margin"

    def __init__(self, cfg: CentroidMarginConfig) -> None:
        self.cfg = cfg
        self.static_quality_texts: list[str] = []  # learns both sides from the judge
        self.static_noise_texts: list[str] = []
        self._quality = np.zeros((0, 0), dtype=np.float32)
        self._quality_sum = np.zeros(0, dtype=np.float32)
        self._noise = np.zeros(0, dtype=np.float32)

    def fit(self, protos: Prototypes) -> bool:
        self._quality = protos.learned_quality
        self._quality_sum = protos.learned_quality.sum(axis=0)
        self._noise = unit(protos.learned_noise.sum(axis=0))  # the centroid's direction
        return min(len(protos.learned_quality), len(protos.learned_noise)) >= self.cfg.min_learned

    def forget(self) -> None:
        """Holds nothing but what `fit` replaces."""

    def score(self, vectors: np.ndarray, texts: Sequence[str] = ()) -> np.ndarray:
        return ((vectors @ unit(self._quality_sum)) - (vectors @ self._noise)).astype(np.float32)

    def confidence(self, scores: np.ndarray) -> np.ndarray:
        """A difference of cosines in [-2, 2], mapped linearly so 0 is 0.5."""
        return np.clip((1.0 + np.asarray(scores, dtype=np.float32)) / 2.0, 0.0, 1.0)

    def calibration_scores(self) -> np.ndarray:
        """Leave-one-out: each acceptance against the centroid of the others."""
        others = unit(self._quality_sum[None, :] - self._quality)
        quality = np.einsum("ij,ij->i", self._quality, others)
        return (quality - self._quality @ self._noise).astype(np.float32)


@SCORERS.register("centroid_margin", CentroidMarginConfig)
def build_centroid_margin(cfg: CentroidMarginConfig) -> CentroidMarginScorer:
    return CentroidMarginScorer(cfg)
