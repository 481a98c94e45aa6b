"""three_pass_mixed: ground truth from human rows only; corpus rows labelled and counted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.results.run_dir import read_decisions
from memeval.runner import run_experiment

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier

CORPORA = Path(__file__).resolve().parents[1] / "data" / "claude_code" / "vsla"


def test_mixed_on_the_bundled_trace_sample(tmp_path: Path,
                                           fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=three_pass_mixed", "dataset.labeled_rows=60",
                      "dataset.corpus_rows=120", "plots=false")
    metrics = run_experiment(cfg, tmp_path / "run")
    stats = metrics["dataset"]["stats"]
    assert (stats["human_rows"], stats["corpus_rows"]) == (60, 120)
    assert stats["corpus_json_array_prompts"] > 0 and stats["corpus_empty_responses"] > 0
    first = metrics["passes"][0]
    assert sum(v["n"] for v in first["per_label"].values()) == 60  # ground truth: humans only
    assert first["entries"] == 180  # the stage distribution covers every row
    assert set(first["by_label_source"]) == {"human", "heuristic-v1"}
    decisions = read_decisions(tmp_path / "run")
    assert set(decisions["label_source"]) == {"human", "heuristic-v1"}


def test_corpus_rows_are_capped_by_what_the_corpus_has(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=three_pass_mixed", "dataset.labeled_rows=20",
                      "experiment.passes=1", "plots=false")  # asks for 856 of 273
    stats = run_experiment(cfg, tmp_path / "run")["dataset"]["stats"]
    assert stats["corpus_rows_requested"] == 856
    assert stats["corpus_rows"] == stats["corpus_rows_available"] == 273


def test_mixed_on_real_claude_code_logs(tmp_path: Path,
                                        fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=three_pass_mixed", "dataset.corpus=claude_code",
                      f"dataset.corpus_path={CORPORA}", "dataset.labeled_rows=40",
                      "dataset.corpus_rows=200", "experiment.passes=2", "plots=false")
    metrics = run_experiment(cfg, tmp_path / "run")
    assert metrics["dataset"]["stats"]["corpus_rows"] == 200
    assert metrics["passes"][-1]["by_label_source"]["heuristic-v1"]["n"] == 200


def test_unknown_corpus_names_the_choices(tmp_path: Path,
                                          fast_config: Callable[..., DictConfig]) -> None:
    from memeval.registry import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'claude_code'"):
        run_experiment(fast_config("+experiment=three_pass_mixed", "dataset.corpus=claude_cod"),
                       tmp_path / "run")


def test_a_missing_corpus_path_is_named_as_the_setting_the_user_set(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    from memeval.data.base import DatasetError

    cfg = fast_config("+experiment=three_pass_mixed", "dataset.corpus=claude_code",
                      f"dataset.corpus_path={tmp_path / 'nowhere'}")
    with pytest.raises(DatasetError, match=r"not found: .*nowhere \(point dataset.corpus_path="):
        run_experiment(cfg, tmp_path / "run")
