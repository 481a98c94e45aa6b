"""An unusable cache_dir is named, with the setting that moves it, before any work."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.registry import ConfigError
from memeval.runner import run_experiment
from tests.test_cli import unwrapped

pytestmark = pytest.mark.bad_input


def test_a_cache_dir_that_is_a_file_is_named_with_the_setting(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    blocker = tmp_path / "cache-file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError) as caught:
        run_experiment(fast_config("+experiment=three_pass", f"cache_dir={blocker}"),
                       tmp_path / "run")
    message = str(caught.value)
    assert message.startswith(f"cache_dir {blocker} is not a writable directory (")
    assert "cache_dir=" in message and "$MEMEVAL_CACHE_DIR" in message
    assert not (tmp_path / "run").exists()  # refused before any work


def test_a_read_only_cache_dir_is_named_with_the_setting(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """sysfs refuses new files even to root, so this holds however the tests are run."""
    cache = Path("/sys")
    with pytest.raises(ConfigError, match=f"cache_dir {cache} is not a writable directory "
                                          r"\(Permission denied\)"):
        run_experiment(fast_config("+experiment=three_pass", f"cache_dir={cache}"),
                       tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_an_unusable_memeval_cache_dir_exits_2_without_a_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "cache-file"
    blocker.write_text("not a folder")
    done = subprocess.run(
        [sys.executable, "-m", "memeval", "run", "+experiment=three_pass", "embedder=hashing",
         "dataset.limit=40", "plots=false", "progress=false", "reporting.phoenix.enabled=false",
         f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "MEMEVAL_CACHE_DIR": str(blocker / "sub"), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "unable to open database file" not in done.stderr
    assert f"cache_dir {blocker / 'sub'} is not a writable directory" in unwrapped(done.stderr)
