"""Fitted models kept by what they were fitted from, so a run, a sweep, the gate and the tests fit
each model once.

A fit is deterministic in three things: its settings, the data it reads and the code that fits
it. The key is a digest of all three: the caller's settings and data fingerprints (`key`, any
value with a stable `repr`: dataclass settings, fingerprints, seeds) and `code_digest()`, every
source file of the memeval package, so an edit anywhere in the code refits rather than reusing a
model the old code made. Fits are kept in this process (a test session, a sweep's jobs in one
worker) and as pickles under `CACHE_DIR/fits/KIND/`, written atomically. A damaged, truncated or
unreadable entry is a miss: it is refitted and rewritten, never a crash. The directory is the
user's own, as the embedding cache is; entries are not shared between machines.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from memeval.utils.atomic import write_atomic

T = TypeVar("T")
log = logging.getLogger(__name__)

FITS_DIR = "fits"
PACKAGE = Path(__file__).resolve().parents[1]  # memeval/
FORMAT = 1  # the layout of an entry: (FORMAT, kind, digest, model)
_MEMORY: dict[str, Any] = {}  # digest -> model, for every cache in this process
MEMORY_ENTRIES = 256  # the oldest goes first past this


def source_digest(root: Path) -> str:
    """sha256 over the relative path and bytes of every .py file under `root`."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@cache
def code_digest() -> str:
    """The memeval package's source as this process loaded it (read once)."""
    return source_digest(PACKAGE)


class FitCache:
    """`fit(kind, key, make)`: the model `make()` returns, fitted once per key."""

    def __init__(self, directory: Path | None, code: str | None = None) -> None:
        self.directory = directory
        self.code = code if code is not None else code_digest()
        self.hits = self.misses = self.damaged = 0
        self._announced: set[str] = set()

    def digest(self, kind: str, key: Any) -> str:
        return hashlib.sha256(repr((FORMAT, kind, key, self.code)).encode()).hexdigest()

    def fit(self, kind: str, key: Any, make: Callable[[], T]) -> T:
        digest = self.digest(kind, key)
        if digest in _MEMORY:
            self.hits += 1
            return _MEMORY[digest]
        path = self.directory / kind / f"{digest[:32]}.pkl" if self.directory else None
        found = self._read(path, kind, digest) if path else None
        if found is not None:
            self.hits += 1
            return self._remember(digest, found)
        self.misses += 1
        if kind not in self._announced:  # once per kind: a cross-validation misses per fold
            self._announced.add(kind)
            log.info("fitting %s: not fitted on these settings, data and code yet; kept in "
                     "%s for later runs", kind, path.parent if path else "this process")
        model = make()
        if path is not None:
            write_atomic(path, pickle.dumps((FORMAT, kind, digest, model),
                                            protocol=pickle.HIGHEST_PROTOCOL))
        return self._remember(digest, model)

    def _read(self, path: Path, kind: str, digest: str) -> Any:
        """The model kept at `path`, or None: absent, damaged or another key's."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            log.warning("fitted model %s unreadable (%s): fitting it again", path, err)
            self.damaged += 1
            return None
        try:
            fmt, stored_kind, stored_digest, model = pickle.loads(data)
        except Exception as err:  # any unpickling failure: truncated, garbled, old classes
            log.warning("fitted model %s damaged (%s): fitting it again", path,
                        type(err).__name__)
            self.damaged += 1
            return None
        if (fmt, stored_kind, stored_digest) != (FORMAT, kind, digest):
            self.damaged += 1
            return None
        return model

    @staticmethod
    def _remember(digest: str, model: T) -> T:
        if len(_MEMORY) >= MEMORY_ENTRIES:
            del _MEMORY[next(iter(_MEMORY))]
        _MEMORY[digest] = model
        return model


def forget_in_memory() -> None:
    """Drop the models this process holds (the disk entries stay): a test of the disk level."""
    _MEMORY.clear()
