"""The scale benchmark's workloads: bundled data replicated to any size, each copy tagged, so
no two items are the same text (nothing is served from a cache or merged as a duplicate).

Each builder writes its files under a work directory and returns the config overrides that
point an experiment at them. Sizes count the family's own items: trace entries, memories,
conflict pairs or memory records.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memeval.paths import data_path

LABELLED = "labeled/write_gate_v1.jsonl"
QUERIES = "retrieval/queries_v1.jsonl"
PAIRS = "conflicts/memory_pairs_v1.jsonl"
RECORDS = "mqs/memory_records_v1.jsonl"


def bundled(relative: str) -> list[dict[str, Any]]:
    text = Path(data_path(relative)).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def copies(base: list[dict[str, Any]], size: int,
           tag: Callable[[dict[str, Any], int], dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """`size` rows cycling through `base`; copy c of a row is `tag(row, c)`."""
    for i in range(size):
        yield tag(dict(base[i % len(base)]), i // len(base))


def write_jsonl(path: Path, rows: Iterator[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path


def conversations(work: Path, memories: int) -> Path:
    """A LoCoMo file of ⌈memories / 288⌉ conversations: each the bundled labelled responses as
    its turns (tagged with the conversation) and the bundled retrieval queries as its questions,
    their evidence the turns they name and their gold answer the first of those turns, so
    queries grow with memories while each searches only its own conversation."""
    entries = [e for e in bundled(LABELLED) if e["assistant_response"].strip()]
    turn = {e["id"]: f"D1:{n + 1}" for n, e in enumerate(entries)}
    text = {e["id"]: e["assistant_response"] for e in entries}
    questions = [q for q in bundled(QUERIES) if any(i in turn for i in q["relevant"])]
    samples = []
    for c in range(math.ceil(memories / len(entries))):
        kept = entries[: memories - c * len(entries)]
        held = {e["id"] for e in kept}
        samples.append({
            "sample_id": f"conv-{c}",
            "conversation": {
                "speaker_a": "user", "speaker_b": "assistant",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [{"speaker": "assistant", "dia_id": turn[e["id"]],
                               "text": f"{e['assistant_response']} (conversation {c})"}
                              for e in kept]},
            "qa": [{"question": q["query"], "category": 4,
                    "evidence": [turn[i] for i in q["relevant"] if i in held],
                    "answer": next(text[i] for i in q["relevant"] if i in held)}
                   for q in questions if any(i in held for i in q["relevant"])]})
    path = work / "conversations.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def gate_entries(work: Path, entries: int) -> list[str]:
    """The three-pass write-gate replay over `entries` labelled entries."""
    def tag(row: dict[str, Any], c: int) -> dict[str, Any]:
        row["id"] = f"{row['id']}-{c}"
        if c and row["assistant_response"]:
            row["assistant_response"] += f"\n\n(session {c})"
        return row

    path = write_jsonl(work / "entries.jsonl", copies(bundled(LABELLED), entries, tag))
    return ["+experiment=three_pass", "dataset=labeled_jsonl", f"dataset.path={path}"]


def retrieval_conversations(work: Path, memories: int) -> list[str]:
    """Every arm's replay over conversations (`conversations`): one pass, since passes only
    multiply the cost."""
    return ["+experiment=retrieval_replay", "dataset=locomo",
            f"dataset.path={conversations(work, memories)}", "experiment.passes=1"]


def qa_conversations(work: Path, memories: int) -> list[str]:
    """Memory QA over the same conversations: the reference engine's search, the extractive
    answerer, no grader."""
    return ["+experiment=memory_qa", "dataset=locomo",
            f"dataset.path={conversations(work, memories)}"]


def tagged_pairs(work: Path, pairs: int) -> list[str]:
    """Conflict detection's development pairs, both memories of copy c tagged with it."""
    def tag(row: dict[str, Any], c: int) -> dict[str, Any]:
        row["pair_id"] = f"{row['pair_id']}-{c}"
        if c:
            row["a"] = {**row["a"], "content": f"{row['a']['content']} (copy {c})"}
            row["b"] = {**row["b"], "content": f"{row['b']['content']} (copy {c})"}
        return row

    path = write_jsonl(work / "pairs.jsonl", copies(bundled(PAIRS), pairs, tag))
    return ["+experiment=conflict_detection", f"experiment.pairs={path}"]


def tagged_records(work: Path, records: int) -> list[str]:
    """MQS calibration's development records, copy c's ids and contents tagged with it."""
    def tag(row: dict[str, Any], c: int) -> dict[str, Any]:
        for key in ("derived_from", "conflicts"):  # ids of records in the same copy
            row[key] = [f"{i}-{c}" for i in row.get(key) or []]
        row["id"] = f"{row['id']}-{c}"
        if c:
            row["content"] += f" (copy {c})"
        return row

    path = write_jsonl(work / "records.jsonl", copies(bundled(RECORDS), records, tag))
    return ["+experiment=mqs_calibration", f"experiment.records={path}"]
