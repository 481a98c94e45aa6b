"""`+experiment=mqs_calibration` end to end on the bundled sets: metrics, tables, figures."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig

from memeval.config import validate
from memeval.metrics.calibration import calibration_report, grade_agreement
from memeval.paths import data_path
from memeval.registry import ConfigError
from memeval.reporting.report import write_report
from memeval.results.run_dir import read_table
from memeval.runner import run_experiment


@pytest.mark.slow
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
    assert figures == {"mqs_reliability.png", "mqs_breakdown.png", "mai_confusion.png",
                       "trust_vs_mqs.png"}  # the last: the trust score against MQS
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert saved["mqs"]["fingerprint"] == mqs["fingerprint"]


@pytest.mark.slow
def test_a_worse_constant_changes_the_calibration(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    base = run_experiment(fast_config("+experiment=mqs_calibration", "bootstrap=20"),
                          tmp_path / "a")["mqs"]["configured"]
    worse = run_experiment(fast_config("+experiment=mqs_calibration", "bootstrap=20",
                                       "experiment.mqs.confidence_points=5"),
                           tmp_path / "b")["mqs"]["configured"]
    assert worse["ece"] > base["ece"] and worse["brier"] > base["brier"]


def test_grade_agreement_ranks_a_score_against_a_numeric_grade() -> None:
    scores = np.array([10.0, 40.0, 35.0, 80.0, 90.0, 20.0])
    ranks = np.array([0, 1, 1, 2, 2, 0])
    grades = np.array([0.05, 0.5, 0.5, 0.9, 0.9, 0.05])  # the labels' order, as numbers
    labelled = calibration_report(scores, ranks, (ranks == 2).astype(float), bins=3,
                                  resamples=100, seed=0)
    graded = grade_agreement(scores, grades, resamples=100, seed=0)
    assert graded["n"] == 6
    for metric in ("spearman", "kendall"):  # rank measures: any order-keeping scale agrees
        assert graded[metric] == pytest.approx(labelled[metric])
        assert graded[f"{metric}_ci95"] == pytest.approx(labelled[f"{metric}_ci95"])
    assert grade_agreement(scores, 1 - grades, resamples=100, seed=0)["spearman"] == \
        pytest.approx(-labelled["spearman"])


def _graded_copy(tmp_path: Path, keep_labels: bool) -> Path:
    """The bundled records with a numeric trust grade in the labels' order."""
    grade = {"untrusted": 0.1, "questionable": 0.5, "trusted": 0.9}
    path = tmp_path / "graded.jsonl"
    with path.open("w") as out:
        for line in Path(data_path("mqs/memory_records_v1.jsonl")).read_text().splitlines():
            row = json.loads(line)
            row["trust"] = grade[row["label"] if keep_labels else row.pop("label")]
            out.write(json.dumps(row) + "\n")
    return path


@pytest.mark.slow
def test_a_numeric_trust_grade_gets_its_own_rank_agreement(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    both = run_experiment(fast_config("+experiment=mqs_calibration", "bootstrap=30",
                                      f"experiment.records={_graded_copy(tmp_path, True)}"),
                          tmp_path / "both")["mqs"]
    grade, configured = both["trust_grade"], both["configured"]
    assert both["graded"] == grade["n"] == both["records"] == 80
    assert grade["spearman"] == pytest.approx(configured["spearman"])  # same order as the labels
    assert grade["kendall"] == pytest.approx(configured["kendall"])
    graded_only = run_experiment(
        fast_config("+experiment=mqs_calibration", "bootstrap=30", "plots=true",
                    f"experiment.records={_graded_copy(tmp_path, False)}"),
        tmp_path / "graded")
    mqs = graded_only["mqs"]
    assert mqs["configured"] is None and mqs["fitted_out_of_fold"] is None and mqs["labels"] == {}
    assert mqs["trust_grade"]["spearman"] == pytest.approx(grade["spearman"])
    assert "no record has a trust label" in mqs["notes"]["configured"]
    table = read_table(tmp_path / "graded", "mqs_records")
    assert table["label"].isna().all() and set(table["trust"]) == {0.1, 0.5, 0.9}
    figures = {p.name for p in (tmp_path / "graded" / "figures").iterdir()}
    # no labels: no reliability diagram
    assert figures == {"mqs_breakdown.png", "mai_confusion.png", "trust_vs_mqs.png"}
    _, markdown = write_report([tmp_path / "graded"], tmp_path / "report")
    text = markdown.read_text()
    assert "MQS against the numeric trust grade" in text and "MQS calibration\n" not in text


def test_too_few_labelled_records_to_fit_are_noted_not_a_crash(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    lines = Path(data_path("mqs/memory_records_v1.jsonl")).read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    few = [next(r for r in rows if r["label"] == "trusted"),
           *[r for r in rows if r["label"] != "trusted"][:3]]
    for row in few:
        row["derived_from"], row["conflicts"] = [], []
    path = tmp_path / "few.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in few))
    mqs = run_experiment(fast_config("+experiment=mqs_calibration", "bootstrap=20",
                                     f"experiment.records={path}"), tmp_path / "run")["mqs"]
    assert mqs["records"] == 4 and mqs["configured"]["n"] == 4
    assert mqs["fitted_out_of_fold"] is None and mqs["constants"] is None
    assert "2 trusted and 2 other" in mqs["notes"]["fitted_out_of_fold"]


@pytest.mark.parametrize(("left_out", "kept", "tables"), [
    ("scenarios", "mqs", {"mqs_records", "trust_records"}),
    ("records", "mai", {"mai_scenarios", "trust_records"})])
@pytest.mark.slow
def test_either_set_alone_skips_the_other_half(
        tmp_path: Path, fast_config: Callable[..., DictConfig], left_out: str, kept: str,
        tables: set[str]) -> None:
    cfg = fast_config("+experiment=mqs_calibration", "bootstrap=20", "plots=true",
                      f"experiment.{left_out}=null")
    metrics = run_experiment(cfg, tmp_path / "run")
    other = {"mqs", "mai"} - {kept}
    assert metrics[kept] is not None and all(metrics[half] is None for half in other)
    written = {p.stem for p in (tmp_path / "run").glob("*.parquet")} - {"decisions"}
    assert written == tables
    figures = {p.name for p in (tmp_path / "run" / "figures").iterdir()} - {"trust_vs_mqs.png"}
    assert figures and all(name.startswith(kept) for name in figures)


def test_both_sets_null_is_a_config_error(fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=mqs_calibration", "experiment.records=null",
                      "experiment.scenarios=null")
    with pytest.raises(ConfigError, match="records and scenarios are both null"):
        validate(cfg)
