"""MQS on the memories a three-pass run stores: table, per-pass summary, printed table, figure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig
from scipy.special import expit

from memeval.reporting.table import pass_table
from memeval.results.result import load_result
from memeval.results.run_dir import read_decisions, read_table
from memeval.runner import run_experiment

pytestmark = pytest.mark.slow  # each test reads a whole replay's stored memories


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A noisy judge (40% of verdicts flipped) so low-value memories get stored too."""
    from memeval.config import compose

    root = tmp_path_factory.mktemp("stored")
    cfg = compose(["+experiment=three_pass", "embedder=hashing", f"cache_dir={root / 'cache'}",
                   "progress=false", "bootstrap=100", "plots=true", "dataset.limit=150",
                   "judge.error_rate=0.4"])
    return root / "run", run_experiment(cfg, root / "run")


def test_every_stored_memory_is_scored_once_per_pass(run: tuple[Path, dict]) -> None:
    run_dir, metrics = run
    table = read_table(run_dir, "stored_memories")
    for p in metrics["passes"]:
        mine = table[table["pass"] == p["pass"]]
        assert len(mine) == p["stage_counts"]["stored"] == p["stored_mqs"]["memories"]
        assert mine["memory_id"].is_unique
        counts = {label: s["memories"] for label, s in p["stored_mqs"]["by_label"].items()}
        assert counts == mine["label"].astype(str).value_counts().to_dict()
    assert {"substantive", "low_value"} <= set(table["label"])  # the noisy judge let some through


def test_confidence_comes_from_the_write_time_content_score(run: tuple[Path, dict]) -> None:
    run_dir, _ = run
    table = read_table(run_dir, "stored_memories")
    decisions = read_decisions(run_dir).set_index(["pass_no", "entry_id"])
    written = decisions.loc[list(zip(table["pass"], table["entry_id"], strict=True))]
    assert (written["outcome"] == "stored").all()
    scored = table["content_score"].notna()
    assert scored.any() and (~scored).any()  # pass 1 stores some before the scorer is active
    assert np.allclose(table.loc[scored, "content_score"],
                       written.loc[scored.to_numpy(), "score"])
    assert np.allclose(table.loc[scored, "effective_confidence"],
                       expit(table.loc[scored, "content_score"]), atol=1e-6)
    assert (table.loc[~scored, "confidence_basis"] == "missing").all()
    assert (table.loc[~scored, "effective_confidence"] == 0.5).all()


def test_scores_add_up_and_penalties_follow_the_flags(run: tuple[Path, dict]) -> None:
    table = read_table(run[0], "stored_memories")
    rebuilt = (table["confidence"] + table["usage"] + table["access"]
               - table["conflict_penalty"] - table["hedged_penalty"])
    assert np.allclose(rebuilt, table["raw"])
    assert ((table["hedged_penalty"] == 5.0) == table["hedged"]).all()
    assert ((table["conflict_penalty"] == 10.0) == table["conflict_with"].notna()).all()
    assert (table["usage"] == 12.5).all() and (table["access"] == 0).all()  # no retrieval replay


def test_the_summary_measures_separation(run: tuple[Path, dict]) -> None:
    run_dir, metrics = run
    table = read_table(run_dir, "stored_memories")
    last = metrics["passes"][-1]
    mine = table[table["pass"] == last["pass"]]
    positives = (mine["label"] == "substantive").to_numpy()
    scores = mine["score"].to_numpy()
    wins = (scores[positives][:, None] > scores[~positives][None, :]).mean() \
        + 0.5 * (scores[positives][:, None] == scores[~positives][None, :]).mean()
    report = last["stored_mqs"]["mqs"]
    assert report["auroc"] == pytest.approx(wins)
    low, high = report["auroc_ci95"]
    assert low <= report["auroc"] <= high
    assert last["stored_mqs"]["mqs_by_label_source"] == {"human": report}  # one source here


def test_the_printed_table_and_figure_show_it(run: tuple[Path, dict]) -> None:
    run_dir, metrics = run
    printed = pass_table(load_result(run_dir).passes)
    assert "MQS of stored memories" in printed
    auroc = metrics["passes"][0]["stored_mqs"]["mqs"]["auroc"]
    assert f"{auroc:.3f}" in printed.split("MQS of stored memories")[1]
    assert (run_dir / "figures" / "stored_mqs.png").is_file()


def test_a_pass_that_stores_nothing_reports_no_separation(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=three_pass", "experiment.passes=1", "dataset.limit=30",
                      "gate.write.min_chars=1000000", "plots=true")
    metrics = run_experiment(cfg, tmp_path / "run")
    quality = metrics["passes"][0]["stored_mqs"]
    assert quality["memories"] == 0 and quality["by_label"] == {}
    assert quality["mqs"]["auroc"] is None
    assert read_table(tmp_path / "run", "stored_memories").empty
    assert not (tmp_path / "run" / "figures" / "stored_mqs.png").exists()
    assert "MQS of stored memories" in pass_table(load_result(tmp_path / "run").passes)
