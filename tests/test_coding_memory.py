"""The coding memory benchmark: its folder's checks, the search over what was kept before a
question is asked, and the bundled questions' own promises (size, splits, order in time)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memeval.data.base import DatasetError
from memeval.data.coding_memory import (
    CATEGORIES,
    BenchQuestion,
    load_questions,
    load_turns,
    parse_time,
)
from memeval.experiments.coding_memory import CodingMemory, CodingMemoryConfig
from memeval.paths import data_path
from memeval.systems.base import Hit
from memeval.utils.redact import redact

BUNDLED = data_path("coding_memory")


def _turn(n: int, minute: int, project: str = "p", session: str = "s1") -> dict[str, Any]:
    return {"id": f"t{n}", "project": project, "split": "dev", "session": session,
            "timestamp": f"2026-01-05T10:{minute:02d}:00Z", "user_prompt": "",
            "assistant_response": f"turn {n} text", "label": "substantive"}


def _question(qid: str, evidence: list[str], asked: str = "2026-01-05T11:00:00Z",
              category: str = "decision", answer: str | None = "gold") -> dict[str, Any]:
    return {"id": qid, "project": "p", "split": "dev", "category": category,
            "question": f"question {qid}", "answer": answer, "evidence": evidence,
            "asked_session": "s2", "asked_at": asked, "labeller": "L"}


def _folder(tmp_path: Path, turns: list[dict[str, Any]],
            questions: list[dict[str, Any]]) -> Path:
    for part, rows, name in (("turns", turns, "p"), ("questions", questions, "dev")):
        (tmp_path / part).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / part / f"{name}.parquet")
    return tmp_path


def test_turns_stream_in_time_order_and_a_bad_row_is_named(tmp_path: Path) -> None:
    bad = _turn(3, 1) | {"assistant_response": "  "}
    folder = _folder(tmp_path, [_turn(1, 30), _turn(2, 5), bad], [_question("q", ["t2"])])
    dataset = load_turns(folder)
    assert [e.id for e in dataset.entries] == ["t2", "t1"]
    assert dataset.report.problems and "p.parquet:3" in dataset.report.problems[0]
    with pytest.raises(DatasetError, match=r"p\.parquet:3"):
        load_turns(folder, on_error="raise")


def test_a_folder_without_turns_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no parquet files"):
        load_turns(tmp_path)


def test_questions_are_checked_against_the_stream(tmp_path: Path) -> None:
    questions = [_question("ok", ["t1"]),
                 _question("late", ["t2"], asked="2026-01-05T10:20:00Z"),  # t2 at 10:30
                 _question("unknown", ["t9"]),
                 _question("abstain-with-answer", [], category="unanswerable"),
                 _question("abstain", [], category="unanswerable", answer=None)]
    folder = _folder(tmp_path, [_turn(1, 5), _turn(2, 30)], questions)
    found, report = load_questions(folder, load_turns(folder).entries, ["dev"])
    assert [q.id for q in found] == ["ok", "abstain"]
    problems = " ".join(report.problems)
    assert "at or after the question is asked" in problems and "'t9' is not a turn" in problems
    assert "unanswerable question has no answer" in problems
    with pytest.raises(DatasetError, match="no split test"):
        load_questions(folder, load_turns(folder).entries, ["test"])


class Ranked:
    """A system whose ranking is fixed; it records how deep it was asked."""

    name = "ranked"

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self.asked: list[int] = []

    def search(self, query: str, k: int) -> list[Hit]:
        self.asked.append(k)
        return [Hit(i, 1.0 - n / 100) for n, i in enumerate(self.order[:k])]


def test_served_is_the_top_k_of_what_was_kept_before_the_question() -> None:
    # m0..m39 kept in time order, m20.. after the question; the ranking puts the later ones first
    written = {f"m{i}": datetime(2026, 1, 5, 10, i, tzinfo=UTC) for i in range(40)}
    order = [f"m{i}" for i in range(39, -1, -1)]
    system = Ranked(order)
    asked = BenchQuestion("q", "p", "dev", "decision", "?", "a", ("m3",), "s",
                          datetime(2026, 1, 5, 10, 20, tzinfo=UTC), "L")
    served, _ = CodingMemory(CodingMemoryConfig(k=5))._served(system, asked, 20, 40, written)
    assert served == ["m19", "m18", "m17", "m16", "m15"]
    assert system.asked == [20, 40]  # 2·k·⌈40/20⌉ held none of them: four times deeper
    few = Ranked(order)  # only 2 kept before: asked until the whole store was ranked
    served, _ = CodingMemory(CodingMemoryConfig(k=5))._served(few, asked, 2, 40, {
        **written, **{f"m{i}": datetime(2026, 1, 5, 10, 30 + i % 20, tzinfo=UTC)
                      for i in range(2, 40)}})
    assert served == ["m1", "m0"] and few.asked == [40]


def test_the_bundled_benchmark_keeps_its_promises() -> None:
    turns = load_turns(BUNDLED)
    assert not turns.report.problems
    questions, report = load_questions(BUNDLED, turns.entries, ["dev", "blind"])
    assert not report.problems and len(questions) >= 500
    assert set(Counter(q.category for q in questions)) == set(CATEGORIES)
    session = {e.id: e.meta["session"] for e in turns.entries}
    by_split: dict[str, set[str]] = {"dev": set(), "blind": set()}
    for q in questions:
        by_split[q.split] |= {session[i] for i in q.evidence} | {q.asked_session}
        assert all(parse_time(e.meta["timestamp"]) < q.asked_at for e in turns.entries
                   if e.id in q.evidence)
        for text in (q.text, q.answer or ""):
            assert redact(text) == text  # nothing a secret scan would find
    assert not by_split["dev"] & by_split["blind"]  # split by session


def test_the_benchmark_folder_loads_with_datasets(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    loaded = datasets.load_dataset(str(BUNDLED), "questions", cache_dir=str(tmp_path))
    mine, _ = load_questions(BUNDLED, load_turns(BUNDLED).entries, ["dev", "blind"])
    assert sum(len(loaded[s]) for s in ("dev", "blind")) == len(mine)
