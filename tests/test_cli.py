"""`python -m memeval …` as a user runs it: subcommand stripped before Hydra, clear exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def memeval(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMEVAL_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memeval", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_run_writes_the_chosen_run_directory(tmp_path: Path) -> None:
    out = tmp_path / "my-run"
    done = memeval("run", "+experiment=three_pass", "embedder=hashing", "dataset.limit=50",
                   "plots=false", f"hydra.run.dir={out}", cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert "subst. recall" in done.stdout and f"run directory: {out}" in done.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert [p["pass"] for p in metrics["passes"]] == [1, 2, 3]
    assert (out / "decisions.parquet").is_file() and (out / ".hydra" / "config.yaml").is_file()


def test_configuration_error_exits_2_with_the_fix(tmp_path: Path) -> None:
    done = memeval("run", "+experiment=three_pass", "embedder.name=minilmm",
                   f"hydra.run.dir={tmp_path / 'r'}", cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 2
    assert "unknown embedder 'minilmm'" in done.stderr


def test_no_experiment_exits_2_naming_the_experiments(tmp_path: Path) -> None:
    done = memeval("run", f"hydra.run.dir={tmp_path / 'r'}", cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 2
    assert "+experiment=NAME" in done.stderr and "three_pass_holdout" in done.stderr


@pytest.mark.parametrize(("args", "code"), [((), 2), (("--help",), 0), (("frobnicate",), 2)])
def test_usage(args: tuple[str, ...], code: int, tmp_path: Path) -> None:
    done = memeval(*args, cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == code
    assert "usage: python -m memeval" in done.stdout + done.stderr
