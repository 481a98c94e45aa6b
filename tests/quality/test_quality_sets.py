"""Loading the hand-labelled quality sets: the bundled files, and bad lines by file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memeval.config import data_path
from memeval.data.base import DatasetError
from memeval.data.quality_sets import load_memory_records, load_scenarios

RECORD = {"id": "r1", "content": "CI pins Node 18", "confidence": 0.8, "derived_from": [],
          "success_count": 1, "failure_count": 0, "access_count": 3, "conflicts": [],
          "hedged": False, "namespace": "p", "created_by": "claude-code", "session_id": "s1",
          "created_at": "2026-10-03T14:12:00Z", "updated_at": "2026-10-04T09:00:00Z",
          "citation": {"path": "ci.yml", "line_start": 1, "line_end": 2},
          "label": "trusted", "label_note": "cited"}


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
    scenario = {"scenario_id": "s1", "ground_truth": "well_attributed", "agent_decision": "d",
                "retrieved_memories": [{"id": "m1", "confidence": 0.9, "created_by": "a"}],
                "ancestors": [], "label_note": ""}
    path = _write(tmp_path / "s.jsonl", [scenario, {**scenario, "scenario_id": "s2",
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
    scenario = ('{"scenario_id": "s1", "ground_truth": "well_attributed", '
                f'"retrieved_memories": [{{"id": "m1", "confidence": {confidence}}}]}}')
    scenarios_path = tmp_path / "scenarios.jsonl"
    scenarios_path.write_text(scenario + "\n")
    scenarios, report = load_scenarios(scenarios_path)
    assert scenarios == [] and "confidence must be a number" in report.problems[0]
