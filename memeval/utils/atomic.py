"""Atomic file writes: a crash mid-write leaves the previous version, never half a file.

The temporary file is `.<name>.<random>.tmp` beside the target; a full disk is `DiskFull`, the
previous version intact. Any exception (a signal turned
into one included) removes it; only a process killed outright (SIGKILL, power loss) leaves one,
and `remove_stale_temps` clears those when the owner of the files starts again.
"""

from __future__ import annotations

import glob
import os
import secrets
from pathlib import Path

from memeval.utils.disk import disk_full, no_space


def write_atomic(path: str | Path, data: bytes) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Named before it exists, so the cleanup below knows it at whatever instant an exception
    # arrives (mkstemp returns the name only after creating the file).
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if no_space(err):
            raise disk_full(target, len(data)) from None
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    write_atomic(path, text.encode("utf-8"))


def remove_stale_temps(directory: str | Path, target: str | None = None) -> list[Path]:
    """Delete the temporary files killed writes left in `directory` (only those for the file
    named `target`, if given); call it only where no other process is writing. Returns them."""
    name = "*" if target is None else glob.escape(target)
    stale = sorted(Path(directory).glob(f".{name}.*.tmp"))
    for path in stale:
        path.unlink(missing_ok=True)
    return stale
