"""Content-addressed embedding cache: passes 2–3 and re-runs never re-embed the same text."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memeval.engine.embedders.base import Embedder
from memeval.engine.kvcache import SqliteKV, content_key

CHUNK = 64  # texts per call to the wrapped embedder


class CachedEmbedder:
    """Wraps an embedder; keys are sha256(embedder identity, text), values raw float32 bytes."""

    def __init__(self, inner: Embedder, path: str | Path) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.store = SqliteKV(path, "embeddings")
        self.hits = 0
        self.misses = 0
        self.seconds = 0.0  # all time inside embed(), cache lookups included

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        try:
            return self._embed(texts)
        finally:
            self.seconds += time.perf_counter() - start

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [content_key(self.identity, text) for text in texts]
        found = self.store.get_many(sorted(set(keys)))
        # shortest first, so each chunk pads to similar lengths; cached chunk by chunk, so what
        # was embedded before a failure is not embedded again
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in found}.items(),
                         key=lambda item: (len(item[1]), item[0]))
        for start in range(0, len(missing), CHUNK):
            chunk = missing[start : start + CHUNK]
            vectors = self.inner.embed([text for _, text in chunk])
            fresh = {key: vectors[i].astype(np.float32).tobytes()
                     for i, (key, _) in enumerate(chunk)}
            self.store.put_many(fresh.items())
            found.update(fresh)
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys])
