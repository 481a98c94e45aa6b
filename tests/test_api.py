"""memeval.api.evaluate: the command's run from Python, its typed result and its checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from memeval.api import evaluate
from memeval.registry import ConfigError

FAST = ["embedder=hashing", "dataset.limit=60", "plots=false", "progress=false", "bootstrap=50",
        "reporting.phoenix.enabled=false"]


@pytest.mark.slow
def test_returns_the_typed_result_of_the_run_it_wrote(tmp_path: Path) -> None:
    run = evaluate("three_pass", [*FAST, f"cache_dir={tmp_path / 'cache'}"],
                   run_dir=tmp_path / "run")
    assert run.path == tmp_path / "run" and (run.path / "metrics.json").is_file()
    assert run.experiment == "three_pass"
    assert [p.pass_no for p in run.result.passes] == [1, 2, 3]
    assert 0.0 <= run.result.passes[-1].substantive_recall <= 1.0
    assert run.setting("embedder.name") == "hashing"
    assert set(run.decisions["pass_no"]) == {1, 2, 3}
    # its overrides recorded as a command's are: runs and the leaderboard read its settings
    assert run.overrides is not None and run.overrides["embedder"] == "hashing"
    from memeval.reporting.leaderboard import configuration

    assert configuration(run) == "bootstrap=50, embedder=hashing"  # what its figures rest on


def test_a_misspelt_key_is_named_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"threshold\.target_recall"):
        evaluate("three_pass", ["threshold.target_recal=0.9"], run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_an_unknown_experiment_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="experiment"):
        evaluate("four_pass", run_dir=tmp_path / "run")
