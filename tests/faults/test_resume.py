"""An interrupted run resumes from its last finished pass and ends exactly as an uninterrupted run:
same metrics, same decisions, none counted twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import DictConfig

from memeval.data.entry import Entry
from memeval.engine.judges.base import Verdict
from memeval.engine.judges.labels import LabelJudge
from memeval.registry import ConfigError
from memeval.results.run_dir import read_metrics
from memeval.runner import run_experiment
from tests.faults.common import chat_verdict, decisions_without_clock, without_clock
from tests.loopback import LoopbackServer, Received, Reply

pytestmark = pytest.mark.faults


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
    assert without_clock(resumed["passes"]) == without_clock(expected["passes"])
    assert without_clock(resumed.get("arms")) == without_clock(expected.get("arms"))
    assert without_clock(resumed.get("learn_passes")) == without_clock(
        expected.get("learn_passes"))
    decisions = decisions_without_clock(broken)
    assert not decisions.duplicated(["arm", "phase", "pass_no", "entry_id"]).any()
    pd.testing.assert_frame_equal(decisions, decisions_without_clock(whole))
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
    assert without_clock(read_metrics(run_dir)["passes"]) == without_clock(
        read_metrics(whole)["passes"])


@pytest.mark.slow
@pytest.mark.integration
def test_a_killed_cli_run_resumes_from_the_command_line(tmp_path: Path) -> None:
    """SIGKILL mid-pass (no handler runs, files may be mid-write): `resume=true` on the same
    command finishes it, with the results of a run never killed."""
    def slow_verdict(request: Received) -> Reply:
        time.sleep(0.01)
        return chat_verdict(request)

    def command(run_dir: Path, server: LoopbackServer, *extra: str) -> list[str]:
        return [sys.executable, "-m", "memeval", "run", "+experiment=three_pass",
                "embedder=hashing", "judge=openai_chat", f"judge.base_url={server.base_url}/v1",
                "judge.cache=false", "plots=false", "progress=false",
                "reporting.phoenix.enabled=false", f"hydra.run.dir={run_dir}", *extra]

    env = {**os.environ, "MEMEVAL_CACHE_DIR": str(tmp_path / "cache")}
    with LoopbackServer(slow_verdict) as server:
        subprocess.run(command(tmp_path / "whole", server), env=env, check=True,
                       capture_output=True, timeout=600)
        broken = tmp_path / "broken"
        child = subprocess.Popen(command(broken, server), env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while not (broken / "checkpoints" / "pass-1.json").exists():
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)  # into pass 2
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert not (broken / "metrics.json").exists()
        done = subprocess.run(command(broken, server, "resume=true"), env=env,
                              capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert without_clock(read_metrics(broken)["passes"]) == without_clock(
        read_metrics(tmp_path / "whole")["passes"])
    pd.testing.assert_frame_equal(decisions_without_clock(broken),
                                  decisions_without_clock(tmp_path / "whole"))
