"""Content-addressed embedding cache: passes 2–3 and re-runs never re-embed the same text.

Only unit vectors are stored, and a stored vector is used only if it still is one, of the right
width and finite (see `unit_rows`): SQLite keeps no checksums, so bytes scribbled inside a value
that still parses come back without error, as NaN or huge values that would end the run. Such a
value is a miss: it is recomputed and overwritten, counted (`invalid`) and warned about once.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import islice
from pathlib import Path

import numpy as np

from memeval.backends.embedders.base import Embedder, unit_rows
from memeval.utils.kvcache import SqliteKV, content_key
from memeval.utils.stopwatch import Stopwatch

CHUNK = 64  # texts per call to the wrapped embedder
Chunk = tuple[list[str], list[str]]  # (cache keys, texts) embedded as one batch
CACHE_FILE = "embeddings.sqlite"  # under cache_dir
CACHE_TABLE = "embeddings"
log = logging.getLogger(__name__)


def chunked(keyed: dict[str, str], size: int) -> list[Chunk]:
    """Texts by key, shortest first (ties by key), in chunks of `size`: each chunk pads to
    similar lengths. The order in which the cache embeds its misses, and a warm-up its texts."""
    ordered = sorted(keyed.items(), key=lambda item: (len(item[1]), item[0]))
    return [([k for k, _ in ordered[i : i + size]], [t for _, t in ordered[i : i + size]])
            for i in range(0, len(ordered), size)]


class CachedEmbedder:
    """Wraps an embedder; keys are sha256(embedder identity, text), values raw float32 bytes."""

    def __init__(self, inner: Embedder, path: str | Path) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.store = SqliteKV(path, CACHE_TABLE)
        self.hits = 0
        self.misses = 0
        self.invalid = 0  # stored values that were not usable vectors (counted in misses too)
        self.spent = Stopwatch()  # all time inside embed(), cache lookups included

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self.spent.running():
            return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [content_key(self.identity, text) for text in texts]
        found = self._usable(self.store.get_many(sorted(set(keys))))
        # cached chunk by chunk, so what was embedded before a failure is not embedded again
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        for chunk_keys, chunk_texts in chunked(missing, CHUNK):
            vectors = np.asarray(self.inner.embed(chunk_texts), dtype=np.float32)
            fresh = {key: vectors[i].tobytes() for i, key in enumerate(chunk_keys)}
            # a zero row (a text with nothing to embed) is returned but not stored: what is
            # stored must read back as a unit vector
            self.store.put_many((key, fresh[key]) for key, unit
                                in zip(chunk_keys, unit_rows(vectors), strict=True) if unit)
            found.update(fresh)
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys])

    def _usable(self, stored: dict[str, bytes]) -> dict[str, bytes]:
        """The stored values that are vectors the embedder could have returned."""
        usable_rows = usable_vectors(list(stored.values()), self.inner.dim)
        usable = {key: value for (key, value), ok
                  in zip(stored.items(), usable_rows, strict=True) if ok}
        bad = len(stored) - len(usable)
        if bad:
            if not self.invalid:
                log.warning(
                    "embedding cache %s returned %d stored vector(s) of the wrong size, not "
                    "finite or not of unit length (bytes damaged inside the file): they are "
                    "recomputed and overwritten; the run's count is in metrics.json "
                    "(embedder.cache_invalid)", self.store.path, bad)
            self.invalid += bad
        return usable


WIDTH_SAMPLE = 1000  # rows of a cache read to learn the widths of the vectors it holds


def vectors_for(store: SqliteKV) -> Callable[[list[bytes]], list[bool]]:
    """How vectors imported into `store` are checked: finite unit float32 vectors as wide as
    those it holds already (each embedder's width, when it holds several), not as wide as most
    of a shard's own vectors are, which a shard of wrong widths decides for itself. An empty
    cache has no width yet: the shard's commonest is taken."""
    held = {len(value) for _, value in islice(store.items(page=WIDTH_SAMPLE), WIDTH_SAMPLE)}
    if not held:
        return usable_vectors

    def check(values: list[bytes]) -> list[bool]:
        usable = [False] * len(values)
        for width in held:
            at = [i for i, value in enumerate(values) if len(value) == width]
            for i, ok in zip(at, usable_vectors([values[i] for i in at], width // 4),
                             strict=True):
                usable[i] = ok
        return usable

    return check


def usable_vectors(values: list[bytes], dim: int = 0) -> list[bool]:
    """Per value: a finite unit float32 vector `dim` wide, or (`dim` 0: an HTTP embedder before
    its first reply, or shards from elsewhere) as wide as most of `values` are. Stored and shared
    values carry no checksum, so this is what tells damage from a vector the embedder returned.
    """
    if not values:
        return []
    width = 4 * dim or Counter(map(len, values)).most_common(1)[0][0]
    sized = [i for i, value in enumerate(values) if len(value) == width]
    usable = [False] * len(values)
    if sized and width % 4 == 0:  # whole float32s only: stray lengths are damage, too
        rows = np.frombuffer(b"".join(values[i] for i in sized), dtype=np.float32)
        for i, unit in zip(sized, unit_rows(rows.reshape(len(sized), -1)), strict=True):
            usable[i] = bool(unit)
    return usable
