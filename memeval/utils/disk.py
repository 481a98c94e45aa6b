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


def disk_full(path: str | Path, needed: int | None = None) -> DiskFull:
    """The error for a write to `path` that found its disk full (`needed`: bytes it wanted)."""
    where = Path(path)
    existing = next((p for p in (where, *where.parents) if p.exists()), Path("/"))
    free = shutil.disk_usage(existing).free
    wanted = f"{_size(needed)} needed, " if needed is not None else ""
    return DiskFull(f"no space left on the disk holding {where} ({wanted}{_size(free)} free): "
                    f"free some space, or move the run (hydra.run.dir=) or the cache "
                    f"(cache_dir=) to a disk with room, and run again")
