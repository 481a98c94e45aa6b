"""A Hydra sweep on a real local Ray cluster (hydra/launcher=ray_cluster) gives exactly the runs
the same sweep gives on joblib: same decisions, same metrics, same sweep table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from tests.ray_cluster import RayCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

POINTS = ["+experiment=three_pass", "embedder=hashing", "dataset.limit=60", "experiment.passes=2",
          "plots=false", "progress=false", "reporting.phoenix.enabled=false", "bootstrap=50",
          "threshold.target_recall=0.9,0.99", "seed=0,1"]
# What differs between two runs of the same job: its id, clocks, and how warm the cache was.
RUN_SPECIFIC = ("run_id", "started_at", "wall_seconds", "timing")
PASS_CLOCKS = "latency"
CACHE_USE = ("cache_hits", "cache_misses")


def _sweep(launcher: str, sweep_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memeval", "run", "-m",
                           f"hydra/launcher={launcher}", *POINTS, f"hydra.sweep.dir={sweep_dir}"],
                          cwd=sweep_dir.parent, env=env, capture_output=True, text=True,
                          timeout=900)


def _metrics(run: Path) -> dict[str, Any]:
    metrics = json.loads((run / "metrics.json").read_text())
    for key in RUN_SPECIFIC:
        metrics.pop(key)
    for key in CACHE_USE:
        metrics["embedder"].pop(key)
    for measured in metrics["passes"]:
        measured.pop(PASS_CLOCKS)
    return metrics


def _config(run: Path) -> dict[str, Any]:
    """The job's resolved config but for its cache, which each launcher was given apart."""
    config = yaml.safe_load((run / "config.yaml").read_text())
    config.pop("cache_dir")
    return dict(config)


def _decisions(run: Path) -> pd.DataFrame:
    frame = pd.read_parquet(run / "decisions.parquet")
    return frame.drop(columns=["started_at", *frame.filter(like="latency_").columns])


def test_a_ray_sweep_matches_the_joblib_sweep(ray_cluster: RayCluster, tmp_path: Path) -> None:
    ray_env = {**ray_cluster.env, "MEMEVAL_RAY_ADDRESS": ray_cluster.address,
               "MEMEVAL_RAY_CACHE_DIR": str(tmp_path / "ray-cache"), "MEMEVAL_RAY_CPUS": "1"}
    on_ray = _sweep("ray_cluster", tmp_path / "ray", ray_env)
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    assert f"Connecting to existing Ray cluster at address: {ray_cluster.address}" in on_ray.stderr
    joblib_env = {**ray_cluster.env, "MEMEVAL_CACHE_DIR": str(tmp_path / "joblib-cache"),
                  "MEMEVAL_SWEEP_JOBS": "2"}
    on_joblib = _sweep("joblib_local", tmp_path / "joblib", joblib_env)
    assert on_joblib.returncode == 0, on_joblib.stderr[-3000:]

    # the Ray jobs ran in the cluster's workers, which wrote to their own cache
    assert (tmp_path / "ray-cache" / "embeddings.sqlite").is_file()
    jobs = sorted(p.name for p in (tmp_path / "ray").iterdir() if p.is_dir())
    assert jobs == ["0", "1", "2", "3"]
    assert jobs == sorted(p.name for p in (tmp_path / "joblib").iterdir() if p.is_dir())
    for job in jobs:
        ray_run, joblib_run = tmp_path / "ray" / job, tmp_path / "joblib" / job
        assert _metrics(ray_run) == _metrics(joblib_run), job
        pd.testing.assert_frame_equal(_decisions(ray_run), _decisions(joblib_run))
        assert _config(ray_run) == _config(joblib_run)
        # a worker's command line is Ray's or joblib's: the job's own overrides tell it apart
        made = [json.loads((run / "provenance.json").read_text())["overrides"]
                for run in (ray_run, joblib_run)]
        assert made[0] == made[1] and "+experiment=three_pass" in made[0]
    # the sweep tables the two launchers ended with agree, row for row
    ray_table = pd.read_csv(tmp_path / "ray" / "sweep_summary.csv")
    assert len(ray_table) == 4
    pd.testing.assert_frame_equal(ray_table, pd.read_csv(tmp_path / "joblib" / "sweep_summary.csv"))
