"""Both benchmark modes run end to end on tiny inputs and report what they promise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def memeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memeval", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def test_three_pass_against_one_embedding_pass(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = memeval("bench", "--entries", "120", "--embedder", "hashing", "--out", str(out),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["entries"] == 120
    assert result["embedding_cache"]["misses"] == 120  # every distinct text embedded once
    assert result["embedding_cache"]["hits"] > 2 * 120  # passes 2-3 and learning hit the cache
    assert result["three_pass_over_one_embedding_pass"] > 0
    assert set(result["stage_seconds_total"]) >= {"prefilter", "length", "content_score"}


def test_scale_reports_time_memory_and_shares(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    done = memeval("bench", "--scale", "150,300", "--embedder", "hashing", "--out", str(out),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    small, large = json.loads(out.read_text())
    assert (small["corpus_rows"], large["corpus_rows"]) == (150, 300)
    assert large["entries"] > small["entries"] > 144
    for row in (small, large):
        parts = row["embedding_s"] + row["judge_s"] + row["gate_own_s"] + row["harness_s"]
        assert parts == pytest.approx(row["seconds"], abs=0.05)
        assert 0 < row["gate_own_share"] < 1 and row["peak_rss_mb"] > 0
