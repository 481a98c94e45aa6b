"""The scale benchmark's families: exponent fitting, the registry, the replicated workloads,
and a two-size run at tiny scale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memeval.bench import workloads
from memeval.bench.families import FAMILIES, check_families, exponent, family_table
from memeval.config import compose

EXPERIMENTS = {"three_pass", "retrieval_replay", "memory_qa", "conflict_detection",
               "mqs_calibration"}


@pytest.mark.parametrize("power", [0.5, 1.0, 2.0])
def test_the_exponent_is_the_slope_on_log_log(power: float) -> None:
    sizes = [1000, 10000, 100000]
    assert exponent(sizes, [3e-4 * n**power for n in sizes]) == pytest.approx(power)
    assert exponent([1000], [1.0]) is None


def test_every_experiment_family_is_benched_and_all_names_them() -> None:
    assert set(FAMILIES) == EXPERIMENTS
    assert check_families(["all"]) == list(FAMILIES)
    assert check_families(["memory_qa"]) == ["memory_qa"]
    with pytest.raises(ValueError, match="unknown families"):
        check_families(["three_passes"])


def test_the_table_gives_each_size_and_the_family_exponents() -> None:
    rows = [{"family": "memory_qa", "size": n, "items": "memories", "seconds": n / 100,
             "cpu_s": n / 200, "peak_rss_mb": 200.0 + n / 1000} for n in (1000, 10000)]
    table = family_table(rows).splitlines()
    assert table[2].startswith("| memory_qa | 1,000 memories | 10.0 s | 5.0 s | 10,000 µs |")
    assert table[-1].startswith("| memory_qa | exponent (log-log fit) | 1.00 | 1.00 |")
    fixed = [{**row, "size": n, "seconds": 10 + n / 100, "cpu_s": 10 + n / 100}
             for row, n in zip([*rows, rows[0]], (100, 1000, 10000), strict=True)]
    fits = family_table(fixed).splitlines()[-2:]  # a fixed cost flattens the fit
    assert fits[0].startswith("| memory_qa | exponent (log-log fit) | 0.50 |")
    assert fits[1].startswith("| memory_qa | exponent (largest two sizes) | 0.74 |")


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_each_workload_composes_at_its_size(name: str, tmp_path: Path) -> None:
    overrides = FAMILIES[name].workload(tmp_path, 700)
    cfg = compose([*overrides, "embedder=hashing"])
    assert cfg.experiment.name == name
    written = [p for p in tmp_path.iterdir() if p.is_file()]
    assert len(written) == 1
    if written[0].suffix == ".jsonl":
        rows = written[0].read_text().splitlines()
        assert len(rows) == 700
        ids = [next(v for k, v in json.loads(row).items() if k in ("id", "pair_id"))
               for row in rows]
        assert len(set(ids)) == 700  # every copy tagged: no id repeats


def test_conversations_hold_the_memories_asked_and_their_questions(tmp_path: Path) -> None:
    samples = json.loads(workloads.conversations(tmp_path, 600).read_text())
    turns = [t for s in samples for t in s["conversation"]["session_1"]]
    assert len(turns) == 600 and len({t["text"] for t in turns}) == 600
    held = [{t["dia_id"] for t in s["conversation"]["session_1"]} for s in samples]
    for sample, ids in zip(samples, held, strict=True):
        assert sample["qa"] and all(set(q["evidence"]) <= ids for q in sample["qa"])


@pytest.mark.slow
def test_two_tiny_sizes_are_measured_each_in_its_own_process(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memeval.bench.families import scale_families

    out = tmp_path / "families.json"
    results = scale_families(["mqs_calibration"], [40, 80], out)
    assert [r["size"] for r in results] == [40, 80]
    assert json.loads(out.read_text()) == results
    for row in results:
        assert row["seconds"] > 0 and row["cpu_s"] > 0 and row["peak_rss_mb"] > 100
    printed = capsys.readouterr().out
    assert "embedder: hashing" in printed and "| mqs_calibration | exponent" in printed
