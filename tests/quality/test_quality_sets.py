"""Loading the hand-labelled quality sets: the bundled files, and bad lines by file:line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memeval.data.base import DatasetError
from memeval.data.quality_sets import (
    load_conflict_pairs,
    load_memory_records,
    load_queries,
    load_scenarios,
)
from memeval.paths import data_path
from memeval.quality.mqs import compute_mqs

RECORD = {"id": "r1", "content": "CI pins Node 18", "confidence": 0.8, "derived_from": [],
          "success_count": 1, "failure_count": 0, "access_count": 3, "conflicts": [],
          "hedged": False, "namespace": "p", "created_by": "claude-code", "session_id": "s1",
          "created_at": "2026-10-03T14:12:00Z", "updated_at": "2026-10-04T09:00:00Z",
          "citation": {"path": "ci.yml", "line_start": 1, "line_end": 2},
          "label": "trusted", "label_note": "cited"}


SCENARIO = {"scenario_id": "s1", "ground_truth": "well_attributed", "agent_decision": "d",
            "retrieved_memories": [{"id": "m1", "confidence": 0.9, "created_by": "a"}],
            "ancestors": [], "label_note": ""}


def test_bundled_sets_load_cleanly() -> None:
    records, report = load_memory_records(data_path("mqs/memory_records_v1.jsonl"), "raise")
    assert len(records) >= 60 and report.skipped == 0
    assert {r.label for r in records} == {"trusted", "questionable", "untrusted"}
    scenarios, report = load_scenarios(data_path("mai/attribution_scenarios_v1.jsonl"), "raise")
    assert len(scenarios) >= 30 and report.skipped == 0
    assert {s.ground_truth for s in scenarios} == {
        "well_attributed", "partially_attributed", "unattributed"}


def test_record_fields_are_parsed(tmp_path: Path) -> None:
    (item,), report = load_memory_records(_write(tmp_path / "one.jsonl", [RECORD]), "raise")
    record = item.record
    assert (record.id, record.confidence, record.access_count, item.label, item.note) == (
        "r1", 0.8, 3, "trusted", "cited")
    assert record.citation is not None and record.citation.path == "ci.yml"
    assert record.created_at is not None and record.created_at.tzinfo is not None
    assert report.rows_read == 1


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.mark.bad_input
def test_bad_lines_are_reported_with_file_and_line(tmp_path: Path) -> None:
    rows: list[object] = [
        RECORD,
        "{broken",
        {**RECORD, "id": "r2", "label": "maybe"},
        {**RECORD, "id": "r3", "colour": "blue"},
        {**RECORD, "id": "r4", "confidence": 1.5},
        RECORD,  # duplicate id
        {k: v for k, v in RECORD.items() if k != "content"} | {"id": "r5"},
    ]
    path = _write(tmp_path / "records.jsonl", rows)
    records, report = load_memory_records(path)
    assert [r.record.id for r in records] == ["r1"]
    assert [p.split(": ", 1)[0] for p in report.problems] == [f"{path}:{n}" for n in (2, 3, 4, 5,
                                                                                       6, 7)]
    assert "duplicate id 'r1'" in report.problems[4]
    with pytest.raises(DatasetError, match=f"{path}:2"):
        load_memory_records(path, "raise")


@pytest.mark.bad_input
def test_scenario_with_unknown_label_is_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [SCENARIO, {**SCENARIO, "scenario_id": "s2",
                                                     "ground_truth": "sort_of"}])
    scenarios, report = load_scenarios(path)
    assert [s.id for s in scenarios] == ["s1"] and scenarios[0].memories[0].confidence == 0.9
    assert "sort_of" in report.problems[0]


@pytest.mark.bad_input
@pytest.mark.parametrize("confidence", ["NaN", "7", '"high"', "true", "-0.1"])
def test_impossible_confidences_are_bad_lines_in_both_sets(tmp_path: Path,
                                                           confidence: str) -> None:
    record = json.dumps({**RECORD, "id": "r2"}).replace('"confidence": 0.8',
                                                         f'"confidence": {confidence}')
    records_path = tmp_path / "records.jsonl"
    records_path.write_text(json.dumps(RECORD) + "\n" + record + "\n")
    records, report = load_memory_records(records_path)
    assert [r.record.id for r in records] == ["r1"]
    assert report.problems[0].startswith(f"{records_path}:2: ")
    assert "confidence must be a number in [0, 1]" in report.problems[0]
    scenario = ('{"scenario_id": "s2", "ground_truth": "well_attributed", '
                f'"retrieved_memories": [{{"id": "m1", "confidence": {confidence}}}]}}')
    scenarios_path = tmp_path / "scenarios.jsonl"
    scenarios_path.write_text(json.dumps(SCENARIO) + "\n" + scenario + "\n")
    scenarios, report = load_scenarios(scenarios_path)
    assert [s.id for s in scenarios] == ["s1"]
    assert "confidence must be a number" in report.problems[0]


LOADERS: dict[str, Any] = {  # each quality set's setting -> its loader
    "experiment.records": load_memory_records, "experiment.scenarios": load_scenarios,
    "experiment.pairs": load_conflict_pairs, "experiment.queries": load_queries}


@pytest.mark.bad_input
@pytest.mark.parametrize("setting", LOADERS)
@pytest.mark.parametrize("on_error", ["skip", "raise"])
def test_the_wrong_kind_of_file_fails_loudly_naming_the_setting(setting: str,
                                                                on_error: str) -> None:
    """A write-gate labelled set given as a quality set: every line is bad, so there is no run
    on zero rows to finish (nor a fit to crash inside scikit-learn)."""
    gate_set = data_path("labeled/write_gate_v1.jsonl")
    with pytest.raises(DatasetError) as caught:
        LOADERS[setting](gate_set, on_error)
    message = str(caught.value)
    assert message.startswith(f"{gate_set}:1: " if on_error == "raise" else f"{gate_set}: ")
    if on_error == "skip":
        assert "no usable" in message and f"is {setting} the right file?" in message
        assert f"{gate_set}:1: " in message.splitlines()[1]


@pytest.mark.bad_input
@pytest.mark.parametrize("setting", LOADERS)
def test_an_empty_or_missing_set_fails_naming_the_setting(tmp_path: Path, setting: str) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DatasetError, match=r"no usable .* \(0 lines read, 0 bad\)"):
        LOADERS[setting](empty)
    with pytest.raises(DatasetError, match=f"file not found: .*absent.jsonl \\(set {setting}="):
        LOADERS[setting](tmp_path / "absent.jsonl")


def test_an_integer_conflicts_loads_as_a_count(tmp_path: Path) -> None:
    path = _write(tmp_path / "records.jsonl", [{**RECORD, "conflicts": 2},
                                               {**RECORD, "id": "r2", "conflicts": -1},
                                               {**RECORD, "id": "r3", "conflicts": True},
                                               {**RECORD, "id": "r4", "conflicts": "r1"}])
    records, report = load_memory_records(path)
    (record,) = [item.record for item in records]
    assert len(record.conflicts) == 2
    assert compute_mqs(record).conflict_penalty == 20.0  # what crashed: len() of an int
    assert [p.split(": ", 1)[0] for p in report.problems] == [f"{path}:{n}" for n in (2, 3, 4)]
    assert "a count in [0, 1000], got -1" in report.problems[0]
    assert "conflicts must be a list of memory ids" in report.problems[1]


@pytest.mark.bad_input
@pytest.mark.parametrize(("field", "value", "message"), [
    ("derived_from", "r0", "derived_from must be a list of memory ids"),
    ("success_count", "3", "counts must be non-negative whole numbers"),
    ("hedged", "false", "hedged must be true or false"),
    ("content", 42, "field 'content' must be text"),
    ("id", ["r9"], "field 'id' must be text or a whole number"),
])
def test_wrongly_typed_record_fields_are_bad_lines(tmp_path: Path, field: str, value: object,
                                                   message: str) -> None:
    path = _write(tmp_path / "records.jsonl", [RECORD, {**RECORD, "id": "r2", field: value}])
    records, report = load_memory_records(path)
    assert [r.record.id for r in records] == ["r1"]
    assert report.problems[0].startswith(f"{path}:2: ") and message in report.problems[0]


PAIR = {"pair_id": "p1", "a": {"content": "x is y"}, "b": {"content": "x is z"},
        "conflict": "semantic"}
QUERY = {"query_id": "q1", "query": "where is x", "relevant": {"e1": 2}}


@pytest.mark.bad_input
@pytest.mark.parametrize(("setting", "good", "change", "message"), [
    ("experiment.pairs", PAIR, {"pair_id": "p2", "a": {"content": 7}}, "must be text"),
    ("experiment.pairs", PAIR, {"pair_id": ["p2"]}, "field 'pair_id' must be text"),
    ("experiment.pairs", PAIR, {"pair_id": "p2", "b": "text"}, "field 'b' must be an object"),
    ("experiment.queries", QUERY, {"query_id": "q2", "relevant": ["e1"]}, "relevant must map"),
    ("experiment.queries", QUERY, {"query_id": "q2", "superseded": "e1"},
     "superseded must be a list"),
    ("experiment.scenarios", SCENARIO, {"scenario_id": "s2", "retrieved_memories": "m1"},
     "must be a list of memory objects"),
    ("experiment.scenarios", SCENARIO, {"scenario_id": "s2", "retrieved_memories": [
        {"id": "m1", "created_by": 3}]}, "created_by must be text or null"),
])
def test_wrongly_typed_pairs_scenarios_and_queries_are_bad_lines(
        tmp_path: Path, setting: str, good: dict[str, Any], change: dict[str, Any],
        message: str) -> None:
    path = _write(tmp_path / "set.jsonl", [good, {**good, **change}])
    items, report = LOADERS[setting](path)
    assert len(items) == 1
    assert report.problems[0].startswith(f"{path}:2: ") and message in report.problems[0]


def test_records_carry_a_trust_label_a_numeric_grade_or_both(tmp_path: Path) -> None:
    unlabelled = {k: v for k, v in RECORD.items() if k != "label"}
    path = _write(tmp_path / "records.jsonl", [
        RECORD, {**unlabelled, "id": "r2", "trust": 0.25}, {**RECORD, "id": "r3", "trust": 1},
        {**unlabelled, "id": "r4"},                      # neither
        {**unlabelled, "id": "r5", "trust": 1.5},
        {**unlabelled, "id": "r6", "trust": "high"},
        {**unlabelled, "id": "r7", "trust": True},
    ])
    records, report = load_memory_records(path)
    assert [(r.record.id, r.label, r.trust) for r in records] == [
        ("r1", "trusted", None), ("r2", None, 0.25), ("r3", "trusted", 1.0)]
    assert [p.split(": ", 1)[0] for p in report.problems] == [f"{path}:{n}" for n in (4, 5, 6, 7)]
    assert "needs a trust label (trusted | questionable | untrusted) or a trust grade" in \
        report.problems[0]
    assert all("trust must be a number in [0, 1]" in p for p in report.problems[1:])


def test_empty_creator_and_session_in_a_scenario_are_unknown(tmp_path: Path) -> None:
    memory = {"id": "m1", "confidence": 0.9, "created_by": "", "session_id": " "}
    path = _write(tmp_path / "s.jsonl", [{**SCENARIO, "retrieved_memories": [memory]}])
    (scenario,), _ = load_scenarios(path)
    assert (scenario.memories[0].created_by, scenario.memories[0].session_id) == (None, None)
