"""The System seam: experiments ask for capabilities and refuse, by name, a system without them;
any system that can ingest runs the three-pass protocol with the same per-pass metrics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.registry import ConfigError
from memeval.runner import run_experiment
from memeval.systems.base import Capability, require
from tests.systems.fakes import KeepAllSystem, WordOverlapSystem  # noqa: F401 (registered)

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier


def test_require_names_what_is_missing_and_what_the_system_has() -> None:
    with pytest.raises(ConfigError) as caught:
        require(KeepAllSystem(), [Capability.INGEST, Capability.FREEZE, Capability.SEARCH],
                "three_pass_holdout")
    assert str(caught.value).startswith(
        "system 'keep-all' cannot run experiment three_pass_holdout: it needs freeze_learning, "
        "search (this system has: ingest, reset_memories)")


def test_any_ingesting_system_runs_the_three_pass_protocol(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config("+experiment=three_pass", "system.name=keep-all",
                                         "dataset.limit=60"), tmp_path / "run")
    passes = metrics["passes"]
    assert [p["pass"] for p in passes] == [1, 2, 3]
    assert all(p["memories"] == p["stage_counts"]["stored"] for p in passes)
    assert passes[0]["judge_calls"] == 0 and "stored_mqs" not in passes[0]
    assert passes[0]["substantive_recall"] is not None


@pytest.mark.parametrize(("experiment", "message"), [
    ("three_pass_holdout", "it needs freeze_learning"),
    ("feedback_loop", "studies memeval's reference engine: run it with system=reference"),
    ("retrieval_replay", "studies memeval's reference engine: run it with system=reference"),
])
def test_experiments_refuse_a_system_without_what_they_need(
        tmp_path: Path, fast_config: Callable[..., DictConfig], experiment: str,
        message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        run_experiment(fast_config(f"+experiment={experiment}", "system.name=keep-all"),
                       tmp_path / "run")
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_mqs_calibration_scores_records_with_the_system_under_test(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    mqs = run_experiment(fast_config("+experiment=mqs_calibration", "system.name=word-overlap",
                                     "bootstrap=30", "plots=true"), tmp_path / "run")["mqs"]
    assert mqs["system"] == "word-overlap" and mqs["configured"]["n"] == 80
    assert mqs["fitted_out_of_fold"] is None and mqs["gate_actions"] == {}
    assert "fitted for system=reference" in mqs["notes"]["fitted_out_of_fold"]
    assert (tmp_path / "run" / "figures" / "mqs_reliability.png").is_file()


def test_conflict_detection_runs_the_system_s_own_detector(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    conflicts = run_experiment(fast_config("+experiment=conflict_detection",
                                           "system.name=word-overlap", "bootstrap=30",
                                           "plots=true"), tmp_path / "run")["conflicts"]
    assert conflicts["detectors"] == ["word-overlap"]
    assert conflicts["word-overlap"]["any_conflict"]["support"] == 46
    assert (tmp_path / "run" / "figures" / "conflict_confusion.png").is_file()


@pytest.mark.parametrize(("experiment", "needs"), [("mqs_calibration", "score_records"),
                                                   ("conflict_detection", "detect_conflicts")])
def test_quality_experiments_refuse_a_system_that_cannot_serve_them(
        tmp_path: Path, fast_config: Callable[..., DictConfig], experiment: str,
        needs: str) -> None:
    with pytest.raises(ConfigError, match=f"cannot run experiment {experiment}: it needs {needs}"):
        run_experiment(fast_config(f"+experiment={experiment}", "system.name=keep-all"),
                       tmp_path / "run")
