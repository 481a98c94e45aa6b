"""claude_code_entire_v1.jsonl holds what its data card says: sessions split whole, the blind
split untouched by the others, the doubly-labelled subset, prompts cut and every text redacted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.paths import data_path
from memeval.utils.redact import DEFAULT_REDACTOR

PATH = Path(data_path("labeled/claude_code_entire_v1.jsonl"))


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in PATH.read_text(encoding="utf-8").splitlines()]


def test_sessions_go_whole_to_one_split_with_the_cards_counts(rows: list[dict[str, Any]]) -> None:
    assert len({r["id"] for r in rows}) == len(rows) == 6219
    split_of: dict[str, set[str]] = {}
    for row in rows:
        split_of.setdefault(row["session"], set()).add(row["split"])
    assert all(len(splits) == 1 for splits in split_of.values())
    sessions = Counter(next(iter(s)) for s in split_of.values())
    assert sessions == {"learn": 34, "validate": 12, "test1": 38, "test2": 21, "test3": 25,
                        "test4": 32, "test5": 33}
    labels = Counter((r["split"], r["label"]) for r in rows)
    assert [[labels[(split, label)] for label in ("noise", "low_value", "substantive")]
            for split in ("test3", "test4", "test5")] == [[644, 22, 210], [670, 30, 249],
                                                          [641, 57, 214]]
    assert len(load_labeled_jsonl(PATH).entries) == 6219  # the loader reads every row


@pytest.mark.parametrize(("splits", "n", "same", "same_binary"), [
    ({"learn", "validate", "test1"}, 320, 298, 305),  # 93.1% and 95.3%
    ({"test2"}, 150, 143, 143),  # 95.3% and 95.3%
    ({"test3"}, 150, 140, 140),  # 93.3% and 93.3%
    ({"test4"}, 150, 132, 136),  # 88.0% and 90.7%
    ({"test5"}, 150, 135, 140),  # 90.0% and 93.3%
])
def test_agreement_subsets_are_the_cards(rows: list[dict[str, Any]], splits: set[str], n: int,
                                         same: int, same_binary: int) -> None:
    pairs = [(r["label"], r["second_label"]) for r in rows
             if r["second_label"] is not None and r["split"] in splits]
    assert len(pairs) == n
    assert sum(a == b for a, b in pairs) == same
    assert sum((a == "substantive") == (b == "substantive") for a, b in pairs) == same_binary


def test_texts_are_redacted_and_prompts_cut(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        for field in ("user_prompt", "assistant_response"):
            assert DEFAULT_REDACTOR.redact(row[field]) == row[field], (row["id"], field)
        assert len(row["user_prompt"]) <= 2000 + len(" […]")
