"""system=http mapping that fits real daemons: JSON values kept as such, paths into lists of
objects, optional request and answer fields, mapping files from a file or a search path, and a
preflight that reads a real search answer before the replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memeval.config import check_overrides
from memeval.entry import Entry
from memeval.registry import ConfigError
from memeval.systems.http.client import Daemon
from memeval.systems.http.mapping import as_key, pluck
from memeval.systems.http.system import HttpIngestor, HttpSystem, read_verdict
from tests.loopback import LoopbackServer, Received, Reply
from tests.systems.test_http import config

TURN = Entry("e1", "where is the retry config?", "It lives in conf/retry.yaml, capped at 3.",
             "substantive", "human")


def test_a_json_value_keeps_its_json_spelling_as_a_stage_name() -> None:
    route = config("http://127.0.0.1:1", ingest={
        "stage_field": "kept", "stored_field": "", "judge_stages": [],
        "stages": {"true": "stored", "false": "judge"}}).ingest
    assert read_verdict(route, {"kept": True})[:2] == ("stored", True)
    assert read_verdict(route, {"kept": False})[:2] == ("judge", False)
    assert as_key(True) == "true" and as_key(3) == "3" and as_key("stored") == "stored"


def test_paths_step_into_each_object_of_a_list() -> None:
    answer = {"data": {"results": [{"key": "m1", "score": 0.9}, {"key": 7, "score": 0.2}]}}
    assert pluck(answer, "data.results[].key") == ["m1", 7]
    with pytest.raises(KeyError):
        pluck({"data": {"results": {"key": "m1"}}}, "data.results[].key")


def test_a_daemon_answering_no_stage_is_read_by_its_stored_flag_and_gets_no_prompt(
        tmp_path: Path) -> None:
    sent: list[Any] = []

    def daemon(request: Received) -> Reply:
        sent.append(request.body)
        return Reply(200, {"ok": True, "saved": len(request.body["text"]) > 30})

    with LoopbackServer(daemon) as server:
        cfg = config(server.base_url, ingest={
            "path": "/v1/turns", "prompt_field": "", "response_field": "text", "fields": {},
            "stage_field": "", "stored_field": "saved", "dropped": "content_score",
            "judge_stages": []})
        gate = HttpIngestor(cfg, Daemon(cfg), tmp_path)
        short = Entry("e2", "ok?", "Done.", "noise", "human")
        decisions = list(gate.run_pass(gate.prepare([TURN, short]), 1))
    assert [(d.outcome, d.retained) for d in decisions] == [("stored", True),
                                                             ("content_score", False)]
    assert sent[0]["text"] == TURN.assistant_response and "user_prompt" not in sent[0]


def test_a_mapping_file_is_merged_over_the_preset_and_checked(tmp_path: Path) -> None:
    mapping = tmp_path / "mydaemon.yaml"
    mapping.write_text("name: http\ningest:\n  path: /v2/remember\n  stage_field: verdict\n"
                       "  stages: {kept: stored, tossed: judge}\n  judge_stages: [kept]\n")
    cfg = config("http://127.0.0.1:1", mapping=str(mapping))
    assert cfg.ingest.path == "/v2/remember" and cfg.ingest.stages == {"kept": "stored",
                                                                         "tossed": "judge"}
    assert cfg.memories.path == "/api/memories"  # the preset's, where the file is silent
    mapping.write_text("ingest:\n  pathh: /v2\n")
    with pytest.raises(ConfigError, match=f"mapping {mapping}: ingest: unknown setting 'pathh'"):
        config("http://127.0.0.1:1", mapping=str(mapping))


def test_a_mapping_option_on_the_search_path_is_an_option(tmp_path: Path) -> None:
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "mydaemon.yaml").write_text("name: http\nbase_url: "
                                                       "http://127.0.0.1:1\n")
    check_overrides(["+experiment=three_pass", "system=mydaemon",
                     f"hydra.searchpath=[file://{tmp_path}]"])  # no "unknown system"
    with pytest.raises(ConfigError, match="unknown system 'elsewhere'"):
        check_overrides(["+experiment=three_pass", "system=elsewhere",
                         f"hydra.searchpath=[file://{tmp_path}]"])


def searching(results: Any) -> Any:
    def daemon(request: Received) -> Reply:
        if request.path == "/api/memories":
            return Reply(200, [])
        if request.path == "/api/search":
            return Reply(200, results)
        return Reply(405, {})  # a route with effects, asked with GET by the preflight
    return daemon


SEARCH = {"index": {"path": "/api/index"}, "rejections": {"path": ""},
          "search": {"ids_field": "results[].key", "scores_field": "results[].score"}}


def test_search_answers_as_a_list_of_objects_map_and_pass_the_preflight() -> None:
    answer = {"results": [{"key": "m2", "score": 0.4}, {"key": "m1", "score": 0.9}]}
    with LoopbackServer(searching(answer)) as server:
        cfg = config(server.base_url, **SEARCH)
        daemon = Daemon(cfg)
        daemon.preflight()
        hits = HttpSystem(cfg, daemon).search("retry", k=5)
        daemon.close()
    assert [(h.id, h.score) for h in hits] == [("m1", 0.9), ("m2", 0.4)]


def test_the_preflight_reads_a_real_search_answer_and_refuses_a_shape_that_does_not_fit(
        ) -> None:
    with LoopbackServer(searching({"hits": ["m1"]})) as server:
        daemon = Daemon(config(server.base_url, **SEARCH))
        with pytest.raises(ConfigError, match=r"failed its preflight: the daemon's search answer "
                                              r"has no parallel ids and scores at "
                                              r"system.search.ids_field 'results\[\].key'"):
            daemon.preflight()
        daemon.close()


def test_a_new_stage_name_on_the_command_line_is_told_how_to_add_it() -> None:
    with pytest.raises(ConfigError, match=r"write \+system.ingest.stages.kept=…"):
        check_overrides(["+experiment=three_pass", "system=http",
                         "system.ingest.stages.kept=stored"])
