"""system=http against a fake daemon speaking memoryd's wire format on loopback: the mapping of
its stages onto memeval's outcomes, the wipe between passes, the capabilities the routes allow,
what reaches the daemon, and the settings refused before any request."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from memeval.engine.gate.gate import Decision, GateConfig
from memeval.entry import Entry
from memeval.metrics.gate_metrics import SystemFailure, pass_metrics, run_failures
from memeval.registry import ConfigError
from memeval.reporting.table import pass_table
from memeval.results.result import PassMetrics
from memeval.systems.base import SYSTEMS, Capability, IndexedMemory
from memeval.systems.http.client import Daemon
from memeval.systems.http.mapping import HttpSystemConfig, IngestRoute
from memeval.systems.http.system import HttpIngestor, HttpSystem, read_verdict
from tests.loopback import LoopbackServer, Received, Reply


class FakeMemoryd:
    """memoryd's API in miniature: short answers are length_filter, answers saying SKIP the
    judge's, a text seen before is a duplicate, anything else is stored. Counts requests in
    flight; `hold` > 1 keeps each ingest waiting (up to 2 s) until that many are in flight."""

    def __init__(self, hold: int = 1) -> None:
        self.memories: dict[str, str] = {}
        self.rejections: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self.hold = hold
        self._cond = threading.Condition()
        self._ids = 0

    def __call__(self, request: Received) -> Reply:
        path = request.path
        if request.method == "GET" and path == "/api/memories":
            return Reply(200, [{"id": i, "content": t} for i, t in self.memories.items()])
        if request.method == "DELETE" and path.startswith("/api/memories/"):
            self.memories.pop(path.rsplit("/", 1)[1], None)
            return Reply(200, {"status": "ok"})
        if request.method == "GET" and path == "/api/rejections":
            return Reply(200, list(self.rejections))
        if path == "/api/ingest":
            return self.ingest(request) if request.method == "POST" else Reply(
                405, {"error": "method not allowed"})
        return Reply(404, {"error": "not found"})

    def ingest(self, request: Received) -> Reply:
        body = request.body
        if not isinstance(body.get("user_prompt"), str) or not body.get("assistant_response"):
            return Reply(400, {"error": "assistant_response is required"})
        with self._cond:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._cond.notify_all()
            self._cond.wait_for(lambda: self.in_flight >= self.hold, timeout=2)
        try:
            return self._verdict(body["assistant_response"])
        finally:
            with self._cond:
                self.in_flight -= 1

    def _verdict(self, text: str) -> Reply:
        with self._cond:
            if len(text) < 80:
                return Reply(200, {"stage": "length_filter", "stored": 0, "summary": ""})
            if "SKIP" in text:
                self.rejections.append({"stage": "synthesizer_skip", "asst_text": text[:500]})
                return Reply(200, {"stage": "synthesizer_skip", "stored": 0, "summary": ""})
            if text in self.memories.values():
                return Reply(200, {"stage": "stored", "stored": 0, "summary": "duplicate"})
            self._ids += 1
            self.memories[f"mem{self._ids}"] = text
            return Reply(200, {"stage": "stored", "stored": 1, "entry": {"id": f"mem{self._ids}"},
                               "summary": "1 stored."})


def entries() -> list[Entry]:
    long = "The retry policy lives in conf/judge/anthropic.yaml with capped backoff, because "
    return [Entry("e1", "ok", "Done.", "noise", "human"),
            Entry("e2", "where?", long + "429s were common.", "substantive", "human"),
            Entry("e3", "and?", long + "SKIP this narration please, it is only procedure.",
                  "low_value", "human"),
            Entry("e4", "again", long + "429s were common.", "substantive", "human")]


def config(base_url: str, **overrides: Any) -> HttpSystemConfig:
    cfg: HttpSystemConfig = SYSTEMS.validate({"name": "http", "base_url": base_url, **overrides},
                                             key="system")
    return cfg


@pytest.fixture
def daemon() -> Iterator[tuple[FakeMemoryd, LoopbackServer]]:
    fake = FakeMemoryd()
    with LoopbackServer(fake) as server:
        yield fake, server


def ingestor(server: LoopbackServer, tmp_path: Path, **overrides: Any) -> HttpIngestor:
    cfg = config(server.base_url, **overrides)
    return HttpIngestor(cfg, Daemon(cfg, sleep=lambda _: None), tmp_path / "state")


def three_passes(gate: HttpIngestor, items: list[Any]) -> list[dict[str, Any]]:
    passes = []
    for pass_no in (1, 2, 3):
        gate.restart(wipe_memories=True)
        rows = list(gate.run_pass(items, pass_no))
        passes.append({"pass": pass_no, **pass_metrics(rows, resamples=50, seed=0),
                       **gate.pass_state({})})
    return passes


def test_memoryd_preset_maps_every_stage_onto_memevals_outcomes() -> None:
    route = IngestRoute()
    answers = {"pre_filter": ("prefilter", False, False), "length_filter": ("length", False, False),
               "content_score_filter": ("content_score", False, False),
               "synthesizer_skip": ("judge", False, True),
               "noise_filtered": ("noise_check", False, True)}
    for stage, expected in answers.items():
        assert read_verdict(route, {"stage": stage, "stored": 0})[:3] == expected
    assert read_verdict(route, {"stage": "stored", "stored": 1})[:3] == ("stored", True, True)
    # memoryd's stored flag 0 on a written turn: a near-duplicate, kept like the engine's dedup
    assert read_verdict(route, {"stage": "stored", "stored": 0})[:3] == ("dedup", True, True)
    # no judge configured in the daemon: written, but no judge call
    assert read_verdict(route, {"stage": "no_synthesizer", "stored": 1})[:3] == (
        "stored", True, False)


def test_three_passes_through_a_daemon_give_the_per_pass_table(
        daemon: tuple[FakeMemoryd, LoopbackServer], tmp_path: Path) -> None:
    fake, server = daemon
    gate = ingestor(server, tmp_path)
    items = gate.prepare(entries())
    passes = three_passes(gate, items)
    for p in passes:
        assert {k: v for k, v in p["stage_counts"].items() if v} == {
            "length": 1, "judge": 1, "stored": 1, "dedup": 1}
        assert p["judge_calls"] == 3 and p["system_errors"] == 0
        assert p["daemon_stage_counts"] == {"length_filter": 1, "synthesizer_skip": 1,
                                            "stored": 2}
    assert [p["rejection_store_size"] for p in passes] == [1, 2, 3]  # the daemon keeps learning
    assert list(fake.memories) == ["mem3"]  # the last pass's memory, the others wiped
    # each pass began by deleting the memory the one before stored
    deletes = [r.path for r in server.requests if r.method == "DELETE"]
    assert deletes == ["/api/memories/mem1", "/api/memories/mem2"]
    table = pass_table([PassMetrics.from_dict(p) for p in passes])
    outcomes, _ = table.split("\n\n")  # the two tables, no failure lines
    assert [line.split()[0] for line in outcomes.splitlines()[1:5]] == ["pass", "1", "2", "3"]


def test_planted_secrets_never_reach_the_daemon(
        daemon: tuple[FakeMemoryd, LoopbackServer], tmp_path: Path) -> None:
    _, server = daemon
    secrets = ["AKIAIOSFODNN7EXAMPLE", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
               "hunter2-Secret-Pass"]
    turn = Entry("s1", f"deploy with key {secrets[0]}",
                 f"Set GITHUB_TOKEN={secrets[1]} and connect to "
                 f"postgres://admin:{secrets[2]}@db.internal:5432/app before running the "
                 f"migration job, which needs both.", "substantive", "human")
    gate = ingestor(server, tmp_path)
    list(gate.run_pass(gate.prepare([turn]), 1))
    sent = json.dumps([r.body for r in server.requests if r.path == "/api/ingest"])
    assert "migration job" in sent
    assert not [s for s in secrets if s in sent]


def test_a_turn_the_daemon_cannot_answer_is_an_error_and_the_pass_goes_on(
        tmp_path: Path) -> None:
    def odd(request: Received) -> Reply:
        if request.body["assistant_response"] == "Done.":
            return Reply(200, {"stage": "brand_new_stage", "stored": 0})
        return Reply(200, {"stage": "stored", "stored": 1})

    with LoopbackServer(odd) as server:
        gate = ingestor(server, tmp_path)
        rows = list(gate.run_pass(gate.prepare(entries()), 1))
    assert len(rows) == 4
    error = rows[0]
    assert (error.outcome, error.retained) == ("error", False)
    assert "stage 'brand_new_stage', which system.ingest.stages does not map" in \
        error.system_error
    assert [r.outcome for r in rows[1:]] == ["stored"] * 3
    metrics = pass_metrics(rows, resamples=50, seed=0)
    assert metrics["system_errors"] == 1
    typed = PassMetrics.from_dict({"pass": 1, **metrics})
    assert "system errors (entries): pass 1: 1 of 4" in pass_table([typed])


def test_too_many_errors_fail_the_run_naming_the_setting() -> None:
    rows = [Decision(1, "eval", f"e{i}", None, None, 10, "error" if i < 2 else "stored",
                     i >= 2, system_error="HTTP 500 from http://127.0.0.1:1/api/ingest" if i < 2
                     else "") for i in range(10)]
    (failure,) = run_failures(rows, GateConfig(), 0.1)
    assert isinstance(failure, SystemFailure)
    assert str(failure).startswith("system: 2 of 10 entries failed (20%, more than "
                                   "system.max_error_share=0.1): HTTP 500")
    assert run_failures(rows, GateConfig(), 0.2) == []
    assert run_failures(rows, GateConfig()) == []  # a system without the setting never fails


def test_a_daemon_cannot_be_told_to_stop_learning(
        daemon: tuple[FakeMemoryd, LoopbackServer], tmp_path: Path) -> None:
    gate = ingestor(daemon[1], tmp_path)
    gate.learning = True
    with pytest.raises(ConfigError, match="cannot replay without learning: its ingestor"):
        gate.learning = False
    assert gate.stores == () and gate.learning_state() == {}


def test_capabilities_follow_the_mapped_routes() -> None:
    base = "http://127.0.0.1:1"
    assert config(base).capabilities == {Capability.INGEST, Capability.RESET}
    assert config(base, delete={"path": ""}).capabilities == {Capability.INGEST}
    searchable = config(base, index={"path": "/api/index"}, search={"ids_field": "ids"})
    assert Capability.SEARCH in searchable.capabilities
    # memoryd's search answers {context, scores}: no ids, so no search
    assert Capability.SEARCH not in config(base, index={"path": "/api/index"}).capabilities


def test_search_maps_the_daemons_ids_and_scores(tmp_path: Path) -> None:
    indexed: dict[str, str] = {}

    def searchable(request: Received) -> Reply:
        if request.path == "/api/memories":
            return Reply(200, [{"id": i} for i in indexed])
        if request.path.startswith("/api/memories/"):
            indexed.pop(request.path.rsplit("/", 1)[1])
            return Reply(200, {})
        if request.path == "/api/index":
            indexed[request.body["id"]] = request.body["content"]
            return Reply(200, {"status": "ok"})
        words = set(request.body["query"].split())
        ranked = sorted(indexed, key=lambda i: -len(words & set(indexed[i].split())))
        return Reply(200, {"ids": ranked, "scores": [len(words & set(indexed[i].split()))
                                                     for i in ranked]})

    with LoopbackServer(searchable) as server:
        cfg = config(server.base_url, index={"path": "/api/index"}, search={"ids_field": "ids"})
        system = HttpSystem(cfg, Daemon(cfg))
        system.index([IndexedMemory("a", "retry policy backoff"),
                      IndexedMemory("b", "database schema")])
        system.index([IndexedMemory("c", "retry budget"),
                      IndexedMemory("d", "schema migrations table")])
        hits = system.search("schema table", k=1)
        system.close()
    assert sorted(indexed) == ["c", "d"]  # indexing replaced what was there
    assert [(h.id, h.score) for h in hits] == [("d", 2.0)]


@pytest.mark.integration
def test_preflight_refuses_a_daemon_without_the_mapped_routes(
        daemon: tuple[FakeMemoryd, LoopbackServer]) -> None:
    _, server = daemon
    SYSTEMS.build({"name": "http", "base_url": server.base_url}, ctx=None).close()
    with pytest.raises(ConfigError, match=r"system=http failed its preflight: HTTP 404 from "
                                          r"http://127\.0\.0\.1:\d+/v2/ingest: the daemon has no "
                                          r"such route; check system.base_url and "
                                          r"system.ingest.path"):
        SYSTEMS.build({"name": "http", "base_url": server.base_url,
                       "ingest": {"path": "/v2/ingest"}}, ctx=None)
    port = server.port
    server.stop()
    with pytest.raises(ConfigError, match="is the server running"):
        SYSTEMS.build({"name": "http", "base_url": f"http://127.0.0.1:{port}",
                       "max_retries": 0, "startup_wait_s": 0}, ctx=None)


@pytest.mark.integration
def test_a_daemon_started_alongside_is_waited_for(caplog: pytest.LogCaptureFixture) -> None:
    """`serve memoryd &` then `run … system=http`: the run waits for the port to open."""
    fake = FakeMemoryd()
    with LoopbackServer(fake) as probe:
        port = probe.port  # a free port, closed again
    late = LoopbackServer(fake, port=port)
    timer = threading.Timer(1.0, late.start)
    timer.start()
    try:
        with caplog.at_level("WARNING"):
            SYSTEMS.build({"name": "http", "base_url": f"http://127.0.0.1:{port}",
                           "startup_wait_s": 30}, ctx=None).close()
    finally:
        timer.join()
        late.stop()
    assert f"waiting up to 30 s for the daemon at http://127.0.0.1:{port}" in caplog.text
    assert late.hits >= 1


@pytest.mark.integration
def test_a_daemon_that_never_listens_fails_once_the_wait_is_over() -> None:
    with LoopbackServer(FakeMemoryd()) as probe:
        port = probe.port
    with pytest.raises(ConfigError, match="is the server running"):
        SYSTEMS.build({"name": "http", "base_url": f"http://127.0.0.1:{port}",
                       "max_retries": 0, "startup_wait_s": 1}, ctx=None)


@pytest.mark.bad_input
@pytest.mark.parametrize("override", [
    {"ingest": {"path": "http://elsewhere.example/api/ingest"}},
    {"ingest": {"path": "//elsewhere.example/api/ingest"}},
    {"memories": {"path": "/api/../../admin"}},
    {"rejections": {"path": "/api/rejections?all=1"}},
    {"delete": {"path": "/api/%2e%2e/{id}"}},
    {"restart": {"path": "/api/restart#now"}},
])
def test_a_path_that_could_leave_base_url_is_refused(override: dict[str, Any]) -> None:
    key = next(iter(override))
    with pytest.raises(ConfigError, match=rf"system\.{key}\.path must be a path relative to "
                                          rf"system\.base_url"):
        config("http://127.0.0.1:1", **override)


@pytest.mark.bad_input
@pytest.mark.parametrize(("override", "message"), [
    ({"base_url": "ftp://127.0.0.1/"}, "base_url must be an http:// or https:// URL"),
    ({"base_url": "http://127.0.0.1:1/?x=1"}, "base_url must have no query or fragment"),
    ({"delete": {"path": "/api/memories"}}, r"system.delete.path must hold \{id\}"),
    ({"ingest": {"stages": {"kept": "saved"}}}, "map onto memeval's outcomes"),
    ({"ingest": {"judge_stages": ["synthesized"]}}, "judge_stages names stages"),
    ({"ingest": {"method": "GET"}}, "system.ingest.method must send a body"),
    ({"max_concurrency": 0}, r"system.max_concurrency must be an integer in \[1, 256\]"),
])
def test_settings_a_daemon_could_not_serve_are_refused(override: dict[str, Any],
                                                       message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(**{"base_url": "http://127.0.0.1:1", **override})


@pytest.mark.bad_input
def test_the_http_system_composes_from_its_yaml(fast_config: Callable[..., DictConfig]) -> None:
    from memeval.config import validate

    checked = validate(fast_config("+experiment=three_pass", "system=http"))
    assert checked.system.name == "http"
    assert checked.system.params.base_url == "http://127.0.0.1:8765"
    assert checked.system.params.ingest.stages["no_synthesizer"] == "stored"
    with pytest.raises(ConfigError, match=r"system\.ingest\.path must be a path relative"):
        validate(fast_config("+experiment=three_pass", "system=http",
                             "system.ingest.path=https://example.com/ingest"))
