"""The memoryd content scorer, faithfully: avgQualitySim / (avgQualitySim + topKNoiseSim).

Quality prototypes are static; learned rejection texts REPLACE the static noise prototypes once
the rejection store is non-empty. With `require_learned` the scorer is unavailable (gate skipped)
until rejection data exists, as in the daemon.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memeval.engine.scorers.base import SCORERS, Prototypes, top_k_mean
from memeval.registry import bounded


@dataclass
class MemorydConfig:
    k: int = bounded(3, 1)
    require_learned: bool = True
    quality_prototypes: list[str] = field(default_factory=list)
    noise_prototypes: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if self.k < 1:
            raise ValueError("k must be at least 1")
        if not self.quality_prototypes or not self.noise_prototypes:
            raise ValueError("quality_prototypes and noise_prototypes must be non-empty")


class MemorydScorer:
    name = "memoryd"

    def __init__(self, cfg: MemorydConfig) -> None:
        self.cfg = cfg
        self.static_quality_texts = list(cfg.quality_prototypes)
        self.static_noise_texts = list(cfg.noise_prototypes)
        self._quality = np.zeros((0, 0), dtype=np.float32)
        self._noise = np.zeros((0, 0), dtype=np.float32)
        self._accepted = np.zeros((0, 0), dtype=np.float32)

    def fit(self, protos: Prototypes) -> bool:
        learned = len(protos.learned_noise) > 0
        self._quality = protos.static_quality
        self._noise = protos.learned_noise if learned else protos.static_noise
        self._accepted = protos.learned_quality
        return learned or not self.cfg.require_learned

    def forget(self) -> None:
        """Holds nothing but the prototypes `fit` replaces."""

    def score(self, vectors: np.ndarray, texts: Sequence[str] = ()) -> np.ndarray:
        avg_quality = (vectors @ self._quality.T).mean(axis=1)
        top_noise = top_k_mean(vectors @ self._noise.T, self.cfg.k)
        denominator = avg_quality + top_noise
        safe = np.where(denominator > 0, denominator, 1.0)
        score = np.where(denominator > 0, avg_quality / safe, 0.5)
        return np.clip(score, 0.0, 1.0).astype(np.float32)

    def confidence(self, scores: np.ndarray) -> np.ndarray:
        """The score is already a share in [0, 1]: quality similarity over quality plus noise."""
        return np.clip(np.asarray(scores, dtype=np.float32), 0.0, 1.0)

    def calibration_scores(self) -> np.ndarray:
        """Acceptances are not among memoryd's prototypes, so plain scores are already held out."""
        return self.score(self._accepted)


@SCORERS.register("memoryd", MemorydConfig)
def build_memoryd(cfg: MemorydConfig) -> MemorydScorer:
    return MemorydScorer(cfg)
