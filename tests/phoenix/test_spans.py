"""Spans from decisions, without a server: stage verdicts, stable ids, timing, attributes."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import pandas as pd
import pytest

from memeval.cli.phoenix import settings_for
from memeval.registry import ConfigError, to_dataclass
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.files import judge_provider
from memeval.reporting.phoenix.push import (
    decision_annotations,
    redacted,
    report_run,
    run_evaluations,
)
from memeval.reporting.phoenix.retrieval_push import document_annotations
from memeval.reporting.phoenix.spans import (
    RunInfo,
    entry_spans,
    hex_id,
    run_spans,
    search_spans,
    stage_verdicts,
)

ORDER = ("prefilter", "length", "content_score", "judge")
RUN = RunInfo("run1", "three_pass", ORDER, "hashing-256", "labels")


def row(**changes: object) -> dict[str, object]:
    base = {"arm": "main", "pass_no": 1, "phase": "eval", "entry_id": "e1", "outcome": "stored",
            "retained": True, "label": "substantive", "label_source": "human", "asst_len": 120,
            "score": 0.4, "threshold": 0.1, "audited": False, "judge_called": True,
            "judge_skip": False, "judge_error": False, "judge_cached": False,
            "judge_tokens_in": 300, "judge_tokens_out": 20, "judge_cost_usd": 0.001,
            "started_at": 1_700_000_000.0, "latency_prefilter_ms": 0.5, "latency_length_ms": 0.1,
            "latency_content_score_ms": 2.0, "latency_judge_ms": 10.0, "latency_write_ms": 1.0}
    return {**base, **changes}


@pytest.mark.parametrize(("outcome", "audited", "expected"), [
    ("stored", False, [("prefilter", "pass"), ("length", "pass"), ("content_score", "pass"),
                       ("judge", "pass"), ("write", "stored")]),
    ("length", False, [("prefilter", "pass"), ("length", "reject")]),
    ("judge", True, [("prefilter", "pass"), ("length", "pass"), ("content_score", "audit"),
                     ("judge", "reject")]),
    ("dedup", False, [("prefilter", "pass"), ("length", "pass"), ("content_score", "pass"),
                      ("judge", "pass"), ("write", "dedup")]),
])
def test_stage_verdicts(outcome: str, audited: bool, expected: list[tuple[str, str]]) -> None:
    assert stage_verdicts(row(outcome=outcome, audited=audited), ORDER) == expected


def test_an_entry_is_one_trace_with_a_child_per_stage_laid_end_to_end() -> None:
    spans = entry_spans(RUN, row(), {"assistant_response": "x" * 5000, "user_prompt": "why?"})
    root, *children = spans
    assert {s["trace_id"] for s in spans} == {root["trace_id"]} and len(root["trace_id"]) == 32
    assert root["parent_id"] is None and all(c["parent_id"] == root["span_id"] for c in children)
    assert [c["name"] for c in children] == ["gate.prefilter", "gate.length",
                                             "gate.content_score", "gate.judge", "gate.write"]
    assert children[0]["start_ns"] == root["start_ns"] == 1_700_000_000 * 10**9
    # a system that leaves Decision.started_at at 0 has its spans dated 1970 (protocol.md)
    assert entry_spans(RUN, row(started_at=0.0), None)[0]["start_ns"] == 0
    assert all(a["end_ns"] == b["start_ns"] for a, b in itertools.pairwise(children))
    assert root["end_ns"] == children[-1]["end_ns"] == root["start_ns"] + 13_600_000
    assert len(root["attributes"]["input.value"]) == RUN.text_chars
    kinds = {c["name"]: c["attributes"]["openinference.span.kind"] for c in children}
    assert kinds["gate.judge"] == "LLM" and kinds["gate.length"] == "GUARDRAIL"
    judge = children[3]["attributes"]
    assert judge["llm.token_count.total"] == 320 and judge["llm.model_name"] == "labels"
    scored = children[2]["attributes"]
    assert (scored["memeval.score"], scored["memeval.threshold"]) == (0.4, 0.1)


def test_ids_are_stable_and_distinct_per_run_pass_and_entry() -> None:
    first = entry_spans(RUN, row(), None)
    assert first == entry_spans(RUN, row(), None)
    other_pass = entry_spans(RUN, row(pass_no=2), None)
    other_run = entry_spans(RunInfo("run2", *list(vars(RUN).values())[1:]), row(), None)
    ids = {s["span_id"] for s in first + other_pass + other_run}
    assert len(ids) == 3 * len(first)
    assert len(hex_id(16, "x")) == 16 and hex_id(16, "x") != "0" * 16


def test_missing_values_are_left_out_not_sent_as_nan() -> None:
    spans = entry_spans(RUN, row(label=None, score=float("nan"), outcome="prefilter"), None)
    assert "memeval.label" not in spans[0]["attributes"]
    assert "input.value" not in spans[0]["attributes"]
    assert spans[1]["attributes"]["memeval.decision"] == "reject"


def test_a_failed_judge_call_is_an_error_span() -> None:
    spans = entry_spans(RUN, row(judge_error=True), None)
    assert [s["status"] for s in spans if s["name"] == "gate.judge"] == ["ERROR"]


def test_each_pass_gets_a_summary_span_with_its_metrics() -> None:
    decisions = pd.DataFrame([row(), row(entry_id="e2", started_at=1_700_000_005.0)])
    spans = list(run_spans(RUN, decisions, {}, {"main": [{"pass": 1, "judge_calls": 2,
                                                           "substantive_recall": 0.57641}]}))
    summary = spans[-1]
    assert summary["name"] == "summary p1"
    attributes = summary["attributes"]
    # rounded as the terminal shows it (57.6%), under a short name
    assert attributes["memeval.metrics.recall"] == 0.576
    assert attributes["memeval.metrics.judge_calls"] == 2
    assert attributes["input.value"] == "three_pass, main arm, pass 1"
    assert attributes["output.value"] == "recall 57.6%, judge_calls 2"
    assert attributes["memeval.pass_no"] == 1 and attributes["session.id"] == RUN.session
    assert (summary["start_ns"], summary["end_ns"]) == (1_700_000_000 * 10**9,
                                                        1_700_000_005 * 10**9)


def test_each_root_span_names_its_arm_and_pass_and_every_span_its_runs_session() -> None:
    spans = entry_spans(RUN, row(arm="sip0001", pass_no=3), None)
    assert spans[0]["name"] == "gate sip0001 p3"
    assert {s["attributes"]["session.id"] for s in spans} == {"three_pass run run1"}
    assert entry_spans(RUN, row(), None)[0]["name"] == "gate p1"


def test_annotations_judge_each_labelled_decision() -> None:
    kept_low = entry_spans(RUN, row(label="low_value"), None)
    dropped_noise = entry_spans(RUN, row(entry_id="e2", label="noise", outcome="length",
                                         retained=False), None)
    unlabelled = entry_spans(RUN, row(entry_id="e3", label=None), None)
    roots = [kept_low[0], dropped_noise[0], unlabelled[0]]
    deciders = {kept_low[0]["trace_id"]: kept_low[-1], dropped_noise[0]["trace_id"]:
                dropped_noise[-1]}
    notes, traces = decision_annotations(roots, deciders)
    assert len(notes) == 4  # root + deciding stage, for the two labelled entries
    by_span = {n["span_id"]: n for n in notes}
    assert by_span[kept_low[0]["span_id"]]["result"]["label"] == "incorrect"
    assert by_span[dropped_noise[-1]["span_id"]]["result"]["score"] == 1.0
    assert "dropped at length" in by_span[dropped_noise[0]["span_id"]]["result"]["explanation"]
    assert all(n["annotator_kind"] == "CODE" and n["identifier"] for n in notes + traces)
    by_trace = {n["trace_id"]: n for n in traces}  # the same verdicts, on the traces
    assert set(by_trace) == {kept_low[0]["trace_id"], dropped_noise[0]["trace_id"]}
    assert by_trace[kept_low[0]["trace_id"]]["result"] == by_span[kept_low[0]["span_id"]]["result"]


def test_each_headline_metric_is_an_evaluation_on_the_entries_it_is_measured_over() -> None:
    def names(**changes: object) -> dict[str, float]:
        root = entry_spans(RUN, row(**changes), None)[0]["attributes"]
        return {e["name"]: e["score"] for e in run_evaluations(root, judge_called=False)}

    assert names() == {"correct": 1.0, "substantive recall": 1.0, "pre-judge filtered": 0.0,
                       "judge called": 0.0}
    noise = names(label="noise", outcome="length", retained=False)
    assert noise == {"correct": 1.0, "noise stored": 0.0, "pre-judge filtered": 1.0,
                     "judge called": 0.0}
    assert set(names(label="substantive", label_source="heuristic")) == {
        "correct", "pre-judge filtered", "judge called"}  # recall counts human labels only
    assert set(names(label=None)) == {"pre-judge filtered", "judge called"}


def test_a_judge_span_carries_what_phoenix_prices_a_call_from() -> None:
    priced = RunInfo("run1", "three_pass", ORDER, "hashing-256", "claude-haiku-4-5",
                     judge_provider="anthropic")
    judge = entry_spans(priced, row(), None)[4]["attributes"]
    assert (judge["llm.model_name"], judge["llm.provider"]) == ("claude-haiku-4-5", "anthropic")
    assert (judge["llm.token_count.prompt"], judge["llm.token_count.completion"]) == (300, 20)
    cached = entry_spans(priced, row(judge_cached=True, judge_cost_usd=0.0), None)[4]
    assert not any(k.startswith("llm.token_count") for k in cached["attributes"])
    assert judge_provider({"name": "anthropic"}) == "anthropic"
    assert judge_provider({"name": "openai_chat", "base_url": "https://api.openai.com/v1"}) == \
        "openai"
    assert judge_provider({"name": "openai_chat", "base_url": "http://127.0.0.1:8080/v1"}) is None


def test_retrieved_documents_carry_their_text() -> None:
    searches = pd.DataFrame([{"arm": "on", "pass": 1, "query_id": "q1", "query": "where?",
                              "kind": "fact", "searched_at": 1.7e9, "ndcg": 1.0, "recall": 1.0,
                              "top_mqs": 50, "served_memories": ["m1-0", "m1-1"],
                              "served": ["e1", "e2"], "cosines": [0.9, 0.5]}])
    span = next(search_spans(RUN, searches, {"e1": {"assistant_response": "Retries: 3."}}))
    attributes = span["attributes"]
    assert attributes["retrieval.documents.0.document.content"] == "Retries: 3."
    assert attributes["retrieval.documents.1.document.id"] == "m1-1"
    assert "retrieval.documents.1.document.content" not in attributes  # no text known
    assert attributes["output.value"] == "ndcg 1.000, recall 1.000: m1-0, m1-1"
    assert span["name"] == "search on p1"


def test_each_served_documents_relevance_becomes_its_document_evaluation() -> None:
    searches = pd.DataFrame([{"arm": "sip0001", "pass": 3, "query_id": "q1", "query": "where?",
                              "searched_at": 1.7e9, "ndcg": 0.5, "recall": 0.5,
                              "served_memories": ["m1-0", "m1-1"], "served": ["e1", "e2"],
                              "served_texts": ["a", "b"], "served_grades": [0, 2],
                              "cosines": [0.9, 0.5]}])
    span = next(search_spans(RUN, searches, {}))
    notes = document_annotations(span)
    assert [(n["document_position"], n["result"]["score"], n["result"]["label"])
            for n in notes] == [(0, 0.0, "not relevant"), (1, 2.0, "relevant")]
    assert {n["span_id"] for n in notes} == {span["span_id"]}
    assert {n["name"] for n in notes} == {"relevance"}  # what Phoenix's retrieval metrics read


def test_everything_sent_is_redacted() -> None:
    payload = {"a": ["mail bob@example.com", {"k": "key sk-ant-api03-" + "x" * 40}], "n": 3}
    text = str(redacted(payload))
    assert "bob@example.com" not in text and "sk-ant-api03" not in text
    assert redacted(payload)["n"] == 3


def test_config_accepts_the_collector_form_and_refuses_junk() -> None:
    assert PhoenixConfig(endpoint="http://127.0.0.1:6006/v1/traces/").base_url == \
        "http://127.0.0.1:6006"
    assert PhoenixConfig(endpoint=None).base_url is None
    with pytest.raises(ConfigError, match="http"):
        to_dataclass(PhoenixConfig, {"endpoint": "localhost:6006"}, "reporting.phoenix")
    with pytest.raises(ConfigError, match="has no option 'endpont'"):
        to_dataclass(PhoenixConfig, {"endpont": "x"}, "reporting.phoenix")


def test_push_settings_prefer_the_flag_then_the_environment_then_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.yaml").write_text(
        "reporting:\n  phoenix:\n    enabled: false\n    endpoint: http://127.0.0.1:7000\n"
        "    project: mine\n")
    monkeypatch.delenv("PHOENIX_COLLECTOR_ENDPOINT", raising=False)
    assert settings_for(tmp_path, None, None).base_url == "http://127.0.0.1:7000"
    monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", "http://127.0.0.1:7001")
    assert settings_for(tmp_path, None, None).base_url == "http://127.0.0.1:7001"
    chosen = settings_for(tmp_path, "http://127.0.0.1:7002", "other")
    assert (chosen.base_url, chosen.project, chosen.enabled) == ("http://127.0.0.1:7002", "other",
                                                                 True)


def test_without_an_endpoint_the_run_keeps_its_spans_and_says_how_to_push(tmp_path: Path) -> None:
    out = io.StringIO()
    folder = tmp_path / "phoenix"
    assert report_run(tmp_path, PhoenixConfig(endpoint=None), lambda: folder, False, out) is None
    said = " ".join(out.getvalue().split())  # wrapped for a 100-column terminal
    assert f"spans written to {folder}" in said
    assert f"\n  push later: python -m memeval phoenix push {tmp_path}\n" in out.getvalue()


def test_a_failure_to_write_never_fails_the_run(tmp_path: Path) -> None:
    def broken() -> Path:
        raise OSError("disk full")

    out = io.StringIO()
    assert report_run(tmp_path, PhoenixConfig(), broken, False, out) is None
    assert "disk full" in out.getvalue() and "results are intact" in out.getvalue()


def test_a_stream_that_loses_phoenix_stops_quietly_and_the_run_goes_on() -> None:
    from memeval.engine.gate.gate import Decision
    from memeval.reporting.phoenix.server import free_port
    from memeval.reporting.phoenix.stream import PassStreamer

    settings = PhoenixConfig(endpoint=f"http://127.0.0.1:{free_port()}", timeout_s=2.0)
    streamer = PassStreamer(settings, lambda: RUN, dict)
    decision = Decision(1, "eval", "e1", "noise", "human", 10, outcome="length", retained=False,
                        latency_ms={"prefilter": 0.1, "length": 0.1}, started_at=1.7e9)
    streamer([decision])
    streamer([decision])
    assert streamer.stopped and "could not reach" in streamer.stopped and streamer.sent == 0
    streamer.close()
