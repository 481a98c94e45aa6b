"""The leaderboard goes to a real Phoenix server on loopback as one dataset, replaced by each
push: an example per system and figure (the figure, its CI and the run it came from), and one
per failed run with why."""

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
    push(board, phoenix_url, 10.0, "memeval leaderboard test")
    dataset_id = push(board, phoenix_url, 10.0, "memeval leaderboard test")  # rebuilt: replaced
    with httpx.Client(base_url=phoenix_url, timeout=10.0) as client:
        named = [d for d in client.get("/v1/datasets").json()["data"]
                 if d["name"] == "memeval leaderboard test"]
        examples = client.get(f"/v1/datasets/{dataset_id}/examples").json()["data"]["examples"]
    assert [d["id"] for d in named] == [dataset_id]  # one dataset, however often pushed
    by_system = {e["input"]["system"]: e for e in examples}
    assert set(by_system) == {"reference", "mem0", "memledger"}
    reference, mem0 = by_system["reference"], by_system["mem0"]
    assert (reference["input"]["measure"], reference["output"]["value"]) == ("F1", 0.121)
    assert mem0["output"]["ci95"] == [0.107, 0.131] and mem0["metadata"]["run"] == "r2"
    assert by_system["memledger"]["output"] == {"reason": "answerer: 3 of 9 failed"}
