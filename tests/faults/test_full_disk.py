"""A run whose disk fills up, on a real small filesystem (a 2 MiB tmpfs): it ends in one line
and exit 2, never `Errno 28` in a traceback, with its finished passes checkpointed; once space is
freed, `resume=true` finishes it with the figures of a run that never ran out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.common import without_clock
from tests.test_cli import unwrapped

pytestmark = [pytest.mark.faults, pytest.mark.slow]

RUN = ["+experiment=three_pass", "dataset.limit=200", "embedder=hashing", "plots=false",
       "reporting.phoenix.enabled=false", "progress=false"]
ROOM_KIB = 200  # left free: Hydra's own files fit, the run's stores and checkpoints do not


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a 2 MiB tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def memeval(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memeval", "run", *args], env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_a_run_on_a_full_disk_fails_in_one_line_and_resumes_once_there_is_room(
        small_disk: Path, tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    assert memeval(*RUN, f"hydra.run.dir={whole}").returncode == 0
    filler = small_disk / "filler"
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    filler.write_bytes(b"\0" * (free - ROOM_KIB * 1024))
    run_dir = small_disk / "run"
    failed = memeval(*RUN, f"hydra.run.dir={run_dir}")
    assert failed.returncode == 2 and "Traceback" not in failed.stderr, failed.stderr
    said = unwrapped(failed.stderr).strip().splitlines()
    assert said[-1].startswith(f"memeval: no space left on the disk holding {run_dir}")
    assert f"add resume=true hydra.run.dir={run_dir}" in said[-2]
    filler.unlink()
    assert memeval(*RUN, f"hydra.run.dir={run_dir}", "resume=true").returncode == 0
    resumed, expected = (json.loads((d / "metrics.json").read_text()) for d in (run_dir, whole))
    assert without_clock(resumed["passes"]) == without_clock(expected["passes"])


def test_a_run_on_a_disk_with_no_room_at_all_is_refused_before_hydra_writes(
        small_disk: Path) -> None:
    """Hydra writes its own files first, where a full disk would end in its traceback."""
    filler = small_disk / "filler"
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    filler.write_bytes(b"\0" * free)
    run_dir = small_disk / "run"
    refused = memeval(*RUN, f"hydra.run.dir={run_dir}")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert unwrapped(refused.stderr).strip() == (
        f"memeval: no space left on the disk holding {run_dir} (64.0 KiB needed, 0.0 KiB free): "
        f"free some space, or move the run (hydra.run.dir=) or the cache (cache_dir=) to a disk "
        f"with room, and run again")
