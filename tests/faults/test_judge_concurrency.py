"""Labelling corpus rows with an HTTP judge: a bounded number of requests in flight, and a 429's
retry-after pauses every worker, not just the one that got it."""

from __future__ import annotations

import threading
import time

import pytest

from memeval.data.labellers import JudgeLabellerConfig, build_judge_labeller
from memeval.entry import Entry
from tests.backends.test_http_judges import openai_reply
from tests.loopback import LoopbackServer, Received, Reply

pytestmark = [pytest.mark.faults, pytest.mark.integration]

ROWS = [Entry(id=f"r{i}", user_prompt="what changed?",
              assistant_response=(f"Row {i}: the retry wrapper in `http_retry.py` backs off."
                                  if i % 3 else f"Row {i}: okay, looking at it now."))
        for i in range(40)]


def labeller(server: LoopbackServer, concurrency: int) -> JudgeLabellerConfig:
    return JudgeLabellerConfig(judge={"name": "openai_chat", "model": "local",
                                      "base_url": f"{server.base_url}/v1", "max_retries": 3,
                                      "cache": False}, max_concurrency=concurrency)


def verdict(request: Received) -> Reply:
    return openai_reply("SKIP" if "okay" in request.body["messages"][-1]["content"] else
                        "A memory.")


def test_requests_in_flight_never_exceed_max_concurrency() -> None:
    lock, state = threading.Lock(), {"now": 0, "peak": 0}

    def slow(request: Received) -> Reply:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return verdict(request)

    with LoopbackServer(slow) as server:
        labelled = build_judge_labeller(labeller(server, 4)).label(ROWS)
    assert state["peak"] == 4  # parallel, and bounded
    assert [e.id for e in labelled] == [e.id for e in ROWS]  # input order kept
    assert [e.label for e in labelled] == ["noise" if i % 3 == 0 else "substantive"
                                           for i in range(len(ROWS))]


def test_a_retry_after_pauses_every_worker() -> None:
    arrivals: list[float] = []
    lock = threading.Lock()
    pause_s = 0.5

    def limited(request: Received) -> Reply:
        with lock:
            arrivals.append(time.monotonic())
            first = len(arrivals) == 1
        if first:
            return Reply(429, {"error": "slow down"}, headers={"retry-after": str(pause_s)})
        time.sleep(0.03)
        return verdict(request)

    with LoopbackServer(limited) as server:
        labelled = build_judge_labeller(labeller(server, 4)).label(ROWS)
    assert len(labelled) == len(ROWS) and len(arrivals) == len(ROWS) + 1
    limited_at = arrivals[0]
    # requests already sent when the 429 came back may land just after it; then nothing until
    # the pause is over (without a shared pause, 3 workers send ~every 30 ms meanwhile)
    quiet = [t for t in arrivals[1:] if limited_at + 0.1 < t < limited_at + pause_s - 0.05]
    assert quiet == []
