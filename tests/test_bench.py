"""Both benchmark modes run end to end on tiny inputs and report what they promise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memeval.cli.bench import main, parse_sizes

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
STAGES = ["prefilter", "length", "content_score", "judge", "write"]


def memeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "memeval", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def test_entries_take_one_size_or_several() -> None:
    assert parse_sizes("1000") == [1000]
    assert parse_sizes("250,1000") == [250, 1000]
    with pytest.raises(ValueError):
        parse_sizes("250,0")
    with pytest.raises(SystemExit):  # a Phoenix push is measured at one size only
        main(["--phoenix", "--entries", "250,1000"])


def test_each_size_reports_throughput_ratios_and_memory(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = memeval("bench", "--entries", "60,120", "--embedder", "hashing", "--out", str(out),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(out.read_text())["sizes"]
    assert [row["entries"] for row in rows] == [60, 120]
    for row in rows:
        n = row["entries"]
        # every entry's view is embedded once, and a stored turn whose claims differ from it
        # once more, whole; nothing twice
        assert n <= row["embedding_cache"]["misses"] <= 2 * n
        cold, cached = row["embedding_cold"], row["embedding_cached"]
        assert cold["texts"] == cached["texts"] == n
        assert (cached["hits"], cached["misses"]) == (n, 0)  # the warm pass never embeds
        assert cached["texts_per_s"] > cold["texts_per_s"]
        stages = row["stages"]
        assert list(stages) == STAGES
        reached = [stages[name]["entries"] for name in STAGES]
        assert reached == sorted(reached, reverse=True)  # each stage sees what passed before
        assert reached[0] == 3 * n > reached[-1]  # all reach the prefilter, fewer the write
        assert all(stage["entries_per_s"] > 0 for stage in stages.values())
        assert 0 < row["embedding_s"] + row["judge_s"] + row["gate_own_s"] <= row["three_pass_s"]
        ratios = row["ratios"]
        assert ratios["three_passes_over_one_embedding_pass"] == pytest.approx(
            row["three_pass_s"] / cold["seconds"], rel=0.05)
        assert ratios["gate_own_over_one_embedding_pass"] > 0
        assert row["peak_rss_mb"] > row["python_heap_peak_mb"] > 0
    table = [line for line in done.stdout.splitlines() if line.startswith("|")]
    assert len(table) == 4  # header, rule, one row per size
    assert table[2].startswith("| 60 |") and table[3].startswith("| 120 |")


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
    table = [line for line in done.stdout.splitlines() if line.startswith("|")]
    assert len(table) == 4  # header, rule, one row per size, as docs/datasets.md quotes it
    assert table[0].startswith("| corpus rows | entries after empty-row filtering |")
    assert table[2].startswith(f"| 150 | {small['entries']:,} | {small['seconds']:.1f} s |")
    assert not any(line.startswith("{") for line in done.stdout.splitlines())


def test_warm_up_compares_a_cold_replay_with_the_replay_after_a_warm_up(tmp_path: Path) -> None:
    out = tmp_path / "warm_up.json"
    done = memeval("bench", "--warm-up", "50", "--embedder", "hashing", "--out", str(out),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["corpus_rows"] == 50 and result["engine"] == "local"
    assert result["cold_cache_misses"] > 0 and result["cache_misses_after_warm_up"] == 0
    assert result["same_decisions"] is True and result["max_score_difference"] == 0.0
    assert 0 <= result["embedding_share_after_warm_up"] < 0.10
    assert result["warm_up_plus_replay_vs_cold"] == pytest.approx(
        (result["warm_up_s"] + result["replay_after_warm_up_s"]) / result["cold_replay_s"],
        abs=0.02)
    assert "same_decisions                 True" in done.stdout
