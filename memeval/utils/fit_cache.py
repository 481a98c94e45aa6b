"""Fitted models kept by what they were fitted from, so a run, a sweep, the gate and the tests fit
each model once.

A fit is deterministic in three things: its settings, the data it reads and the code that fits
it. The key is a digest of all three: the caller's settings and data fingerprints (`key`, any
value with a stable `repr`: dataclass settings, fingerprints, seeds) and `code_digest()`, every
source file of the memeval package, so an edit anywhere in the code refits rather than reusing a
model the old code made. Fits are kept in this process (a test session, a sweep's jobs in one
worker) and on disk under `CACHE_DIR/fits/KIND/` (or `$MEMEVAL_FIT_CACHE_DIR/KIND/`: entries are
keyed by content, so runs on different cache directories, such as a test session's, can share
them), written atomically.

A fitted scikit-learn model is a pickle, and unpickling runs code, so an entry is signed: an
HMAC-SHA256 under this user's own key, kept outside the cache directory (`KEY_FILE`, mode 0600,
made on first use). Only bytes memeval wrote with that key are unpickled; a cache directory that
someone else could write to (a shared or restored CI cache) can at worst cost a refit. A damaged,
truncated, unsigned or foreign entry is a miss: it is refitted and rewritten, never a crash.
Entries are not part of the shards `memeval cache export` shares between machines.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import pickle
import secrets
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from memeval.utils.atomic import write_atomic
from memeval.utils.stopwatch import Stopwatch

T = TypeVar("T")
log = logging.getLogger(__name__)

FITS_DIR = "fits"
DIR_ENV = "MEMEVAL_FIT_CACHE_DIR"  # where fits are kept instead of CACHE_DIR/fits
PACKAGE = Path(__file__).resolve().parents[1]  # memeval/
FORMAT = 2  # an entry: MAGIC, the HMAC of the rest, pickle of (FORMAT, kind, digest, model)
MAGIC = b"memeval-fit\0"
KEY_BYTES = 32
_MEMORY: dict[str, Any] = {}  # digest -> model, for every cache in this process
MEMORY_ENTRIES = 256  # the oldest goes first past this


def fits_dir(cache_dir: Path) -> Path:
    """`$MEMEVAL_FIT_CACHE_DIR` when set, else the run's `CACHE_DIR/fits`."""
    chosen = os.environ.get(DIR_ENV, "").strip()
    return Path(chosen).expanduser() if chosen else cache_dir / FITS_DIR


def key_file() -> Path:
    """Where this user's signing key lives: beside their other settings, not in the cache."""
    config = os.environ.get("XDG_CONFIG_HOME") or "~/.config"
    return Path(config).expanduser() / "memeval" / "fit-cache.key"


@cache
def signing_key() -> bytes | None:
    """This user's key, made on first use; None when it can be neither read nor made (the
    fits are then kept in this process only)."""
    path = key_file()
    try:
        key = path.read_bytes()
        if len(key) == KEY_BYTES:
            return key
    except FileNotFoundError:
        pass
    except OSError as err:
        log.warning("fit cache key %s unreadable (%s): fits kept in this process only", path, err)
        return None
    mine = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        write_atomic(mine, secrets.token_bytes(KEY_BYTES))  # created 0600
        try:
            os.link(mine, path)  # never replaces a key another process made meanwhile
        except FileExistsError:
            pass
        finally:
            mine.unlink()
        key = path.read_bytes()
    except OSError as err:
        log.warning("cannot make the fit cache key %s (%s): fits kept in this process only",
                    path, err)
        return None
    return key if len(key) == KEY_BYTES else None


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


def _mac(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()


class FitCache:
    """`fit(kind, key, make)`: the model `make()` returns, fitted once per key."""

    def __init__(self, directory: Path | None, code: str | None = None) -> None:
        self.directory = directory
        self.code = code if code is not None else code_digest()
        self.hits = self.misses = self.damaged = 0
        self.spent = Stopwatch()  # fitting: a run's timing keeps it apart from its own work
        self._announced: set[str] = set()

    def digest(self, kind: str, key: Any) -> str:
        return hashlib.sha256(repr((FORMAT, kind, key, self.code)).encode()).hexdigest()

    def _entry(self, kind: str, digest: str) -> Path | None:
        """Where a fit is kept on disk; None when fits are kept in this process only (no
        directory, or no signing key)."""
        return self.directory / kind / f"{digest[:32]}.fit" \
            if self.directory and signing_key() else None

    def has(self, kind: str, key: Any) -> bool:
        """Whether `fit` would find the model without fitting (an entry on disk is trusted to
        read back; a damaged one is refitted then)."""
        digest = self.digest(kind, key)
        path = self._entry(kind, digest)
        return digest in _MEMORY or (path is not None and path.is_file())

    def fit(self, kind: str, key: Any, make: Callable[[], T]) -> T:
        digest = self.digest(kind, key)
        if digest in _MEMORY:
            self.hits += 1
            return _MEMORY[digest]
        signing = signing_key() if self.directory else None
        path = self._entry(kind, digest)
        found = self._read(path, signing, kind, digest) if path and signing else None
        if found is not None:
            self.hits += 1
            return self._remember(digest, found)
        self.misses += 1
        if kind not in self._announced:  # once per kind: a cross-validation misses per fold
            self._announced.add(kind)
            log.info("fitting %s (first use)", kind)  # short: a log line's prefix is 61 wide
        with self.spent.running():
            model = make()
        if path is not None and signing is not None:
            payload = pickle.dumps((FORMAT, kind, digest, model), protocol=pickle.HIGHEST_PROTOCOL)
            write_atomic(path, MAGIC + _mac(signing, payload) + payload)
        return self._remember(digest, model)

    def _read(self, path: Path, signing: bytes, kind: str, digest: str) -> Any:
        """The model kept at `path`, or None: absent, damaged, not signed with this user's key,
        or another key's."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            return self._refused(path, f"unreadable: {err}")
        mac, payload = data[len(MAGIC):len(MAGIC) + 32], data[len(MAGIC) + 32:]
        if not data.startswith(MAGIC) or not hmac.compare_digest(mac, _mac(signing, payload)):
            return self._refused(path, "damaged, or not written with this user's key")
        try:
            # signed with this user's key above: bytes memeval itself wrote for this user
            fmt, stored_kind, stored_digest, model = pickle.loads(payload)
        except Exception as err:  # an entry made by classes that have since changed
            return self._refused(path, f"unreadable: {type(err).__name__}")
        if (fmt, stored_kind, stored_digest) != (FORMAT, kind, digest):
            return self._refused(path, "another model's entry")
        return model

    def _refused(self, path: Path, why: str) -> None:
        log.warning("fitted model %s %s: fitting it again", path, why)
        self.damaged += 1
        return None

    @staticmethod
    def _remember(digest: str, model: T) -> T:
        if len(_MEMORY) >= MEMORY_ENTRIES:
            del _MEMORY[next(iter(_MEMORY))]
        _MEMORY[digest] = model
        return model


def forget_in_memory() -> None:
    """Drop the models this process holds (the disk entries stay): a test of the disk level."""
    _MEMORY.clear()
