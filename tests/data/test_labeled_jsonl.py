"""Labelled JSONL loader: aliases, bad lines (empty responses too) reported with file:line, skip
or raise, limit, oversized responses cut and counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memeval.data.base import DATASETS, fingerprint
from memeval.data.labeled_jsonl import DatasetError, load_labeled_jsonl
from memeval.entry import normalise_label
from memeval.registry import ConfigError

BUNDLED = Path(__file__).resolve().parents[2] / "data" / "labeled" / "write_gate_v1.jsonl"


def row(i: int, label: str = "substantive", **extra: Any) -> dict[str, Any]:
    return {"id": f"r{i}", "user_prompt": f"question {i}", "assistant_response": f"answer {i}",
            "label": label, **extra}


def write(tmp_path: Path, lines: list[bytes | dict[str, Any] | list[Any]],
          name: str = "set.jsonl") -> Path:
    path = tmp_path / name
    encoded = [ln if isinstance(ln, bytes) else json.dumps(ln).encode() for ln in lines]
    path.write_bytes(b"\n".join(encoded) + b"\n")
    return path


def test_loads_rows_with_defaults_and_meta(tmp_path: Path) -> None:
    path = write(tmp_path, [row(1, category="config"),
                            {k: v for k, v in row(2, "noise").items() if k != "id"},
                            row(3, label_source="llm")])
    dataset = load_labeled_jsonl(path)
    first, second, third = dataset.entries
    assert dataset.name == "set"
    assert (first.id, first.label, first.label_source) == ("r1", "substantive", "human")
    assert first.meta == {"category": "config"}
    assert second.id == "set:2"  # no id: file stem and line number
    assert third.label_source == "llm"
    assert dataset.report.rows_read == 3 and dataset.report.skipped == 0


def test_explicit_zero_id_is_kept(tmp_path: Path) -> None:
    path = write(tmp_path, [{**row(0), "id": 0}, {**row(1), "id": ""}])
    assert [e.id for e in load_labeled_jsonl(path).entries] == ["0", "set:2"]


@pytest.mark.parametrize(("raw", "canonical"), [
    ("low", "low_value"), ("Low-Value", "low_value"), (" NOISE ", "noise"),
    ("substantive", "substantive"), ("lowvalue", "low_value"),
])
def test_label_aliases(tmp_path: Path, raw: str, canonical: str) -> None:
    assert normalise_label(raw) == canonical
    assert load_labeled_jsonl(write(tmp_path, [row(1, raw)])).entries[0].label == canonical


BAD_LINES: list[tuple[bytes | dict[str, Any] | list[Any], str]] = [
    (row(2, "important"), "unknown label 'important'"),
    ({k: v for k, v in row(2).items() if k != "assistant_response"},
     "missing field 'assistant_response'"),
    (["not", "an", "object"], "expected a JSON object, got list"),
    (b"\xff\xfe{not utf-8", "utf-8"),
    ({**row(1), "assistant_response": "again"}, "duplicate id 'r1'"),
    (b'{"id": "r2", "user_prompt": ', "Expecting value"),
    ({**row(2), "label": None}, "label must be a string"),
    ({**row(2), "user_prompt": 5}, "must be strings"),
    ({**row(2), "assistant_response": ""}, "empty assistant_response"),
    ({**row(2), "assistant_response": " \n\t "}, "empty assistant_response"),
]


@pytest.mark.bad_input
@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_bad_line_is_reported_and_skipped(tmp_path: Path, bad: Any, message: str) -> None:
    path = write(tmp_path, [row(1), bad, row(3)])
    dataset = load_labeled_jsonl(path, on_error="skip")
    assert [e.id for e in dataset.entries] == ["r1", "r3"]
    (problem,) = dataset.report.problems
    assert problem.startswith(f"{path}:2: ")
    assert message in problem
    assert dataset.report.rows_read == 3


@pytest.mark.bad_input
@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_bad_line_raises_with_on_error_raise(tmp_path: Path, bad: Any, message: str) -> None:
    path = write(tmp_path, [row(1), bad, row(3)])
    with pytest.raises(DatasetError) as caught:
        load_labeled_jsonl(path, on_error="raise")
    assert str(caught.value).startswith(f"{path}:2: ")
    assert message in str(caught.value)


@pytest.mark.bad_input
def test_blank_lines_are_ignored_but_count_in_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, [row(1), b"", b"   ", row(4, "bogus")])
    dataset = load_labeled_jsonl(path)
    assert dataset.report.rows_read == 2
    assert dataset.report.problems[0].startswith(f"{path}:4: ")


@pytest.mark.bad_input
def test_empty_file_is_a_dataset_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(DatasetError, match="no usable entries"):
        load_labeled_jsonl(path)


@pytest.mark.bad_input
def test_all_bad_is_a_dataset_error(tmp_path: Path) -> None:
    path = write(tmp_path, [b"nope", row(2, "bogus")])
    with pytest.raises(DatasetError, match=r"no usable entries \(2 lines read, 2 bad\); each "
                                           r"line needs user_prompt, assistant_response and "
                                           r"label: is dataset.path the right file\?"):
        load_labeled_jsonl(path)


@pytest.mark.bad_input
def test_missing_file_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_labeled_jsonl(tmp_path / "absent.jsonl")


def test_limit_counts_usable_entries(tmp_path: Path) -> None:
    path = write(tmp_path, [row(1), b"bad", row(3), row(4), row(5)])
    dataset = load_labeled_jsonl(path, limit=2)
    assert [e.id for e in dataset.entries] == ["r1", "r3"]
    assert dataset.report.skipped == 1


def test_fingerprint_tracks_content(tmp_path: Path) -> None:
    a = load_labeled_jsonl(write(tmp_path, [row(1), row(2)], "a.jsonl"))
    b = load_labeled_jsonl(write(tmp_path, [row(1), row(2)], "b.jsonl"))
    c = load_labeled_jsonl(write(tmp_path, [row(1), row(2, "noise")], "c.jsonl"))
    assert a.fingerprint == b.fingerprint == fingerprint(b.entries)
    assert a.fingerprint != c.fingerprint


def test_registry_builds_and_validates(tmp_path: Path) -> None:
    path = write(tmp_path, [row(1), row(2)])
    dataset = DATASETS.build({"name": "labeled_jsonl", "path": str(path), "limit": 1})
    assert len(dataset.entries) == 1
    with pytest.raises(ConfigError, match="on_error"):
        DATASETS.validate({"name": "labeled_jsonl", "path": str(path), "on_error": "ignore"})
    with pytest.raises(ConfigError, match="limit"):
        DATASETS.validate({"name": "labeled_jsonl", "path": str(path), "limit": 0})


def test_bundled_dataset_loads_cleanly() -> None:
    dataset = load_labeled_jsonl(BUNDLED, on_error="raise")
    rows = sum(1 for line in BUNDLED.read_bytes().splitlines() if line.strip())
    assert len(dataset.entries) == rows > 0
    assert dataset.report.problems == []
    assert {e.label for e in dataset.entries} == {"noise", "low_value", "substantive"}
    assert len({e.id for e in dataset.entries}) == rows


def test_a_multi_megabyte_response_is_cut_and_counted(tmp_path: Path) -> None:
    path = write(tmp_path, [row(1), {**row(2), "assistant_response": "x" * 5_000_000}])
    dataset = load_labeled_jsonl(path, max_chars=1000)
    assert [len(e.assistant_response) for e in dataset.entries] == [len("answer 1"), 1000]
    assert dataset.report.stats == {"truncated": 1} and dataset.report.problems == []
    assert len(load_labeled_jsonl(path).entries[1].assistant_response) == 32768


def test_only_kept_rows_count_as_truncated(tmp_path: Path) -> None:
    """A repeated id is skipped before its text is cut: the report counts what the set holds."""
    long = {**row(1), "assistant_response": "x" * 2000}
    dataset = load_labeled_jsonl(write(tmp_path, [row(1), long]), max_chars=1000)
    assert [e.assistant_response for e in dataset.entries] == ["answer 1"]
    assert dataset.report.stats == {} and len(dataset.report.problems) == 1


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="max_chars"):
        DATASETS.validate({"name": "labeled_jsonl", "path": "x.jsonl", "max_chars": 0})
