"""An interrupted run resumes from its last finished pass and ends exactly as an uninterrupted run:
same metrics, same decisions, none counted twice."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import DictConfig

from memeval.backends.judges.base import Verdict
from memeval.backends.judges.labels import LabelJudge
from memeval.entry import Entry
from memeval.registry import ConfigError
from memeval.results.run_dir import read_metrics
from memeval.runner import run_experiment
from tests.faults.common import chat_verdict, decisions_without_clock, without_clock
from tests.loopback import LoopbackServer, Received, Reply
from tests.test_cli import unwrapped

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
    assert "1 finished step(s) saved" in capsys.readouterr().err
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
                "judge.cache=false", "plots=false", "progress=false", "dataset.limit=120",
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
        time.sleep(0.2)  # into pass 2
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


# --- checkpoints damaged or incomplete on disk: refused by name, never resumed silently wrong ---

SMALL = ("+experiment=three_pass", "plots=false", "dataset.limit=120")


def _interrupted_in_pass_3(run_dir: Path, fast_config: Callable[..., DictConfig],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        interrupt_after(patch, 150)  # passes 1 and 2 finish
        with pytest.raises(Interrupt):
            run_experiment(fast_config(*SMALL), run_dir)
    assert {p.name for p in (run_dir / "checkpoints").glob("*.json")} == {"pass-1.json",
                                                                        "pass-2.json"}


def _rewrite(path: Path, edit: Callable[[bytes], bytes]) -> None:
    before = path.read_bytes()
    after = edit(before)
    assert after != before
    path.write_bytes(after)


def _flip_retained(decisions: bytes) -> bytes:
    return decisions.replace(b'"retained": true', b'"retained": false', 1)


# damage, then the file the refusal must name and what it must say about it
DAMAGE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "emptied store copy": (lambda c: (c / "pass-2" / "rejection_store.jsonl").write_bytes(b""),
                           "pass-2/rejection_store.jsonl", "differs from what pass-2.json"),
    "missing store copy": (lambda c: (c / "pass-2" / "accept_store.jsonl").unlink(),
                           "pass-2/accept_store.jsonl", "is missing, and pass-2.json relies on it"),
    "store copy of an earlier pass": (lambda c: (c / "pass-1" / "accept_store.jsonl").unlink(),
                                      "pass-1/accept_store.jsonl", "is missing"),
    "missing decisions": (lambda c: (c / "pass-1" / "decisions.json").unlink(),
                          "pass-1/decisions.json", "is missing"),
    "one decision altered": (lambda c: _rewrite(c / "pass-2" / "decisions.json", _flip_retained),
                             "pass-2/decisions.json", "differs from what pass-2.json"),
    "settings altered": (lambda c: _rewrite(c / "settings.yaml", lambda b: b + b"# edited\n"),
                         "settings.yaml", "differs from what pass-1.json"),
    "missing settings": (lambda c: (c / "settings.yaml").unlink(), "settings.yaml", "is missing"),
    # cut inside the first key, so the parser's complaint does not depend on the file's length
    "truncated pass file": (lambda c: _rewrite(c / "pass-1.json", lambda b: b[: b.index(b'"') + 2]),
                            "pass-1.json", "is damaged (Unterminated string"),
    "pass file not a checkpoint": (lambda c: (c / "pass-2.json").write_text("[]"),
                                   "pass-2.json", "is damaged (not a pass checkpoint)"),
    "garbage settings": (lambda c: (c / "settings.yaml").write_text("seed: [1, 2\n"),
                         "settings.yaml", "is damaged (expected ',' or ']'"),
    "pass file nested too deep": (
        lambda c: (c / "pass-1.json").write_bytes(b"[" * 100_000 + b"]" * 100_000),
        "pass-1.json", "is damaged (JSON nested deeper than 64 levels)"),
}

# YAML that expands: an alias loop, and five levels of aliases ("billion laughs"), 96 s to parse
LAUGHS = b"a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n".encode()
    for i in range(5))


def test_resume_refuses_missing_or_changed_checkpoint_files_naming_them(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An emptied store copy used to resume silently (pass 3 then learnt from empty stores)."""
    original = tmp_path / "original"
    _interrupted_in_pass_3(original, fast_config, monkeypatch)
    for case, (damage, name, says) in DAMAGE.items():
        run_dir = tmp_path / case.replace(" ", "-")
        shutil.copytree(original, run_dir)
        damage(run_dir / "checkpoints")
        state = {p.name: p.read_bytes() for p in (run_dir / "state").iterdir()}
        with pytest.raises(ConfigError) as caught:
            run_experiment(fast_config(*SMALL, "resume=true"), run_dir)
        message = str(caught.value)
        assert f"{run_dir / 'checkpoints' / name} {says}" in message, (case, message)
        assert "start over in a new run directory" in message and "\n" not in message, case
        # refused before any work: the stores are as the interrupted run left them
        assert {p.name: p.read_bytes() for p in (run_dir / "state").iterdir()} == state, case
        assert not (run_dir / "metrics.json").exists()
    run_experiment(fast_config(*SMALL, "resume=true"), original)  # the intact copy resumes
    assert [p["pass"] for p in read_metrics(original)["passes"]] == [1, 2, 3]


def test_garbage_settings_before_any_pass_finished_are_named(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_after(patch, 20)  # in pass 1: settings.yaml is the only checkpoint file
        with pytest.raises(Interrupt):
            run_experiment(fast_config(*SMALL), run_dir)
    settings = run_dir / "checkpoints" / "settings.yaml"
    for garbage, says in ((b"\x00\x01 binary", "unacceptable character #x0000"),
                          (b"\xff\xfe not utf-8", "can't decode byte 0xff"),
                          (b"just words", "not a run's settings"),
                          (b"seed: &loop [*loop]\n", "YAML anchors or aliases"),
                          (LAUGHS, "YAML anchors or aliases"),
                          (b"seed: " + b"[" * 50_000 + b"]" * 50_000, "nested too deeply"),
                          (b"#" * (2**20 + 1), "over the 1048576 a checkpoint file may take")):
        settings.write_bytes(garbage)
        with pytest.raises(ConfigError, match=f"^{re.escape(str(settings))} is damaged "
                                              f"\\([^)]*{re.escape(says)}"):
            run_experiment(fast_config(*SMALL, "resume=true"), run_dir)


def test_a_damaged_checkpoint_exits_2_on_the_command_line_without_a_traceback(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = tmp_path / "run"
    _interrupted_in_pass_3(run_dir, fast_config, monkeypatch)
    (run_dir / "checkpoints" / "pass-2" / "rejection_store.jsonl").write_bytes(b"")
    done = subprocess.run(
        [sys.executable, "-m", "memeval", "run", "embedder=hashing",
         f"cache_dir={tmp_path / 'cache'}", "progress=false", "reporting.phoenix.endpoint=null",
         "bootstrap=200", *SMALL, "resume=true", f"hydra.run.dir={run_dir}"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"{run_dir}/checkpoints/pass-2/rejection_store.jsonl differs" in unwrapped(done.stderr)


# --- SIGTERM unwinds like Ctrl-C; temp files of a SIGKILL are cleared on resume ---


def terminate_after(monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    """The oracle judge sends this process SIGTERM on its `calls`+1-th verdict, mid-pass."""
    real = LabelJudge.judge
    seen = {"n": 0}

    def judge(self: LabelJudge, entry: Entry, user_prompt: str, text: str) -> Verdict:
        seen["n"] += 1
        if seen["n"] == calls + 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(self, entry, user_prompt, text)

    monkeypatch.setattr(LabelJudge, "judge", judge)


def test_sigterm_prints_the_resume_hint_and_exits_143(
        tmp_path: Path, fast_config: Callable[..., DictConfig], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    whole = tmp_path / "whole"
    run_experiment(fast_config(*SMALL), whole)
    run_dir = tmp_path / "run"
    handler = signal.getsignal(signal.SIGTERM)
    with monkeypatch.context() as patch:
        terminate_after(patch, 150)
        with pytest.raises(SystemExit) as stopped:
            run_experiment(fast_config(*SMALL), run_dir)
    assert stopped.value.code == 143
    assert "add resume=true" in unwrapped(capsys.readouterr().err)
    assert signal.getsignal(signal.SIGTERM) is handler  # restored
    assert not list(run_dir.rglob("*.tmp"))
    # what a SIGKILL mid-rewrite leaves (no handler runs): removed on resume, never read
    orphans = [run_dir / "state" / ".accept_store.jsonl.k3j4h5g6.tmp",
               run_dir / "checkpoints" / ".pass-3.json.0123456789abcdef.tmp"]
    for orphan in orphans:
        orphan.write_text('{"half": ')
    run_experiment(fast_config(*SMALL, "resume=true"), run_dir)
    assert not list(run_dir.rglob("*.tmp"))
    assert without_clock(read_metrics(run_dir)["passes"]) == without_clock(
        read_metrics(whole)["passes"])


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_cli_run_stopped_by_a_signal_says_how_to_resume_without_a_traceback(
        tmp_path: Path, signum: int, code: int) -> None:
    def slow_verdict(request: Received) -> Reply:
        time.sleep(0.01)
        return chat_verdict(request)

    def command(server: LoopbackServer, *extra: str) -> list[str]:
        return [sys.executable, "-m", "memeval", "run", "+experiment=three_pass",
                "embedder=hashing", "judge=openai_chat", f"judge.base_url={server.base_url}/v1",
                "judge.cache=false", "plots=false", "progress=false", "dataset.limit=120",
                "reporting.phoenix.enabled=false", f"hydra.run.dir={run_dir}", *extra]

    run_dir = tmp_path / "run"
    env = {**os.environ, "MEMEVAL_CACHE_DIR": str(tmp_path / "cache")}
    with LoopbackServer(slow_verdict) as server:
        child = subprocess.Popen(  # Ctrl-C reaches it even when this runs as a background job
            command(server), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 300
        while not (run_dir / "checkpoints" / "pass-1.json").exists():
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.2)  # into pass 2
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=60)
        assert child.returncode == code, stderr[-2000:]
        assert "Traceback" not in stderr
        assert f"add resume=true hydra.run.dir={run_dir} to the same command" in unwrapped(stderr)
        assert not list(run_dir.rglob("*.tmp"))
        done = subprocess.run(command(server, "resume=true"), env=env, capture_output=True,
                              text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [p["pass"] for p in read_metrics(run_dir)["passes"]] == [1, 2, 3]
