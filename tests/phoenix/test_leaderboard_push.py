"""The leaderboard goes to a real Phoenix server on loopback as a dataset: one example per
system, its figures as the output and their CIs as metadata."""

from __future__ import annotations

import httpx
import pytest

from memeval.reporting.leaderboard import DEFAULT, Board, Candidate, Failed, push
from memeval.reporting.outputs import Score

pytestmark = pytest.mark.integration


def test_the_leaderboard_is_a_phoenix_dataset(phoenix_url: str) -> None:
    board = Board()
    for system, figure, run in (("reference", (0.121, (0.109, 0.132)), "r1"),
                                ("mem0", (0.119, (0.107, 0.131)), "r2")):
        score = Score("QA (locomo10, extractive)", "F1", *figure)
        board.add(system, Candidate(system, score.benchmark, (score,), run, DEFAULT, "hashing",
                                    "2026-11-29T05:00:00"))
    board.failed.append(Failed("memledger", "memory_qa", "r3", "answerer: 3 of 9 failed"))
    board.cells["memledger"] = {}
    board.systems.append("memledger")
    dataset_id = push(board, phoenix_url, 10.0, "memeval leaderboard test")
    with httpx.Client(base_url=phoenix_url, timeout=10.0) as client:
        examples = client.get(f"/v1/datasets/{dataset_id}/examples").json()["data"]["examples"]
    by_system = {e["input"]["system"]: e for e in examples}
    assert set(by_system) == {"reference", "mem0", "memledger"}
    key = "QA (locomo10, extractive) / F1"
    assert by_system["reference"]["output"] == {key: 0.121}
    assert by_system["mem0"]["metadata"]["ci95"] == {key: [0.107, 0.131]}
    assert by_system["memledger"]["metadata"]["failed"] == ["answerer: 3 of 9 failed"]
