"""The distributed warm-up on a real local Ray cluster: `python -m memeval embed --ray` embeds what
the replay will, with the real model on Ray Data workers; the replay afterwards reads only the
cache and decides exactly as a cold run does; another node's cache imports the same shards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.ray_cluster import RayCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUN = ["+experiment=three_pass", "dataset.limit=80", "plots=false", "progress=false",
       "reporting.phoenix.enabled=false", "bootstrap=50"]
# Clocks differ on every run; everything else, scores and cuts included, must agree bit for bit.
CLOCKS = ["started_at"]


def _memeval(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "memeval", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _run(env: dict[str, str], tmp: Path, cache: str, name: str) -> tuple[dict[str, Any], Path]:
    _memeval(env, tmp, "run", *RUN, f"cache_dir={tmp / cache}", f"hydra.run.dir={tmp / name}")
    return json.loads((tmp / name / "metrics.json").read_text()), tmp / name


def _decisions(run: Path) -> pd.DataFrame:
    frame = pd.read_parquet(run / "decisions.parquet")
    return frame.drop(columns=[*CLOCKS, *frame.filter(like="latency_").columns])


def test_a_replay_after_a_ray_warm_up_reads_only_the_cache(ray_cluster: RayCluster,
                                                           tmp_path: Path) -> None:
    env = {**ray_cluster.env, "MEMEVAL_RAY_ADDRESS": ray_cluster.address}
    warmed = _memeval(env, tmp_path, "embed", "--ray", "--workers", "2", *RUN,
                      f"cache_dir={tmp_path / 'warm'}")
    assert f"Connecting to existing Ray cluster at address: {ray_cluster.address}" \
        in warmed.stderr
    first = warmed.stdout.splitlines()
    assert "0 already cached" in first[0] and f"on Ray at {ray_cluster.address}, 2 worker(s)" \
        in first[0], warmed.stdout
    shards = sorted((tmp_path / "warm" / "shards" / "embeddings").glob("*.parquet"))
    assert shards

    warm, warm_dir = _run(env, tmp_path, "warm", "after-warm-up")
    assert warm["embedder"]["cache_misses"] == 0
    assert warm["embedder"]["cache_hits"] > 0

    cold, cold_dir = _run(env, tmp_path, "cold", "cold")
    assert cold["embedder"]["cache_misses"] > 0
    # Same decisions; scores agree to float noise (a text embedded in another batch differs in
    # its last bits, and a score near 0 makes that a large relative difference).
    pd.testing.assert_frame_equal(_decisions(warm_dir), _decisions(cold_dir), atol=1e-5)
    stored = [pd.read_parquet(run / "stored_memories.parquet")[["pass", "memory_id", "entry_id"]]
              for run in (warm_dir, cold_dir)]
    pd.testing.assert_frame_equal(*stored)

    # a second warm-up finds everything cached and embeds nothing
    again = _memeval(env, tmp_path, "embed", "--ray", *RUN, f"cache_dir={tmp_path / 'warm'}")
    assert " 0 embedded on Ray" in again.stdout.splitlines()[0], again.stdout

    # another node: an empty cache imports the shards and its replay reads only the cache too
    _memeval(env, tmp_path, "cache", "--dir", str(tmp_path / "node"), "import",
             str(tmp_path / "warm" / "shards"), "embeddings")
    other, _ = _run(env, tmp_path, "node", "other-node")
    assert other["embedder"]["cache_misses"] == 0
