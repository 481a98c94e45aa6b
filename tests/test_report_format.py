"""Reports and figures that read without a calculator: numbers rounded and given units, a
comparison that names its runs by what differs between them, files named for what they hold, and
figures whose axes say what they measure."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from omegaconf import OmegaConf

from memeval.cli.report import main
from memeval.components import load_components
from memeval.reporting.plots import learning_curve, rejection_store, score_distributions
from memeval.reporting.report import comparison_stem, write_report
from memeval.results.result import load_result
from memeval.results.run import Run
from memeval.results.run_dir import read_decisions

THREE_PASS = Path(__file__).parent / "data" / "runs" / "schema1_three_pass"
LONG_FLOAT = re.compile(r"\d\.\d{4,}")  # more than 3 decimals


def _table_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """The committed three-pass run, and a copy of it whose settings say another judge and a
    lower content-score target: the same decisions, different config.yaml."""
    first, second = tmp_path / "runs" / "10-04-31", tmp_path / "runs" / "judge classifier"
    shutil.copytree(THREE_PASS, first)
    shutil.copytree(THREE_PASS, second)
    config = OmegaConf.load(second / "config.yaml")
    config.judge = {"name": "classifier", "keep_labels": ["substantive"], "folds": 5, "seed": 0}
    config.scorer.threshold.target_recall = 0.9
    OmegaConf.save(config, second / "config.yaml")
    return first, second


def test_the_markdown_report_rounds_every_number(tmp_path: Path) -> None:
    _, markdown = write_report([THREE_PASS], tmp_path)
    rows = _table_rows(markdown.read_text())
    assert rows and [row for row in rows if LONG_FLOAT.search(row)] == []
    assert "| 1 | 99.1% [97–100] | 0 | 100.0% | 43.4% | 163 | 0 | 43.4% |" in rows


def test_the_report_is_titled_by_experiment_and_start(tmp_path: Path) -> None:
    """A run that did not record its start is dated by the directory Hydra named for it."""
    load_components()  # the experiment's own headline sentence opens the page
    hydra = tmp_path / "runs" / "2026-11-24" / "10-04-31"
    shutil.copytree(THREE_PASS, hydra)
    assert write_report([hydra])[1].read_text().startswith(
        "# memeval three_pass run, 2026-11-24 10:04:31\n\nPass 3 kept 99.1% [97–100] of the "
        "human-labelled substantive entries")
    metrics = json.loads((hydra / "metrics.json").read_text())
    (hydra / "metrics.json").write_text(json.dumps({**metrics,
                                                     "started_at": "2026-11-25T09:00:01+00:00"}))
    assert write_report([hydra])[1].read_text().startswith(
        "# memeval three_pass run, 2026-11-25 09:00:01 UTC\n")


def test_a_comparison_says_what_differs_and_names_runs_by_it(
        pair: tuple[Path, Path], tmp_path: Path) -> None:
    _, markdown = write_report(list(pair), tmp_path)
    text = markdown.read_text()
    assert text.startswith("# memeval: three_pass · judge=labels · "
                           "scorer.threshold.target_recall=0.99 vs three_pass · judge=classifier · "
                           "scorer.threshold.target_recall=0.9\n")
    differs = text.split("## What differs")[1].split("## ")[0]
    assert "| judge.name | labels | classifier |" in differs
    assert "| judge.folds | (not set) | 5 |" in differs
    assert "| judge.error_rate | 0.0 | (not set) |" in differs
    assert "| scorer.threshold.target_recall | 0.99 | 0.9 |" in differs
    assert "seed" not in differs and "dataset" not in differs  # the settings they share
    comparison = text.split("## Comparison")[1].split("## ")[0]
    assert "judge calls a (count)" in comparison and "judge call rate a (%)" in comparison
    assert [row for row in _table_rows(comparison) if LONG_FLOAT.search(row)] == []
    assert "| main | 1 | 288 | 99.1% | 99.1% | +0.0 [+0.0, +0.0] | 163 | 163 | 56.6% |" in text


def test_runs_that_no_setting_tells_apart_are_named_by_their_directories(
        tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(THREE_PASS, first)
    shutil.copytree(THREE_PASS, second)
    text = write_report([first, second], tmp_path / "out")[1].read_text()
    assert text.startswith("# memeval: three_pass (first) vs three_pass (second)\n")
    assert "No setting" in text.split("## What differs")[1].split("## ")[0]


def test_the_comparison_file_is_named_after_both_runs(
        pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*map(str, pair), "--out", str(tmp_path / "out")]) == 0
    stem = "compare_10-04-31_vs_judge-classifier"
    assert {p.name for p in (tmp_path / "out").glob("compare_*")} == {f"{stem}.html",
                                                                       f"{stem}.md"}
    assert str(tmp_path / "out" / f"{stem}.html") in capsys.readouterr().out


def test_runs_of_the_same_time_on_different_days_get_distinct_names() -> None:
    result = load_result(THREE_PASS)
    a = Run(Path("runs/2026-11-24/10-04-31"), result)
    b = Run(Path("runs/2026-11-25/10-04-31"), result)
    assert comparison_stem(a, b) == "compare_2026-11-24-10-04-31_vs_2026-11-25-10-04-31"


def test_the_learning_curve_labels_both_axes_and_counts_passes_in_whole_numbers() -> None:
    fig, ax = plt.subplots()
    learning_curve(load_result(THREE_PASS), pd.DataFrame(), ax)
    fig.canvas.draw()
    assert "%" in ax.get_ylabel() and "pass" in ax.get_xlabel()
    low, high = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if low <= t <= high]
    assert ticks and all(float(t).is_integer() for t in ticks)
    plt.close(fig)


def test_the_rejection_store_names_unlabelled_texts_and_has_no_none(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(THREE_PASS, run)
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["passes"][0]["rejection_store_by_label"]["None"] = 4
    (run / "metrics.json").write_text(json.dumps(metrics))
    for source, unlabelled in ((THREE_PASS, False), (run, True)):
        fig, ax = plt.subplots()
        rejection_store(load_result(source), pd.DataFrame(), ax)
        legend = ax.get_legend()
        assert legend is not None
        names = [t.get_text() for t in legend.get_texts()]
        assert "None" not in names and ("unlabelled" in names) == unlabelled
        assert all(t.get_rotation() == 0 and t.get_fontsize() >= 9
                   for t in ax.get_yticklabels())
        plt.close(fig)


def test_the_score_axis_says_what_the_score_is() -> None:
    fig, ax = plt.subplots()
    score_distributions(load_result(THREE_PASS), read_decisions(THREE_PASS), ax)
    assert "logit" in ax.get_xlabel() and ax.get_ylabel()
    plt.close(fig)
