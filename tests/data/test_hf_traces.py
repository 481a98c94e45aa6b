"""The HF trace-corpus loader on local exports written in the corpus schema, and offline."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memeval.data.hf_traces import HfTracesConfig, load_hf_traces
from memeval.data.labeled_jsonl import DatasetError


def row(i: int, response: str, prompt: str = "fix the test", **extra: Any) -> dict[str, Any]:
    messages = [{"role": "user", "content": [{"type": "text", "text": f"msg prompt {i}"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash",
                                                   "input": {}},
                                                  {"type": "text", "text": f"msg answer {i}"}]}]
    return {"id": f"r{i}", "model": "claude-sonnet-4", "timestamp": "2025-07-01T10:00:00Z",
            "request_id": f"req_{i}", "messages_json": json.dumps(messages), "tools_json": "[]",
            "system_prompt": "", "user_prompt": prompt, "assistant_response": response,
            "gitdiff": "", "claude_log": "", "has_empty_response": not response, **extra}


ROWS = [
    row(0, "I'll run the tests now."),
    row(1, ""),
    row(2, "   "),
    row(3, "The flaky test comes from a shared tmp dir.",
        prompt=json.dumps([{"type": "text", "text": "why is it flaky?"},
                           {"type": "tool_result", "tool_use_id": "x", "content": "log"}])),
    row(4, "x" * 40_000),
]


@pytest.fixture(params=["jsonl", "parquet"])
def export(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "jsonl":
        path = tmp_path / "traces.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    else:
        path = tmp_path / "traces.parquet"
        pd.DataFrame(ROWS).to_parquet(path)
    return path


def test_local_export_normalises_rows(export: Path) -> None:
    data = load_hf_traces(HfTracesConfig(path=str(export), max_chars=32768))
    assert [e.id for e in data.entries] == ["hf:r0", "hf:r3", "hf:r4"]
    assert data.report.stats["empty_responses"] == 2
    assert data.report.stats["json_array_prompts"] == 1
    assert data.entries[1].user_prompt == "why is it flaky?"
    assert data.report.stats["truncated"] == 1
    assert len(data.entries[2].assistant_response) == 32768
    assert data.entries[0].label is None and data.entries[0].meta["model"] == "claude-sonnet-4"


def test_keep_empty_and_limit(export: Path) -> None:
    data = load_hf_traces(HfTracesConfig(path=str(export), keep_empty=True, limit=2))
    assert [e.id for e in data.entries] == ["hf:r0", "hf:r1"]


def test_messages_json_gives_last_user_and_assistant_text(export: Path) -> None:
    data = load_hf_traces(HfTracesConfig(path=str(export), use_messages=True))
    assert data.entries[0].user_prompt == "msg prompt 0"
    assert data.entries[0].assistant_response == "msg answer 0"


def test_streaming_reads_the_same_rows(export: Path) -> None:
    eager = load_hf_traces(HfTracesConfig(path=str(export)))
    streamed = load_hf_traces(HfTracesConfig(path=str(export), streaming=True))
    assert [e.id for e in streamed.entries] == [e.id for e in eager.entries]


def test_a_folder_of_shards_is_one_dataset(tmp_path: Path) -> None:
    for shard in range(2):
        pd.DataFrame([row(shard * 10 + i, f"answer {i} with enough text")
                      for i in range(3)]).to_parquet(tmp_path / f"part-{shard}.parquet")
    assert len(load_hf_traces(HfTracesConfig(path=str(tmp_path))).entries) == 6


@pytest.mark.bad_input
def test_missing_local_path_names_it(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no parquet or JSONL trace files"):
        load_hf_traces(HfTracesConfig(path=str(tmp_path / "nowhere")))


def test_offline_hub_fails_fast_with_the_way_out(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "empty-cache"))
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    start = time.monotonic()
    with pytest.raises(DatasetError) as caught:
        load_hf_traces(HfTracesConfig())
    assert time.monotonic() - start < 30  # seconds, not the ~23 s of retries per call
    message = str(caught.value)
    assert "nlile/misc-merged-claude-code-traces-v1" in message
    assert "dataset.path=" in message and "dataset.corpus_path=" in message
    assert "HF_DATASETS_OFFLINE=1" in message


def test_a_conversation_ending_on_the_user_has_no_response(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "old"},
                {"role": "user", "content": "second"}]
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(row(9, "", messages_json=json.dumps(messages))) + "\n"
                    + json.dumps(row(10, "kept")) + "\n")
    data = load_hf_traces(HfTracesConfig(path=str(path), use_messages=True))
    assert [e.id for e in data.entries] == ["hf:r10"]
    assert data.report.stats["empty_responses"] == 1


@pytest.mark.bad_input
def test_a_broken_jsonl_line_is_reported_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(row(1, "first answer")) + "\n{broken\n"
                    + json.dumps(row(2, "second answer")) + "\n")
    data = load_hf_traces(HfTracesConfig(path=str(path)))
    assert [e.id for e in data.entries] == ["hf:r1", "hf:r2"]
    assert data.report.rows_read == 3
    assert data.report.problems and data.report.problems[0].startswith(f"{path}:2:")


@pytest.mark.bad_input
def test_lone_surrogates_decoded_from_parquet_json_columns_are_replaced(tmp_path: Path) -> None:
    """Parquet holds valid text, but a JSON column's escapes can decode to a lone surrogate,
    which no UTF-8 store could write: replaced and counted, as the JSONL loaders do."""
    messages = [{"role": "user", "content": "split \ud83d"},
                {"role": "assistant", "content": "half \udc00 of a pair"}]
    path = tmp_path / "traces.parquet"
    pd.DataFrame([row(1, "x", messages_json=json.dumps(messages)),
                  row(2, "x", prompt=json.dumps([{"type": "text", "text": "why \ud800?"}]))]
                 ).to_parquet(path)
    by_messages = load_hf_traces(HfTracesConfig(path=str(path), use_messages=True))
    first = by_messages.entries[0]
    assert (first.user_prompt, first.assistant_response) == ("split \ufffd",
                                                             "half \ufffd of a pair")
    flat = load_hf_traces(HfTracesConfig(path=str(path)))
    assert flat.entries[1].user_prompt == "why \ufffd?"
    for data in (by_messages, flat):
        assert data.report.stats["lone_surrogates"] == 1
        "".join(e.user_prompt + e.assistant_response for e in data.entries).encode("utf-8")


@pytest.mark.bad_input
def test_deeply_nested_json_columns_are_one_bad_row(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    path = tmp_path / "traces.parquet"
    pd.DataFrame([row(1, "kept", prompt=deep, messages_json=deep),
                  row(2, "kept too")]).to_parquet(path)
    flat = load_hf_traces(HfTracesConfig(path=str(path)))
    assert flat.entries[0].user_prompt == deep  # not a block list: the prompt as written
    by_messages = load_hf_traces(HfTracesConfig(path=str(path), use_messages=True))
    assert [e.id for e in by_messages.entries] == ["hf:r2"]
    assert by_messages.report.problems == [f"{path}: row 1: JSON nested too deeply to read"]
