"""An interrupted run resumes from its last finished pass and ends exactly as an uninterrupted run:
same metrics, same decisions, none counted twice."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import DictConfig

from memeval.data.entry import Entry
from memeval.engine.judges.base import Verdict
from memeval.engine.judges.labels import LabelJudge
from memeval.registry import ConfigError
from memeval.results.run_dir import read_decisions, read_metrics
from memeval.runner import run_experiment

pytestmark = pytest.mark.faults

# Wall-clock fields: the only ones allowed to differ between two runs of the same settings.
CLOCK = ("latency", "wall_seconds", "timing", "run_id", "started_at")


def _without_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_clock(v) for k, v in value.items() if k not in CLOCK}
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


def _decisions(run_dir: Path) -> pd.DataFrame:
    frame = read_decisions(run_dir)
    return frame.drop(columns=[c for c in frame.columns
                               if c.startswith("latency_") or c == "started_at"])


class Interrupt(KeyboardInterrupt):
    """What Ctrl-C raises, from inside the replay."""


def interrupt_after(monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    """The oracle judge raises on its `calls`+1-th verdict, mid-pass."""
    real = LabelJudge.judge
    seen = {"n": 0}

    def judge(self: LabelJudge, entry: Entry, user_prompt: str, text: str) -> Verdict:
        seen["n"] += 1
        if seen["n"] > calls:
            raise Interrupt
        return real(self, entry, user_prompt, text)

    monkeypatch.setattr(LabelJudge, "judge", judge)


EXPERIMENTS = {
    "three_pass": ("+experiment=three_pass",),
    "three_pass_holdout": ("+experiment=three_pass_holdout",),
    "feedback_loop": ("+experiment=feedback_loop", "experiment.passes=2"),
}


@pytest.mark.parametrize("experiment", list(EXPERIMENTS))
def test_an_interrupted_run_resumes_to_the_uninterrupted_result(
        tmp_path: Path, fast_config: Callable[..., DictConfig], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], experiment: str) -> None:
    settings = (*EXPERIMENTS[experiment], "plots=false", "judge.error_rate=0.1")
    whole = tmp_path / "whole"
    run_experiment(fast_config(*settings), whole)
    expected = read_metrics(whole)
    first_pass_calls = expected["passes"][0]["judge_calls"]
    if experiment == "three_pass_holdout":  # its passes also judge the learning half
        first_pass_calls += expected["learn_passes"][0]["judge_calls"]

    broken = tmp_path / "broken"
    with monkeypatch.context() as patch:
        interrupt_after(patch, first_pass_calls + 20)  # well into pass 2
        with pytest.raises(Interrupt):
            run_experiment(fast_config(*settings), broken)
    assert "1 finished pass(es) saved" in capsys.readouterr().err
    assert not (broken / "metrics.json").exists()
    with pytest.raises(ConfigError, match="interrupted run: finish it by adding resume=true"):
        run_experiment(fast_config(*settings), broken)

    run_experiment(fast_config(*settings, "resume=true"), broken)
    resumed = read_metrics(broken)
    assert _without_clock(resumed["passes"]) == _without_clock(expected["passes"])
    assert _without_clock(resumed.get("arms")) == _without_clock(expected.get("arms"))
    assert _without_clock(resumed.get("learn_passes")) == _without_clock(
        expected.get("learn_passes"))
    decisions = _decisions(broken)
    assert not decisions.duplicated(["arm", "phase", "pass_no", "entry_id"]).any()
    pd.testing.assert_frame_equal(decisions, _decisions(whole))
    assert not (broken / "checkpoints").exists()  # a finished run keeps its results only


def test_resume_refuses_changed_settings_naming_them(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ("+experiment=three_pass", "plots=false", "dataset.limit=120")
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_after(patch, 70)
        with pytest.raises(Interrupt):
            run_experiment(fast_config(*settings), run_dir)
    with pytest.raises(ConfigError, match=r"settings differ .*judge\.error_rate"):
        run_experiment(fast_config(*settings, "judge.error_rate=0.3", "resume=true"), run_dir)
    # presentation settings may change
    run_experiment(fast_config(*settings, "resume=true", "bootstrap=200", "progress=false"),
                   run_dir)
    assert [p["pass"] for p in read_metrics(run_dir)["passes"]] == [1, 2, 3]


def test_resume_needs_an_interrupted_run(tmp_path: Path,
                                         fast_config: Callable[..., DictConfig]) -> None:
    with pytest.raises(ConfigError, match="holds no interrupted run"):
        run_experiment(fast_config("+experiment=three_pass", "resume=true"), tmp_path / "new")
    with pytest.raises(ConfigError, match="does not checkpoint"):
        run_experiment(fast_config("+experiment=conflict_detection", "resume=true"),
                       tmp_path / "other")


def test_a_run_interrupted_in_its_first_pass_resumes_from_empty_stores(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing finished: what the first attempt fed its stores must not pre-train pass 1."""
    settings = ("+experiment=three_pass", "plots=false", "dataset.limit=120")
    whole = tmp_path / "whole"
    run_experiment(fast_config(*settings), whole)
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_after(patch, 60)
        with pytest.raises(Interrupt):
            run_experiment(fast_config(*settings), run_dir)
    assert sum(p.stat().st_size for p in (run_dir / "state").glob("*.jsonl")) > 0
    assert read_metrics(whole)["passes"][0]["judge_calls"] > 60  # it was stopped in pass 1
    run_experiment(fast_config(*settings, "resume=true"), run_dir)
    assert _without_clock(read_metrics(run_dir)["passes"]) == _without_clock(
        read_metrics(whole)["passes"])
