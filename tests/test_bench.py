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
        assert 0 < (row["embedding_s"] + row["judge_s"] + row["fitting_s"]
                    + row["stored_scoring_s"] + row["bookkeeping_s"] + row["gate_own_s"]
                    ) <= row["three_pass_s"]
        assert row["bookkeeping_s"] > 0  # three checkpoints and three passes' metrics
        ratios = row["ratios"]
        assert ratios["three_passes_over_one_embedding_pass"] == pytest.approx(
            row["three_pass_s"] / cold["seconds"], rel=0.01)
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
        parts = (row["embedding_s"] + row["judge_s"] + row["fitting_s"] + row["stored_scoring_s"]
                 + row["bookkeeping_s"] + row["gate_own_s"] + row["harness_s"])
        assert parts == pytest.approx(row["seconds"], abs=0.06)
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
    assert 0 <= result["embedding_share_after_warm_up"] <= 1  # a share; its size is the bench's
    assert result["warm_up_plus_replay_vs_cold"] == pytest.approx(
        (result["warm_up_s"] + result["replay_after_warm_up_s"]) / result["cold_replay_s"],
        abs=0.02)
    assert "same_decisions                 True" in done.stdout


def _budgets(path: Path, warm: float) -> Path:
    """One tiny job whose warm budget is `warm` seconds."""
    tiny = ["run", "+experiment=three_pass", "embedder=hashing", "dataset.limit=40",
            "experiment.stored_models.enabled=false", "plots=false",
            "reporting.phoenix.enabled=false"]  # no quality models to fit cold
    path.write_text(json.dumps({"contended_factor": 100, "cpu_factor": 100, "jobs": [
        {"name": "tiny", "command": tiny, "warm": warm, "cold": 600}]}))
    return path


def test_the_suite_times_each_job_cold_warm_and_contended_and_fails_past_a_budget(
        tmp_path: Path) -> None:
    out = tmp_path / "suite.json"
    done = memeval("bench", "--suite", "--budgets", str(_budgets(tmp_path / "b.yaml", 0.01)),
                   "--contended", "1", "--threads", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "memeval bench: tiny: warm took" in done.stderr and "budget of 0.0 s" in done.stderr
    assert "bench --suite: tiny, warm beside 1 busy processes" in done.stderr  # progress
    table = done.stdout.splitlines()
    assert table[0].startswith("| job | cold | warm (CPU) |") and "contended" in table[0]
    assert table[2].startswith("| tiny |") and table[2].endswith("| over budget |")
    [job] = json.loads(out.read_text())["jobs"]
    assert set(job["runs"]) == {"cold", "warm", "one thread", "library pools", "contended"}
    assert all(run["exit"] == 0 and run["wall_s"] > 0 and run["cpu_s"] > 0
               for run in job["runs"].values())


@pytest.mark.parametrize(("warm", "contended", "one_thread_cpu", "failures"), [
    (10.0, 20.0, 10.0, []),
    (11.0, 20.0, 10.0, ["warm took 11.0 s, over its budget of 10.0 s"]),
    (10.0, 31.0, 10.0, ["contended took 31.0 s, over its budget of 30.0 s"]),
    (10.0, 20.0, 8.0, ["memeval's pools used 1.25x the CPU of one thread each"])])
def test_each_budget_is_judged(warm: float, contended: float, one_thread_cpu: float,
                               failures: list[str]) -> None:
    from memeval.bench.suite import Budgets, Job, Measured, Timed, judge

    measured = Measured(Job("job", ["run"], warm=10.0, cold=100.0), {
        "cold": Timed(90.0, 90.0, 0), "warm": Timed(warm, 10.0, 0),
        "one thread": Timed(9.0, one_thread_cpu, 0), "contended": Timed(contended, 10.0, 0)})
    judge(measured, Budgets([measured.job], contended_factor=3.0, cpu_factor=1.2))
    assert [line.removeprefix("job: ").split(" (at most")[0]
            for line in measured.failures] == failures


@pytest.mark.bad_input
def test_the_suite_names_an_unknown_job(tmp_path: Path) -> None:
    done = memeval("bench", "--suite", "--budgets", str(_budgets(tmp_path / "b.yaml", 1)),
                   "--only", "nope", cwd=tmp_path)
    assert done.returncode == 2
    assert "--only nope: not a job in" in done.stderr and "(jobs: tiny)" in done.stderr
