"""Files as they are found in the wild, through every JSONL loader: a UTF-8 byte-order mark, CR-only
line endings, lone surrogates and absurd nesting are read or reported line by line; a file with
nothing usable fails naming its first problems and its likely cause."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import json
import lzma
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memeval.data.base import DatasetError, LoadReport
from memeval.data.claude_code import load_claude_code
from memeval.data.hf_traces import HfTracesConfig, load_hf_traces
from memeval.data.jsonl import SHOWN_PROBLEMS
from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.data.quality_sets import (
    load_conflict_pairs,
    load_memory_records,
    load_queries,
    load_scenarios,
)

Row = Callable[[int, str], dict[str, Any]]
Load = Callable[[Path, str], tuple[list[str], LoadReport]]


def _labelled(path: Path, on_error: str) -> tuple[list[str], LoadReport]:
    data = load_labeled_jsonl(path, on_error)
    return [e.assistant_response for e in data.entries], data.report


def _claude_code(path: Path, on_error: str) -> tuple[list[str], LoadReport]:
    data = load_claude_code(path, on_error=on_error)
    return [e.assistant_response for e in data.entries], data.report


def _hf_traces(path: Path, on_error: str) -> tuple[list[str], LoadReport]:
    data = load_hf_traces(HfTracesConfig(path=str(path)))  # always skips bad lines
    return [e.assistant_response for e in data.entries], data.report


def _records(path: Path, on_error: str) -> tuple[list[str], LoadReport]:
    items, report = load_memory_records(path, on_error)
    return [item.record.content for item in items], report


def _scenarios(path: Path, on_error: str) -> tuple[list[str], LoadReport]:
    items, report = load_scenarios(path, on_error)
    return [item.decision for item in items], report


def _pairs(path: Path, on_error: str) -> tuple[list[str], LoadReport]:
    items, report = load_conflict_pairs(path, on_error)
    return [item.a.content for item in items], report


def _queries(path: Path, on_error: str) -> tuple[list[str], LoadReport]:
    items, report = load_queries(path, on_error)
    return [item.query for item in items], report


# loader -> (one line of its schema carrying `text`, the loader giving those texts back)
LOADERS: dict[str, tuple[Row, Load]] = {
    "labelled": (lambda i, text: {"id": f"x{i}", "user_prompt": "why?",
                                  "assistant_response": text, "label": "noise"}, _labelled),
    "claude_code": (lambda i, text: {"type": "assistant", "uuid": f"u{i}", "sessionId": "s",
                                     "message": {"role": "assistant", "content": text}},
                    _claude_code),
    "hf_traces": (lambda i, text: {"id": f"r{i}", "user_prompt": "why?",
                                   "assistant_response": text}, _hf_traces),
    "memory_records": (lambda i, text: {"id": f"r{i}", "content": text, "label": "trusted"},
                       _records),
    "mai_scenarios": (lambda i, text: {"scenario_id": f"s{i}", "ground_truth": "unattributed",
                                       "agent_decision": text, "retrieved_memories": []},
                      _scenarios),
    "conflict_pairs": (lambda i, text: {"pair_id": f"p{i}", "a": {"content": text},
                                        "b": {"content": "another memory"}, "conflict": "none"},
                       _pairs),
    "retrieval_queries": (lambda i, text: {"query_id": f"q{i}", "query": text,
                                           "relevant": {"e1": 2}}, _queries),
}
WITH_ON_ERROR = [name for name in LOADERS if name != "hf_traces"]
DEEP = "[" * 5000 + "]" * 5000


def lines(name: str, *texts: str) -> list[bytes]:
    row = LOADERS[name][0]
    return [json.dumps(row(i, text)).encode() for i, text in enumerate(texts)]


def load(name: str, path: Path, on_error: str = "skip") -> tuple[list[str], LoadReport]:
    return LOADERS[name][1](path, on_error)


@pytest.mark.bad_input
@pytest.mark.parametrize("name", LOADERS)
def test_a_byte_order_mark_loses_no_row(tmp_path: Path, name: str) -> None:
    path = tmp_path / "set.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + b"\n".join(lines(name, "first", "second")) + b"\n")
    texts, report = load(name, path)
    assert texts == ["first", "second"] and report.problems == []


@pytest.mark.bad_input
@pytest.mark.parametrize("name", LOADERS)
def test_cr_only_line_endings_are_line_breaks(tmp_path: Path, name: str) -> None:
    one, two = lines(name, "first", "second")
    path = tmp_path / "set.jsonl"
    path.write_bytes(b"\r".join([one, b"{broken", b"", two]) + b"\r")
    texts, report = load(name, path)
    assert texts == ["first", "second"]
    assert len(report.problems) == 1 and report.problems[0].startswith(f"{path}:2: ")


@pytest.mark.bad_input
@pytest.mark.parametrize("name", LOADERS)
def test_a_lone_surrogate_is_replaced_and_counted(tmp_path: Path, name: str) -> None:
    path = tmp_path / "set.jsonl"
    path.write_bytes(b"\n".join(lines(name, "fine", "half \ud800 a pair", "pair \U0001f600"))
                     + b"\n")  # json.dumps escapes each as \uXXXX
    texts, report = load(name, path)
    assert texts == ["fine", "half \ufffd a pair", "pair \U0001f600"]
    assert report.stats["lone_surrogates"] == 1 and report.problems == []
    "".join(texts).encode("utf-8")  # what every store does with them


@pytest.mark.bad_input
@pytest.mark.parametrize("name", LOADERS)
def test_deep_nesting_is_one_bad_line(tmp_path: Path, name: str) -> None:
    first, deep, last = lines(name, "first", "deep", "last")
    deep = deep[:-1] + f', "extra": {DEEP}}}'.encode()
    path = tmp_path / "set.jsonl"
    path.write_bytes(b"\n".join([first, deep, last]) + b"\n")
    texts, report = load(name, path)
    assert texts == ["first", "last"]
    (problem,) = report.problems
    assert problem.startswith(f"{path}:2: ") and "nested too deeply" in problem


@pytest.mark.bad_input
@pytest.mark.parametrize("name", WITH_ON_ERROR)
def test_deep_nesting_under_raise_names_its_line(tmp_path: Path, name: str) -> None:
    first, deep = lines(name, "first", "deep")
    path = tmp_path / "set.jsonl"
    path.write_bytes(first + b"\n" + deep[:-1] + f', "extra": {DEEP}}}'.encode() + b"\n")
    with pytest.raises(DatasetError, match=rf"{re.escape(str(path))}:2: .*nested too deeply"):
        load(name, path, "raise")


def _zipped(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("set.jsonl", data)
    return buffer.getvalue()


JSONL = b"\n".join(lines("labelled", *(f"answer {i}" for i in range(5)))) + b"\n"
ROWS = [json.loads(line) for line in JSONL.splitlines()]
NOT_JSONL: dict[str, tuple[bytes, str]] = {
    "utf-16": (JSONL.decode().encode("utf-16"), "not read: wrong encoding: a UTF-16 byte-order"),
    "utf-16 without BOM": (JSONL.decode().encode("utf-16-le"), "NUL bytes"),
    "utf-32": (JSONL.decode().encode("utf-32"), "UTF-32 byte-order mark"),
    "gzip": (gzip.compress(JSONL), "gzip magic bytes; decompress it first"),
    "zip": (_zipped(JSONL), "zip magic bytes"),  # stored, so its lines are inside it as text
    "bzip2": (bz2.compress(JSONL), "bzip2 magic bytes"),
    "xz": (lzma.compress(JSONL), "xz magic bytes"),
    "JSON array": (json.dumps(ROWS).encode(), "a JSON array; write one object per line"),
    "pretty-printed": (json.dumps(ROWS[0], indent=2).encode(), "several lines"),
    "one huge line": (b" ".join([JSONL.splitlines()[0]] * 1000), "no line break"),
}


@pytest.mark.bad_input
@pytest.mark.parametrize("kind", NOT_JSONL)
def test_a_file_with_nothing_usable_names_its_likely_cause(tmp_path: Path, kind: str) -> None:
    data, cause = NOT_JSONL[kind]
    path = tmp_path / "set.jsonl"
    path.write_bytes(data)
    with pytest.raises(DatasetError) as caught:
        load_labeled_jsonl(path)
    message = str(caught.value)
    header, *shown = message.splitlines()
    assert header.startswith(f"{path}: no usable entries")
    assert shown[0].strip().startswith(f"{path}:1: ") and cause in shown[0]
    assert len(shown) <= SHOWN_PROBLEMS + 1  # the first few, then how many more
    with pytest.raises(DatasetError, match=re.escape(cause)):  # the first line raises with it
        load_labeled_jsonl(path, on_error="raise")


@pytest.mark.bad_input
@pytest.mark.parametrize("name", LOADERS)
def test_every_loader_lists_the_problems_of_a_file_with_nothing_usable(
        tmp_path: Path, name: str) -> None:
    path = tmp_path / "set.jsonl"
    path.write_bytes(b"\n".join(lines(name, "a", "b", "c", "d", "e")).decode().encode("utf-16-le"))
    with pytest.raises(DatasetError) as caught:
        load(name, path)
    shown = str(caught.value).splitlines()[1:]
    assert shown[0].strip().startswith(f"{path}:1: ") and "NUL bytes" in shown[0]
    assert [line.strip().split(": ", 1)[0] for line in shown[1:SHOWN_PROBLEMS]] == [
        f"{path}:{n}" for n in range(2, SHOWN_PROBLEMS + 1)]
    assert shown[-1].strip() == "… and 2 more"
