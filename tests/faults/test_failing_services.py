"""A judge or embedder that fails never ends in a silent success. Real loopback servers speaking
the Anthropic Messages and OpenAI wire formats fail every call in each way a service can (500,
malformed JSON, an empty body, the wrong shape, a blank reply, 401), hang, or are not there; a key
is missing. The preflight stops such a run before any work (exit 2, the fix named); one that gets
past it fails once its results are written, naming the cause."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import DictConfig

from memeval.backends.embedders.base import EmbeddingError
from memeval.backends.judges.base import NOT_SENT, JudgeError
from memeval.registry import ConfigError
from memeval.results.run_dir import METRICS, read_decisions, read_metrics
from memeval.runner import run_experiment
from tests.backends.test_http_judges import BLANK, FAILURES, anthropic_reply
from tests.faults.common import chat_verdict
from tests.loopback import LoopbackServer, Received, Reply
from tests.test_cli import unwrapped

pytestmark = [pytest.mark.faults, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "MEMEVAL_TEST_JUDGE_KEY"
SMALL = ("+experiment=three_pass", "experiment.passes=1", "dataset.limit=40", "plots=false")
BREAKER = 5  # judge.breaker_after's default
PATHS = {"anthropic": "/v1/messages", "openai_chat": "/v1/chat/completions"}


def failing(provider: str, mode: str) -> Callable[[Received], Reply]:
    reply = FAILURES[mode][0] or BLANK["anthropic" if provider == "anthropic" else "openai"]
    return lambda request: reply


def judge_settings(provider: str, server: LoopbackServer, *extra: str) -> list[str]:
    base = server.base_url if provider == "anthropic" else f"{server.base_url}/v1"
    return [f"judge={provider}", f"judge.base_url={base}", f"judge.api_key_env={KEY_ENV}",
            "judge.max_retries=1", *extra]


def cause(provider: str, mode: str, server: LoopbackServer) -> str:
    return FAILURES[mode][1].replace("URL", server.base_url + PATHS[provider])


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-123")


@pytest.mark.parametrize("provider", sorted(PATHS))
@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_a_judge_failing_every_call_fails_the_run_once_its_results_are_written(
        provider: str, mode: str, tmp_path: Path,
        fast_config: Callable[..., DictConfig]) -> None:
    """Past the preflight (switched off here), every call fails: the breaker stops sending after
    five, every decision records why, and the run fails naming the cause."""
    run = tmp_path / "run"
    with LoopbackServer(failing(provider, mode)) as server:
        with pytest.raises(JudgeError) as info:
            run_experiment(fast_config(*SMALL, *judge_settings(provider, server,
                                                               "judge.preflight=false")), run)
        attempts = 2 if mode == "500 always" else 1  # only the 500 is retried
        assert server.hits == BREAKER * attempts
    why = cause(provider, mode, server)
    message = str(info.value)
    assert message.startswith("judge: ") and why in message
    assert "more than gate.stages.judge.max_error_share=0.05" in message
    metrics = read_metrics(run)  # written before the run failed
    assert metrics["failures"] == [message]
    summary = metrics["passes"][0]
    assert summary["judge_errors"] == summary["judge_calls"] > BREAKER
    assert summary["judge_short_circuited"] == summary["judge_calls"] - BREAKER
    assert all(why in reason for reason in summary["judge_error_reasons"])
    called = read_decisions(run).query("judge_called")
    assert len(called) == summary["judge_calls"]
    assert called["judge_error"].str.removeprefix(NOT_SENT).str.contains(why, regex=False).all()


@pytest.mark.parametrize("provider", sorted(PATHS))
@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_the_preflight_stops_a_failing_judge_before_any_work(
        provider: str, mode: str, tmp_path: Path,
        fast_config: Callable[..., DictConfig]) -> None:
    run = tmp_path / "run"
    with LoopbackServer(failing(provider, mode)) as server:
        settings = fast_config(*SMALL, *judge_settings(provider, server))
        if mode == "blank reply":  # a one-token probe may well come back blank: not a fault
            with pytest.raises(JudgeError, match="blank reply"):
                run_experiment(settings, run)
            return
        with pytest.raises(ConfigError) as info:
            run_experiment(settings, run)
        assert server.hits == (2 if mode == "500 always" else 1)
    assert str(info.value).startswith(f"judge={provider} failed its preflight: ")
    assert cause(provider, mode, server) in str(info.value)
    assert not (run / METRICS).exists() and not (run / "state").exists()


def test_a_hanging_judge_costs_breaker_after_timeouts_not_one_per_entry(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    hang = Reply(200, {}, delay_s=3.0)
    with LoopbackServer(lambda request: hang) as server:
        settings = judge_settings("openai_chat", server, "judge.timeout_s=0.2")
        with pytest.raises(ConfigError, match="ReadTimeout after 2 attempt"):
            run_experiment(fast_config(*SMALL, *settings), tmp_path / "checked")
        assert server.hits == 2
        with pytest.raises(JudgeError) as info:
            run_experiment(fast_config(*SMALL, *settings, "judge.preflight=false"),
                           tmp_path / "run")
        assert server.hits == 2 + BREAKER * 2  # then no request, for the other 26 entries
    assert "ReadTimeout after 2 attempt(s)" in str(info.value)
    assert "raise judge.timeout_s" in str(info.value)
    summary = read_metrics(tmp_path / "run")["passes"][0]
    assert summary["judge_short_circuited"] == summary["judge_calls"] - BREAKER > 0


def test_a_key_the_server_echoes_reaches_no_record(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-ant-api03-" + "Qw9" * 15
    monkeypatch.setenv(KEY_ENV, key)

    def refuse(request: Received) -> Reply:
        return Reply(401, {"error": f"invalid x-api-key {request.headers['x-api-key']}"})

    run = tmp_path / "run"
    with LoopbackServer(refuse) as server, pytest.raises(JudgeError) as info:
        run_experiment(fast_config(*SMALL, *judge_settings("anthropic", server,
                                                           "judge.preflight=false")), run)
    printed = capsys.readouterr()
    reasons = read_decisions(run)["judge_error"]
    assert reasons.str.contains("[REDACTED:anthropic_key]", regex=False).any()
    for text in (str(info.value), printed.out, printed.err, (run / METRICS).read_text(),
                 reasons.str.cat()):
        assert key not in text


def test_a_warm_judge_cache_replays_offline_with_the_preflight_off(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    with LoopbackServer(chat_verdict) as server:
        settings = [*SMALL, *judge_settings("openai_chat", server, "judge.max_retries=0")]
        run_experiment(fast_config(*settings), tmp_path / "warm")
    # the server is gone: the preflight says so, naming the URL and the switch
    with pytest.raises(ConfigError) as info:
        run_experiment(fast_config(*settings), tmp_path / "refused")
    assert f"from {server.base_url}/v1/chat/completions" in str(info.value)
    assert "judge.preflight=false" in str(info.value)
    run_experiment(fast_config(*settings, "judge.preflight=false"), tmp_path / "offline")
    summary = read_metrics(tmp_path / "offline")["passes"][0]
    assert summary["judge_errors"] == 0 and summary["judge_cached"] == summary["judge_calls"] > 0
    warm = read_metrics(tmp_path / "warm")["passes"][0]
    assert summary["substantive_recall"] == warm["substantive_recall"]


def test_a_dead_embedder_past_the_preflight_fails_the_run_and_the_footer_says_so(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    gone = LoopbackServer(chat_verdict).start()
    gone.stop()
    url = f"{gone.base_url}/v1"
    with pytest.raises(EmbeddingError) as info:
        run_experiment(fast_config(*SMALL, "embedder=openai_http", f"embedder.base_url={url}",
                                   "embedder.max_retries=0", "embedder.preflight=false"),
                       tmp_path / "run")
    assert str(info.value).startswith("embedding: 40 of 40 entries failed (100%")
    assert f"from {url}/embeddings: is the server running? check embedder.base_url" in str(
        info.value)
    printed = capsys.readouterr().out
    footer = next(line for line in printed.splitlines() if line.startswith("content-score"))
    assert footer.startswith("content-score threshold: none; the stage was skipped for the "
                             "whole run") and "quantile" not in footer
    assert read_metrics(tmp_path / "run")["passes"][0]["embedding_errors"] == 40


# -- through the command line -----------------------------------------------------------------


def memeval_run(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
                ) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "MEMEVAL_CACHE_DIR": str(tmp_path / "cache"),
                   "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **(env or {})}
    environment.pop("PHOENIX_COLLECTOR_ENDPOINT", None)
    return subprocess.run(
        [sys.executable, "-m", "memeval", "run", *SMALL, "embedder=hashing", "progress=false",
         "reporting.phoenix.endpoint=null", f"hydra.run.dir={tmp_path / 'run'}", *args],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600)


@pytest.mark.bad_input
def test_cli_no_api_key_exits_2_naming_the_variable_before_any_request(tmp_path: Path) -> None:
    with LoopbackServer(lambda request: anthropic_reply("SKIP")) as server:
        env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
        done = subprocess.run(
            [sys.executable, "-m", "memeval", "run", *SMALL, "embedder=hashing",
             "judge=anthropic", f"judge.base_url={server.base_url}", "progress=false",
             "reporting.phoenix.endpoint=null", f"hydra.run.dir={tmp_path / 'run'}"],
            cwd=tmp_path, env={**env, "MEMEVAL_CACHE_DIR": str(tmp_path / "cache")},
            capture_output=True, text=True, timeout=600)
        assert server.hits == 0
    assert done.returncode == 2, done.stderr
    assert "environment variable ANTHROPIC_API_KEY is not set" in unwrapped(done.stderr)
    assert "Traceback" not in done.stderr and not (tmp_path / "run" / METRICS).exists()


@pytest.mark.bad_input
def test_cli_a_refused_key_exits_2_naming_its_variable(tmp_path: Path) -> None:
    refused = Reply(401, {"type": "error", "error": {"type": "authentication_error",
                                                     "message": "invalid x-api-key"}})
    with LoopbackServer(lambda request: refused) as server:
        done = memeval_run(tmp_path, "judge=anthropic", f"judge.base_url={server.base_url}",
                           env={"ANTHROPIC_API_KEY": "sk-wrong"})
    assert done.returncode == 2, done.stderr
    assert (f"HTTP 401 Unauthorized from {server.base_url}/v1/messages: check the key in "
            f"ANTHROPIC_API_KEY") in unwrapped(done.stderr)


@pytest.mark.bad_input
def test_cli_an_unreachable_embedder_exits_2_naming_the_url(tmp_path: Path) -> None:
    gone = LoopbackServer(chat_verdict).start()
    gone.stop()
    url = f"{gone.base_url}/v1"
    done = memeval_run(tmp_path, "embedder=openai_http", f"embedder.base_url={url}",
                       "embedder.max_retries=0")
    assert done.returncode == 2, done.stderr
    said = unwrapped(done.stderr)
    assert f"{url}/embeddings: is the server running? check embedder.base_url" in said
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_cli_a_judge_failing_past_the_preflight_exits_non_zero_with_its_results(
        tmp_path: Path) -> None:
    """The table shows the errors and their reason; metrics.json holds them and the failure."""
    answers = iter([anthropic_reply("OK")])  # the preflight's reply, then blank ones

    def respond(request: Received) -> Reply:
        return next(answers, BLANK["anthropic"])

    with LoopbackServer(respond) as server:
        done = memeval_run(tmp_path, "judge=anthropic", f"judge.base_url={server.base_url}",
                           env={"ANTHROPIC_API_KEY": "sk-test"})
    assert done.returncode == 2, done.stderr
    blank = f"blank reply from {server.base_url}/v1/messages"
    assert "memeval: judge: " in done.stderr and blank in done.stderr
    assert "judge errors (calls): pass 1: " in done.stdout and blank in done.stdout
    metrics = json.loads((tmp_path / "run" / METRICS).read_text())
    assert len(metrics["failures"]) == 1 and blank in metrics["failures"][0]
    decisions = pd.read_parquet(tmp_path / "run" / "decisions.parquet")
    assert decisions.loc[decisions["judge_called"], "judge_error"].str.len().gt(0).all()
