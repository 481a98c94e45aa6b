"""A full disk as one line: what memeval could not write, where, what it needed and what is free,
instead of an `OSError: [Errno 28]` or SQLite's "database or disk is full" traceback. Results
written before stay whole (every write is atomic), and a checkpointed run resumes once there is
room."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class DiskFull(RuntimeError):
    """No room left where memeval writes; the message names the path and the fix."""


def no_space(err: BaseException) -> bool:
    return isinstance(err, OSError) and err.errno in NO_SPACE


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def _free(where: Path) -> int:
    existing = next((p for p in (where, *where.parents) if p.exists()), Path("/"))
    return shutil.disk_usage(existing).free


def ensure_room(path: str | Path, needed: int) -> None:
    """DiskFull unless the disk that will hold `path` has `needed` bytes free: for writes that
    happen where memeval cannot catch a full disk (Hydra's own files, first of a run)."""
    if _free(Path(path).absolute()) < needed:
        raise disk_full(Path(path).absolute(), needed)


def disk_full(path: str | Path, needed: int | None = None) -> DiskFull:
    """The error for a write to `path` that found its disk full (`needed`: bytes it wanted)."""
    where = Path(path)
    free = _free(where)
    wanted = f"{_size(needed)} needed, " if needed is not None else ""
    return DiskFull(f"no space left on the disk holding {where} ({wanted}{_size(free)} free): "
                    f"free some space, or move the run (hydra.run.dir=) or the cache "
                    f"(cache_dir=) to a disk with room, and run again")
