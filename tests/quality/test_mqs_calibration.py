"""`+experiment=mqs_calibration` end to end on the bundled sets: metrics, tables, figures."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig

from memeval.results.run_dir import read_table
from memeval.runner import run_experiment


def test_calibration_run_writes_metrics_tables_and_figures(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=mqs_calibration", "bootstrap=50", "plots=true")
    metrics = run_experiment(cfg, tmp_path / "run")
    assert "dataset" not in metrics and "embedder" not in metrics  # nothing of the gate loaded
    mqs = metrics["mqs"]
    records = read_table(tmp_path / "run", "mqs_records")
    assert len(records) == mqs["records"] >= 60
    assert set(mqs["constants"]) == {"confidence_points", "usage_points", "access_points_each",
                                     "conflict_penalty", "hedged_penalty"}
    for report in (mqs["configured"], mqs["fitted_out_of_fold"]):
        for metric in ("spearman", "kendall", "brier", "ece"):
            low, high = report[f"{metric}_ci95"]
            assert low <= report[metric] <= high, metric
        assert sum(b["n"] for b in report["reliability"]) == mqs["records"]
    # each row's components add up to its raw score
    rebuilt = (records["confidence"] + records["usage"] + records["access"]
               - records["conflict_penalty"] - records["hedged_penalty"])
    assert (rebuilt - records["raw"]).abs().max() < 1e-9
    mai = metrics["mai"]
    scenarios = read_table(tmp_path / "run", "mai_scenarios")
    assert len(scenarios) == mai["scenarios"] >= 30
    assert mai["accuracy"] == (scenarios["ground_truth"] == scenarios["predicted"]).mean()
    assert sum(sum(row.values()) for row in mai["confusion"].values()) == mai["scenarios"]
    figures = {p.name for p in (tmp_path / "run" / "figures").iterdir()}
    assert figures == {"mqs_reliability.png", "mqs_breakdown.png", "mai_confusion.png"}
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert saved["mqs"]["fingerprint"] == mqs["fingerprint"]


def test_a_worse_constant_changes_the_calibration(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    base = run_experiment(fast_config("+experiment=mqs_calibration", "bootstrap=20"),
                          tmp_path / "a")["mqs"]["configured"]
    worse = run_experiment(fast_config("+experiment=mqs_calibration", "bootstrap=20",
                                       "experiment.mqs.confidence_points=5"),
                           tmp_path / "b")["mqs"]["configured"]
    assert worse["ece"] > base["ece"] and worse["brier"] > base["brier"]
