"""Services failing under a running replay: an embedding server going down, a judge that
rate-limits, errs and times out, a judge that dies. Each run completes, loses no entry, and says
in its metrics what degraded; one that lost too much of a service fails once its results are
written."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from memeval.backends.embedders.base import EmbeddingError
from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.backends.judges.base import NOT_SENT, JudgeError
from memeval.results.run_dir import read_decisions, read_metrics
from memeval.runner import run_experiment
from tests.faults.common import chat_verdict, without_clock
from tests.loopback import LoopbackServer, Received, Reply

pytestmark = [pytest.mark.faults, pytest.mark.integration]

ENTRIES = 288  # the bundled labelled set
HASHING = HashingEmbedder(64)


def embeddings_reply(request: Received) -> Reply:
    """The OpenAI /v1/embeddings wire format, vectors from memeval's hashing embedder."""
    vectors = HASHING.embed(request.body["input"])
    data = [{"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in enumerate(vectors)]
    return Reply(200, {"object": "list", "data": data, "model": request.body["model"],
                       "usage": {"prompt_tokens": 1, "total_tokens": 1}})


def down_after(healthy: int, answer: Callable[[Received], Reply]) -> Callable[[Received], Reply]:
    """Answers `healthy` requests, then 503 for good: a server that fell over mid-run."""
    seen = {"n": 0}
    lock = threading.Lock()

    def respond(request: Received) -> Reply:
        with lock:
            seen["n"] += 1
            alive = seen["n"] <= healthy
        return answer(request) if alive else Reply(503, {"error": "server is down"})

    return respond


def judge_overrides(server: LoopbackServer, **extra: Any) -> list[str]:
    settings = {"judge": "openai_chat", "judge.base_url": f"{server.base_url}/v1",
                "judge.max_retries": 3, "judge.timeout_s": 0.5, **extra}
    return [f"{k}={v}" for k, v in settings.items()]


def test_embedding_server_down_mid_run_degrades_to_the_judge_and_loses_nothing(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        caplog: pytest.LogCaptureFixture) -> None:
    # the preflight's request, then 8 requests of 32 embed the first 256 texts (no cost
    # estimate first: its sample would take requests of the count)
    with LoopbackServer(down_after(9, embeddings_reply)) as server:
        cfg = fast_config("+experiment=three_pass", "plots=false", "embedder=openai_http",
                          f"embedder.base_url={server.base_url}/v1", "embedder.batch_size=32",
                          "embedder.max_retries=0", "cost_warning_s=null")
        with caplog.at_level(logging.WARNING), pytest.raises(EmbeddingError) as failed:
            run_experiment(cfg, tmp_path / "run")
    url = f"{server.base_url}/v1/embeddings"
    # 32 of 288 entries (11%) could not be embedded: more than the 5% a run may lose, so it fails
    # once its results are written, naming the server
    assert str(failed.value).startswith("embedding: 32 of 288 entries failed (11%")
    assert "gate.max_embedding_failure_share=0.05" in str(failed.value) and url in str(failed.value)
    metrics = read_metrics(tmp_path / "run")
    assert metrics["failures"] == [str(failed.value)]
    # the server fell before the last 32; every warning about it names it
    assert "embedding 32 of 32 entries failed" in caplog.text
    warned = [r.getMessage() for r in caplog.records if "embed" in r.getMessage()
              and r.name.startswith(("memeval.engine.gate.gate", "memeval.backends.embedders"))]
    assert warned and all(url in message for message in warned)
    assert all(p["embedding_errors"] == 32 for p in metrics["passes"])
    unscored = [p["degraded"]["content_score_skipped"].get("no embedding", 0)
                 for p in metrics["passes"]]
    # of the 32, those the length gate or pre-filter did not already drop; pass 1 began with
    # no scorer, so some of its entries were skipped for that reason instead
    assert 0 < unscored[0] <= unscored[1] == unscored[2] <= 32
    for summary in metrics["passes"]:
        assert summary["entries"] == ENTRIES
        assert summary["degraded"]["stored_without_embedding"] > 0
    decisions = read_decisions(tmp_path / "run")
    assert len(decisions) == 3 * ENTRIES and not decisions.duplicated(["pass_no", "entry_id"]).any()
    passed_unscored = decisions[decisions["scorer_note"] == "skipped: no embedding"]
    assert passed_unscored["judge_called"].all()  # judged, never dropped unseen


def test_a_judge_that_rate_limits_errs_and_stalls_changes_no_result(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """429s (with retry-after), 503s and a timeout, every one retried: the run's results equal
    those against a healthy server, and no entry is lost or judged twice."""
    faults = {3: Reply(429, {"error": "rate limited"}, headers={"retry-after": "0"}),
              7: Reply(503, {"error": "overloaded"}), 11: Reply(502, text="bad gateway")}
    seen = {"n": 0}
    lock = threading.Lock()

    def flaky(request: Received) -> Reply:
        with lock:
            seen["n"] += 1
            turn = seen["n"] % 40
        if turn == 15:
            time.sleep(1.0)  # longer than judge.timeout_s: the client gives up and retries
        return faults.get(turn) or chat_verdict(request)

    runs = {}
    for name, responder in (("healthy", chat_verdict), ("flaky", flaky)):
        with LoopbackServer(responder) as server:
            cfg = fast_config("+experiment=three_pass", "plots=false",
                              f"cache_dir={tmp_path / name / 'cache'}", *judge_overrides(server))
            run_experiment(cfg, tmp_path / name / "run")
            runs[name] = (read_metrics(tmp_path / name / "run"), server.hits)
    (healthy, healthy_hits), (flaky_metrics, flaky_hits) = runs["healthy"], runs["flaky"]
    assert flaky_hits > healthy_hits  # the faults happened and were retried
    assert all(p["judge_errors"] == 0 for p in flaky_metrics["passes"])
    assert without_clock(flaky_metrics["passes"]) == without_clock(healthy["passes"])


def test_a_judge_that_dies_mid_run_keeps_the_entries_and_counts_the_errors(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """gate.stages.judge.on_error=store: an entry the judge could not see is kept, not lost. After
    judge.breaker_after (5) failures in a row nothing more is sent, and the run, its results
    written, fails naming the cause."""
    with LoopbackServer(down_after(60, chat_verdict)) as server:
        with pytest.raises(JudgeError) as info:
            # a deadline no loaded machine misses on loopback: only the server's 503s may fail
            # (a 0.5 s write that timed out under a busy suite broke the run of failures)
            run_experiment(fast_config("+experiment=three_pass", "plots=false",
                                       *judge_overrides(server, **{"judge.max_retries": 0,
                                                                   "judge.timeout_s": 10.0})),
                           tmp_path / "run")
        # the preflight, 59 verdicts, 5 failures; then nothing, passes 2-3 included (what the
        # judge answered before comes from its cache)
        assert server.hits == 1 + 59 + 5
    cause = f"HTTP 503 Service Unavailable after 1 attempt(s) from {server.base_url}/v1/chat"
    assert str(info.value).startswith("judge: ") and cause in str(info.value)
    assert "not sent once the circuit breaker opened" in str(info.value)
    metrics = read_metrics(tmp_path / "run")
    first = metrics["passes"][0]
    assert first["judge_errors"] == first["judge_calls"] - 59
    assert first["judge_short_circuited"] == first["judge_errors"] - 5
    assert first["judge_errors"] > 0 and first["entries"] == ENTRIES
    assert sum(first["judge_error_reasons"].values()) == first["judge_errors"]
    # every entry that reached the dead judge was stored: none silently dropped
    decisions = read_decisions(tmp_path / "run")
    failed = decisions[decisions["judge_error"] != ""]
    assert len(failed) > 0 and set(failed["outcome"]) <= {"stored", "dedup", "noise_check"}
    assert failed["judge_error"].str.removeprefix(NOT_SENT).str.startswith(cause).all()
