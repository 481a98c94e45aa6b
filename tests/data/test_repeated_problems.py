"""A file with thousands of records skipped for the same reason (a repeated id, a query naming a
memory that is not loaded): every one is counted in the load report, which reaches metrics.json,
while the warnings hold the first few of each kind and one line saying how many there were."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memeval.data.base import LoadReport
from memeval.data.corpus_jsonl import load_memory_jsonl
from memeval.experiments.base import RunContext
from memeval.utils.problems import MAX_KINDS, SHOWN_PER_KIND, Problems

pytestmark = pytest.mark.bad_input

REPEATS = 2000


def _lines(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_repeated_bad_records_are_each_counted_and_warned_about_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    memories = _lines(tmp_path / "memories.jsonl", [{"id": "m1", "text": "make builds it"}]
                      + [{"id": "m1", "text": f"copy {n}"} for n in range(REPEATS)])
    queries = _lines(tmp_path / "queries.jsonl", [{"id": "q0", "query": "build?", "relevant":
                                                   ["m1"]}]
                     + [{"id": f"q{n}", "query": "x", "relevant": [f"gone{n}"]}
                        for n in range(1, REPEATS + 1)])
    corpus = load_memory_jsonl(memories, queries)
    assert corpus.report.skipped == 2 * REPEATS and len(corpus.queries) == 1
    with caplog.at_level(logging.WARNING):
        RunContext._reported(corpus)  # what a run logs of its input
    warned = [record.getMessage() for record in caplog.records]
    assert len(warned) == 2 * (SHOWN_PER_KIND + 1)
    assert warned[0] == f"skipped {memories}:2: duplicate id 'm1'"
    assert warned[-2:] == [
        f"skipped {REPEATS} in all like {memories}:2: duplicate id 'm1'",
        f"skipped {REPEATS} in all like {queries}:2: relevant memories ['gone1'] are not loaded"]


def test_any_number_of_kinds_is_told_in_a_bounded_number_of_lines() -> None:
    found = Problems()
    for n in range(500):
        found.add(f"data.jsonl:{n}", f"field {chr(65 + n % 26) * (n // 26 + 1)} is wrong")
    lines = found.lines()
    assert found.count == 500 and len(lines) <= MAX_KINDS * (SHOWN_PER_KIND + 1) <= 100
    assert lines[-1] == "485 in all of other kinds, such as data.jsonl:15: field P is wrong"


def test_two_sources_combined_keep_every_count() -> None:
    first, second = LoadReport("a"), LoadReport("b")
    for n in range(7):
        first.skip(f"a.jsonl:{n}", "duplicate id 'x'")
    second.skip("b.jsonl:1", "no text")
    first.found.absorb(second.found)
    assert first.skipped == 8
    assert first.problems[-2:] == ["b.jsonl:1: no text",
                                   "7 in all like a.jsonl:0: duplicate id 'x'"]
