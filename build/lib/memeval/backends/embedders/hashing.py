"""Deterministic hashing embedder: word and character-trigram features, for fast unit tests.

Not a semantic model: it exists so tests of the gate's logic run in milliseconds without torch.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from memeval.backends.embedders.base import EMBEDDERS, l2_normalise
from memeval.registry import bounded

_WORD = re.compile(r"[a-z0-9_]+")


@dataclass
class HashingConfig:
    dim: int = bounded(256, 8, 65536)

    def validate(self) -> None:
        if self.dim < 8:
            raise ValueError("dim must be at least 8")


@lru_cache(maxsize=2**18)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """Words and trigrams recur across texts: hashing each once halves the embedder's time."""
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, 1.0 if (value >> 63) & 1 else -1.0


class HashingEmbedder:
    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.identity = f"hashing-v1-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            features = words + [f"#{w[i:i + 3]}" for w in words for i in range(len(w) - 2)]
            for feature in features:
                index, sign = _bucket(feature, self.dim)
                out[row, index] += sign
        return l2_normalise(out)


@EMBEDDERS.register("hashing", HashingConfig)
def build_hashing(cfg: HashingConfig) -> HashingEmbedder:
    return HashingEmbedder(cfg.dim)
