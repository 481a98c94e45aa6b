"""Write pipeline: clean, drop residual noise, redact, embed, dedup, store (memoryd's Stage 5)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from memeval.backends.embedders.base import Embedder, EmbeddingError
from memeval.engine.gate.base import Candidate, StageResult
from memeval.engine.store.memory_store import SCALES, MemoryStore, StoredMemory, to_cosine
from memeval.registry import bounded

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)

NOT_EMBEDDED = "; not embedded: "  # in a stored result's detail


@dataclass
class WriteConfig:
    max_chars: int = bounded(50_000, 1)
    min_chars: int = bounded(40, 0)
    min_alnum_ratio: float = bounded(0.40, 0, 1)
    dedup_threshold: float = bounded(0.92, -1, 1)  # a cosine, or (1 + cosine) / 2
    dedup_scale: str = "cosine"

    def validate(self) -> None:
        if self.dedup_scale not in SCALES:
            raise ValueError(f"dedup_scale must be one of {SCALES}, got '{self.dedup_scale}'")
        if not 0.0 <= self.min_alnum_ratio <= 1.0:
            raise ValueError("min_alnum_ratio must be in [0, 1]")


def clean(text: str, max_chars: int) -> str:
    return _THINK.sub("", text).strip()[:max_chars]


_NOT_ALNUM = re.compile(r"[\W_]+")


def alnum_ratio(text: str) -> float:
    """Share of letters and digits (Unicode-aware), in one regex pass instead of a char loop."""
    return len(_NOT_ALNUM.sub("", text)) / len(text) if text else 0.0


class WritePipeline:
    def __init__(self, cfg: WriteConfig, embedder: Embedder, redact: Callable[[str], str],
                 store: MemoryStore, reuse_vectors: bool = True) -> None:
        """`reuse_vectors`: whether a candidate's vector lies in `embedder`'s space (false when
        the content stage embeds with its own encoder)."""
        self.cfg = cfg
        self.embedder = embedder
        self.reuse_vectors = reuse_vectors
        self.redact = redact
        self.store = store
        self.dedup_cosine = to_cosine(cfg.dedup_threshold, cfg.dedup_scale)

    def write(self, item: Candidate, memory_text: str | None, pass_no: int) -> StageResult:
        text = clean(memory_text if memory_text is not None else item.text, self.cfg.max_chars)
        ratio = alnum_ratio(text)
        if len(text) < self.cfg.min_chars or ratio < self.cfg.min_alnum_ratio:
            return StageResult("noise_check", passed=False, score=ratio,
                               threshold=self.cfg.min_alnum_ratio)
        # The candidate's own text is already redacted (and redaction is idempotent); the judge's
        # rewrite or a cleaned copy is redacted before it is stored.
        if text != item.text:
            text = self.redact(text)
        vector, note = self._vector(item, text)
        nearest, similarity = self.store.top1(vector)
        if similarity >= self.dedup_cosine:
            return StageResult("dedup", passed=False, score=similarity,
                               threshold=self.dedup_cosine,
                               detail=f"duplicate of {self.store.memories[nearest].id}")
        memory_id = f"m{pass_no}-{len(self.store)}"
        self.store.add(StoredMemory(memory_id, text, item.entry.id, pass_no), vector)
        return StageResult("stored", passed=True, score=similarity if nearest >= 0 else None,
                           threshold=self.dedup_cosine, detail=memory_id + note)

    def _vector(self, item: Candidate, text: str) -> tuple[np.ndarray, str]:
        """The candidate's own text was embedded at gate entry: reuse that vector. Hashing the
        text and looking it up in the cache again took about 45% of the write stage."""
        if self.reuse_vectors and text == item.embedded and item.vector is not None:
            return item.vector, ""
        try:
            return self.embedder.embed([text])[0], ""
        except EmbeddingError as err:  # keep the memory; it just cannot be deduplicated
            return np.zeros(self.store.dim, dtype=np.float32), f"{NOT_EMBEDDED}{err}"
