"""system=http when the daemon misbehaves: refusals, failures, slow answers, a restart mid-pass, a
redirect elsewhere, a dead daemon; and how many turns it is sent at once. No run is ever lost:
every turn comes back as a decision or as a counted error."""

from __future__ import annotations

import _thread
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from memeval.backends.judges.base import NOT_SENT
from memeval.entry import Entry
from memeval.metrics.gate_metrics import SystemFailure
from memeval.registry import ConfigError
from memeval.results.run_dir import read_metrics
from memeval.runner import run_experiment
from memeval.systems.base import SYSTEMS
from memeval.systems.http.client import Daemon
from tests.faults.common import decisions_without_clock, without_clock
from tests.loopback import LoopbackServer, Received, Reply, scripted
from tests.systems.test_http import FakeMemoryd, entries, ingestor

pytestmark = [pytest.mark.faults, pytest.mark.slow]

STORED = Reply(200, {"stage": "stored", "stored": 1})


def turns(n: int) -> list[Entry]:
    return [Entry(f"t{i}", "why?", f"Turn {i}: the cache key is sha256 of the identity and the "
                                   f"text, so a model change misses the cache.", "substantive",
                  "human") for i in range(n)]


def test_server_errors_are_retried_and_a_refusal_is_not(tmp_path: Path) -> None:
    replies = scripted([Reply(503, {"error": "warming up"}), Reply(502, {"error": "proxy"}),
                        STORED, Reply(400, {"error": "assistant_response is required"})], STORED)
    with LoopbackServer(replies) as server:
        gate = ingestor(server, tmp_path)
        rows = list(gate.run_pass(gate.prepare(entries()[:2]), 1))
    assert rows[0].outcome == "stored" and not rows[0].system_error  # third attempt answered
    refused = rows[1]
    assert refused.outcome == "error" and server.hits == 4  # the 400 was not retried
    assert refused.system_error.startswith("HTTP 400 Bad Request from http://127.0.0.1:")
    assert "the daemon refused the request; check the field names under system.ingest " \
           "(server said: {\"error\": \"assistant_response is required\"})" in refused.system_error


def test_a_slow_answer_times_out_and_the_retry_gets_the_verdict(tmp_path: Path) -> None:
    slow = Reply(200, {"stage": "stored", "stored": 1}, delay_s=1.0)
    with LoopbackServer(scripted([slow], STORED)) as server:
        gate = ingestor(server, tmp_path, timeout_s=0.2)
        (row,) = gate.run_pass(gate.prepare(entries()[1:2]), 1)
    assert row.outcome == "stored" and server.hits == 2


def test_a_daemon_restarted_mid_pass_loses_no_turn(tmp_path: Path) -> None:
    """Stopped after the 4th turn, listening again on the same port a moment later: the turns
    sent meanwhile are retried through, or counted as errors; all 12 come back."""
    fake = FakeMemoryd()
    server = LoopbackServer(fake).start()
    port = server.port
    restarted: list[LoopbackServer] = []

    def stop_then_restart(request: Received) -> Reply:
        reply = fake(request)
        if request.path == "/api/ingest" and len(fake.memories) == 4 and not restarted:
            restarted.append(server)  # once
            threading.Thread(target=outage, daemon=True).start()
        return reply

    def outage() -> None:
        server.stop()
        restarted.append(LoopbackServer(fake, port=port).start())

    server.responder = stop_then_restart
    slept: list[float] = []
    try:
        cfg_gate = ingestor(server, tmp_path, max_retries=6)
        cfg_gate.daemon._sleep = lambda s: (slept.append(s), threading.Event().wait(0.05))
        rows = list(cfg_gate.run_pass(cfg_gate.prepare(turns(12)), 1))
    finally:
        for each in restarted[1:]:
            each.stop()
        server.stop()
    assert [r.entry_id for r in rows] == [f"t{i}" for i in range(12)]
    assert all(r.outcome == "stored" or r.system_error for r in rows)
    assert sum(r.outcome == "stored" for r in rows) >= 4 and len(restarted) == 2


def test_a_dead_daemon_opens_the_breaker_and_nothing_more_is_sent(tmp_path: Path) -> None:
    with LoopbackServer(lambda _: Reply(500, {"error": "database down"})) as server:
        gate = ingestor(server, tmp_path, max_retries=1, breaker_after=2)
        rows = list(gate.run_pass(gate.prepare(turns(6)), 1))
        assert server.hits == 4  # two turns, two attempts each
    assert all(r.outcome == "error" for r in rows)
    assert rows[0].system_error.startswith("HTTP 500 Internal Server Error after 2 attempt(s)")
    assert all(r.system_error == NOT_SENT + rows[1].system_error for r in rows[2:])


def test_a_redirect_to_another_host_is_not_followed(tmp_path: Path) -> None:
    with LoopbackServer(lambda _: STORED) as elsewhere:
        moved = Reply(307, {}, headers={"location": f"{elsewhere.base_url}/api/ingest"})
        with LoopbackServer(lambda _: moved) as server:
            gate = ingestor(server, tmp_path)
            (row,) = gate.run_pass(gate.prepare(entries()[1:2]), 1)
        assert elsewhere.hits == 0
    assert row.outcome == "error"
    assert "HTTP 307 Temporary Redirect from http://127.0.0.1:" in row.system_error
    assert "a redirect, and memeval follows none" in row.system_error


@pytest.mark.parametrize("limit", [1, 3])
def test_no_more_turns_are_in_flight_than_max_concurrency(tmp_path: Path, limit: int) -> None:
    fake = FakeMemoryd(hold=limit)  # each turn waits until `limit` are in flight
    with LoopbackServer(fake) as server:
        gate = ingestor(server, tmp_path, max_concurrency=limit)
        rows = list(gate.run_pass(gate.prepare(turns(9)), 1))
    assert fake.max_in_flight == limit
    assert [r.entry_id for r in rows] == [f"t{i}" for i in range(9)]  # yielded in order
    assert all(r.outcome == "stored" for r in rows)


def test_a_failed_wipe_stops_the_pass_before_any_turn(tmp_path: Path) -> None:
    def no_list(request: Received) -> Reply:
        return Reply(500, {"error": "store offline"}) if request.method == "GET" else STORED

    with LoopbackServer(no_list) as server:
        gate = ingestor(server, tmp_path, max_retries=0)
        with pytest.raises(SystemFailure, match=r"could not be reset before the pass: HTTP 500 "):
            gate.restart(wipe_memories=True)
        assert all(r.method == "GET" for r in server.requests)


def test_a_delete_that_deletes_nothing_fails_instead_of_looping(tmp_path: Path) -> None:
    def stuck(request: Received) -> Reply:
        return Reply(200, [{"id": "m1"}]) if request.method == "GET" else Reply(200, {})

    with LoopbackServer(stuck) as server:
        gate = ingestor(server, tmp_path)
        with pytest.raises(SystemFailure, match=r"still listed after DELETE .*/api/memories/m1"):
            gate.restart(wipe_memories=True)


def test_a_daemon_listing_new_memories_every_time_fails_the_wipe_instead_of_looping(
        tmp_path: Path) -> None:
    listed = iter(range(10**6))

    def endless(request: Received) -> Reply:
        return Reply(200, [{"id": f"m{next(listed)}"}]) if request.method == "GET" else \
            Reply(200, {})

    with LoopbackServer(endless) as server:
        gate = ingestor(server, tmp_path, max_list_pages=3)
        with pytest.raises(SystemFailure, match=r"still listed at .*/api/memories after 3 rounds "
                                                r"of listing and deleting \(3 deleted\)"):
            gate.restart(wipe_memories=True)
    assert server.hits == 7  # four lists, three deletes


@pytest.mark.parametrize(("reply", "said"), [
    (Reply(200, text='{"stage": "stored", "stored": NaN}'), "NaN where JSON allows only numbers"),
    (Reply(200, text='{"stage": ' * 70 + '"stored"' + "}" * 70), "nested deeper than 64 levels"),
    (Reply(200, text="[" * 100_000 + "]" * 100_000), "nested deeper than 64 levels"),
    (Reply(200, {"stage": "stored", "stored": 1, "pad": "x" * 400_000}),
     "an answer larger than 300000 bytes"),
    (Reply(200, {"stage": "stored", "stored": 1, "pad": "x" * 300}, trickle_s=0.02),
     "the server did not answer in time: raise system.timeout_s or check system.base_url (no "
     "whole answer within 0.5 s)"),
], ids=["nan", "deep-stage", "deep-body", "huge", "trickle"])
def test_a_hostile_answer_is_a_turn_without_a_verdict_in_one_line(
        reply: Reply, said: str, tmp_path: Path) -> None:
    """Not counted as kept, not a traceback, not a hang: an error naming the endpoint."""
    with LoopbackServer(lambda _: reply) as server:
        gate = ingestor(server, tmp_path, timeout_s=0.5, max_retries=0,
                        max_body_mb=300_000 / 2**20)
        (row,) = gate.run_pass(gate.prepare(entries()[1:2]), 1)
    assert row.outcome == "error" and not row.retained
    assert said in row.system_error and f"{server.base_url}/api/ingest" in row.system_error
    assert "\n" not in row.system_error and "resume" not in row.system_error


def test_answers_that_never_map_open_the_breaker_as_dead_requests_do(tmp_path: Path) -> None:
    """Every request answers, but with a stage no mapping knows: after breaker_after turns in a
    row without a verdict nothing more is sent, instead of every turn reaching the daemon."""
    with LoopbackServer(lambda _: Reply(200, {"stage": "pondering", "stored": 0})) as server:
        gate = ingestor(server, tmp_path, breaker_after=3)
        rows = list(gate.run_pass(gate.prepare(turns(12)), 1))
    assert server.hits == 3 and all(r.outcome == "error" for r in rows)
    assert all(r.system_error.startswith(NOT_SENT) for r in rows[3:])
    assert "stage 'pondering', which system.ingest.stages does not map" in rows[0].system_error


def test_a_preflight_against_a_stalling_daemon_ends_within_its_deadlines() -> None:
    """Every answer trickles: the probes that need only a status never read the body, and the
    memory listing gives up at system.timeout_s: a ConfigError, not a hang."""
    stalling = Reply(200, [{"id": "m1"}] * 50, trickle_s=0.05)
    with LoopbackServer(lambda _: stalling) as server:
        started = time.monotonic()
        with pytest.raises(ConfigError, match=r"failed its preflight: ReadTimeout .*\(no whole "
                                              r"answer within 0\.5 s\)"):
            SYSTEMS.build({"name": "http", "base_url": server.base_url, "timeout_s": 0.5,
                           "max_retries": 0}, ctx=None)
        assert time.monotonic() - started < 5.0  # one listing's answer takes 35 s


def test_a_memory_id_cannot_climb_out_of_base_url(tmp_path: Path) -> None:
    seen: list[Any] = []

    def sly(request: Received) -> Reply:
        seen.append(request.path)
        return Reply(200, [{"id": "../../admin"}]) if request.method == "GET" else Reply(200, {})

    with LoopbackServer(sly) as server:
        gate = ingestor(server, tmp_path)
        with pytest.raises(SystemFailure):
            gate.restart(wipe_memories=True)
    assert "/api/memories/..%2F..%2Fadmin" in seen and "/admin" not in seen


def test_an_interrupted_run_resumes_by_wiping_and_replaying_the_unfinished_pass(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C in pass 2: the resumed run keeps pass 1 from its checkpoint, wipes what the
    unfinished pass left in the daemon and replays it, counting no turn twice."""
    fake = FakeMemoryd()
    with LoopbackServer(fake) as server:
        settings = ("+experiment=three_pass", "system=http", f"system.base_url={server.base_url}",
                    "dataset.limit=40", "plots=false")
        whole = tmp_path / "whole"
        run_experiment(fast_config(*settings), whole)
        expected = read_metrics(whole)
        real, sent = Daemon.send_turn, {"n": 0}

        def send_turn(self: Daemon, payload: Any) -> Any:
            sent["n"] += 1
            if sent["n"] == 40 + 15:  # the user's Ctrl-C, which only the main thread receives
                _thread.interrupt_main()
            return real(self, payload)

        broken = tmp_path / "broken"
        # a session started in the background inherits SIGINT ignored, and then a simulated
        # Ctrl-C does nothing: Python's own handler stands in for a terminal's
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            with monkeypatch.context() as patch:
                patch.setattr(Daemon, "send_turn", send_turn)
                with pytest.raises(KeyboardInterrupt):
                    run_experiment(fast_config(*settings), broken)
        finally:
            signal.signal(signal.SIGINT, previous)
        assert len(fake.memories) > 0  # the unfinished pass left memories behind
        run_experiment(fast_config(*settings, "resume=true"), broken)
        resumed = read_metrics(broken)
    # this daemon's verdicts depend on the memories it holds only, so a replay that wiped
    # what the unfinished pass left gives the uninterrupted run's figures
    assert without_clock(resumed["passes"]) == without_clock(expected["passes"])
    decisions = decisions_without_clock(broken)
    assert not decisions.duplicated(["arm", "phase", "pass_no", "entry_id"]).any()
    assert len(fake.memories) == expected["passes"][2]["stage_counts"]["stored"]
