"""Claude Code session-log loader: real corpus shape, prompt pairing, broken lines, sidechains."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memeval.data.base import DATASETS
from memeval.data.claude_code import load_claude_code
from memeval.data.labeled_jsonl import DatasetError
from memeval.data.labellers import LABELLERS
from memeval.registry import ConfigError

CORPUS = Path(__file__).resolve().parents[2] / "data/claude_code/vsla"
LABELLED = CORPUS.parents[1] / "labeled/claude_code_vsla_v1.jsonl"
KNOWN_SESSION = "2cba43de-c8d2-4a69-add8-9fae3ad93900"
SESSION = "s-1"


@pytest.fixture(scope="module")
def corpus() -> Path:
    assert CORPUS.is_dir(), f"the bundled Claude Code sessions are missing at {CORPUS}"
    return CORPUS


# ---- real corpus -----------------------------------------------------------------------------


def test_real_corpus_counts_and_meta(corpus: Path) -> None:
    dataset = load_claude_code(corpus)
    entries, stats = dataset.entries, dataset.report.stats
    # ≈750 non-empty text blocks in all; ~85 of them belong to subagent sidechains.
    assert 600 <= len(entries) <= 760
    assert dataset.report.problems == []
    assert stats["files"] == 15 and stats["summary_events"] == 40
    assert stats["sidechain_events"] > 300 and stats["tool_result_user_events"] > 800
    assert stats["synthetic_user_events"] >= 12  # at least the isMeta caveats
    assert len({e.id for e in entries}) == len(entries)
    for e in entries:
        assert e.label is None and e.label_source is None and e.assistant_response.strip()
        for key in ("session_id", "uuid", "model", "timestamp", "cwd", "file", "line"):
            assert e.meta[key], (e.id, key)
        assert e.meta["model"].startswith("claude-")
        assert e.id == f"{e.meta['session_id']}:{e.meta['uuid']}:{e.meta['block_index']}"
        assert e.meta["is_sidechain"] is False


def test_the_labelled_real_turns_are_every_turn_the_loader_reads(corpus: Path) -> None:
    """claude_code_vsla_v1.jsonl labels each loaded turn once, with its text as loaded, split by
    whole sessions, with the doubly-labelled subset its card quotes agreement on."""
    rows = [json.loads(line) for line in LABELLED.read_text().splitlines()]
    entries = load_claude_code(corpus).entries
    assert [r["id"] for r in rows] == [e.id for e in entries]
    for row, entry in zip(rows, entries, strict=True):
        assert (row["user_prompt"], row["assistant_response"]) == \
            (entry.user_prompt, entry.assistant_response)
        assert row["session"] == entry.meta["session_id"]
    splits: dict[str, set[str]] = {"learn": set(), "evaluate": set()}
    for row in rows:
        splits[row["split"]].add(row["session"])
    assert splits["learn"] and splits["evaluate"] and not splits["learn"] & splits["evaluate"]
    second = [(r["label"], r["second_label"]) for r in rows if r["second_label"] is not None]
    assert len(second) == 150
    assert sum(a == b for a, b in second) == 138  # 92.0%, as the card says
    assert {r["label"] for r in rows} == {"noise", "low_value", "substantive"}


def test_real_corpus_prompts_are_real_user_text(corpus: Path) -> None:
    entries = load_claude_code(corpus).entries
    assert sum(1 for e in entries if e.user_prompt) == len(entries)  # every session opens with one
    for e in entries:
        prompt = e.user_prompt
        assert not prompt.startswith(("<command-", "<local-command-", "Caveat:", "[Request "))
        assert not prompt.startswith("This session is being continued")
        assert "tool_use_id" not in prompt and not prompt.startswith("[{")


def test_real_corpus_known_first_pair(corpus: Path) -> None:
    # Line 1 is the user's pasted review, line 2 a thinking-only assistant event, line 3 the text.
    dataset = load_claude_code(corpus / f"{KNOWN_SESSION}.jsonl")
    first, second, third = dataset.entries[:3]
    assert first.user_prompt.startswith("**Peer‑Review Report")
    assert first.assistant_response.startswith(
        "This is a thorough and well-structured review! The reviewer clearly understands")
    assert first.meta["line"] == 3 and first.meta["model"] == "claude-sonnet-4-20250514"
    assert first.id == f"{KNOWN_SESSION}:8e5719de-710f-4015-ac93-a149794b400e:0"
    assert second.user_prompt.startswith("1. CPU and CUDA are mandatory, AMD is high priority")
    assert second.assistant_response.startswith("Perfect! Those priorities and approaches align")
    # line 7 is a tool_result-only user event: the prompt stays the line-4 question
    assert third.meta["line"] == 8 and third.user_prompt == second.user_prompt
    assert third.assistant_response.startswith("## Implementation Strategy")


def test_real_corpus_sidechains_keep_their_own_prompts(corpus: Path) -> None:
    main = {e.id: e for e in load_claude_code(corpus).entries}
    both = load_claude_code(corpus, include_sidechains=True)
    side = [e for e in both.entries if e.meta["is_sidechain"]]
    assert len(both.entries) == len(main) + len(side) and 60 <= len(side) <= 120
    assert 700 <= len(both.entries) <= 800 and both.report.stats["sidechain_events"] == 0
    for e in both.entries:
        if not e.meta["is_sidechain"]:
            assert e.user_prompt == main[e.id].user_prompt
    main_prompts = {e.user_prompt for e in main.values()}
    assert all(e.user_prompt and e.user_prompt not in main_prompts for e in side)


def test_registered_and_limit(corpus: Path) -> None:
    dataset = DATASETS.build({"name": "claude_code", "path": str(corpus), "limit": 5})
    assert len(dataset.entries) == 5 and dataset.name == "vsla"
    assert dataset.entries[0].meta["file"].endswith("069508a5-1193-487c-a9b5-a6f5f3ae4f98.jsonl")


# ---- synthetic logs --------------------------------------------------------------------------

_counter = iter(range(10**6))


def event(kind: str, content: str | list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    n = next(_counter)
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["model"] = "claude-test"
    return {"type": kind, "uuid": f"u{n}", "parentUuid": None, "isSidechain": False,
            "sessionId": SESSION, "cwd": "/repo", "timestamp": f"2025-01-01T00:00:{n % 60:02d}Z",
            "message": message, **extra}


def user(text: str, **extra: Any) -> dict[str, Any]:
    return event("user", text, **extra)


def said(*texts: str, **extra: Any) -> dict[str, Any]:
    return event("assistant", [{"type": "text", "text": t} for t in texts], **extra)


def tool_result() -> dict[str, Any]:
    return event("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok output"}])


def write(path: Path, lines: list[bytes | dict[str, Any] | list[Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    encoded = [ln if isinstance(ln, bytes) else json.dumps(ln).encode() for ln in lines]
    path.write_bytes(b"\n".join(encoded) + b"\n")
    return path


@pytest.mark.bad_input
def test_broken_lines_reported_with_file_line_and_skipped(tmp_path: Path) -> None:
    log = write(tmp_path / "p" / "s.jsonl", [
        user("first question"),
        b'{"type": "assistant", ',                       # 2: bad JSON
        b'{"type": "user", "message": "caf\xe9"}',        # 3: invalid UTF-8
        [1, 2, 3],                                       # 4: not an object
        {"uuid": "x", "sessionId": SESSION},             # 5: no type
        {"type": "assistant", "sessionId": SESSION, "uuid": "y"},  # 6: no message
        {**said("no session"), "sessionId": None},       # 7: no sessionId
        said("the answer"),
    ])
    dataset = load_claude_code(log)
    assert [(e.user_prompt, e.assistant_response) for e in dataset.entries] == [
        ("first question", "the answer")]
    problems = dataset.report.problems
    assert [p.split(": ", 1)[0] for p in problems] == [f"{log}:{n}" for n in range(2, 8)]
    assert "utf-8" in problems[1].lower() and "JSON object, got list" in problems[2]
    assert "'type'" in problems[3] and "'message'" in problems[4] and "'sessionId'" in problems[5]
    assert dataset.report.rows_read == 8 and dataset.report.skipped == 6


def test_on_error_raise_names_file_and_line(tmp_path: Path) -> None:
    log = write(tmp_path / "s.jsonl", [user("q"), said("a"), b"not json"])
    with pytest.raises(DatasetError, match=rf"{re.escape(str(log))}:3: "):
        load_claude_code(log, on_error="raise")
    assert len(load_claude_code(log).entries) == 1  # skip mode still loads the good lines


def test_synthetic_and_tool_result_user_events_never_become_prompt(tmp_path: Path) -> None:
    log = write(tmp_path / "s.jsonl", [
        {"type": "summary", "summary": "Earlier work", "leafUuid": "z"},
        said("before any prompt"),
        user("fix the flaky test"),
        said("Looking at it."),
        tool_result(),
        user("Caveat: The messages below were generated by the user while running local "
             "commands. DO NOT respond to these messages", isMeta=True),
        user("<command-name>/status</command-name>\n<command-message>status</command-message>"),
        user("<local-command-stdout>ok</local-command-stdout>"),
        event("user", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
        user("This session is being continued from a previous conversation.",
             isCompactSummary=True),
        said("Fixed: the test now waits for the server."),
        user("now update the changelog"),
        said("Done."),
    ])
    dataset = load_claude_code(log)
    pairs = [(e.user_prompt, e.assistant_response) for e in dataset.entries]
    assert pairs == [("", "before any prompt"),
                     ("fix the flaky test", "Looking at it."),
                     ("fix the flaky test", "Fixed: the test now waits for the server."),
                     ("now update the changelog", "Done.")]
    stats = dataset.report.stats
    assert stats["tool_result_user_events"] == 1 and stats["synthetic_user_events"] == 5
    assert stats["real_user_prompts"] == 2 and stats["summary_events"] == 1
    assert stats["no_prompt_yet"] == 1


def test_mixed_user_event_keeps_only_real_text(tmp_path: Path) -> None:
    log = write(tmp_path / "s.jsonl", [
        event("user", [{"type": "image", "source": {}},
                       {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                       {"type": "text", "text": "what is in this screenshot?"}]),
        said("A login form."),
    ])
    assert load_claude_code(log).entries[0].user_prompt == "what is in this screenshot?"


def test_thinking_and_tool_use_blocks_are_not_entries(tmp_path: Path) -> None:
    log = write(tmp_path / "s.jsonl", [
        user("q"),
        event("assistant", [{"type": "thinking", "thinking": "private reasoning"},
                            {"type": "text", "text": "visible answer"},
                            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}},
                            {"type": "text", "text": "  \n "},
                            {"type": "text", "text": "second text"}]),
    ])
    dataset = load_claude_code(log)
    assert [e.assistant_response for e in dataset.entries] == ["visible answer", "second text"]
    assert [e.meta["block_index"] for e in dataset.entries] == [1, 4]
    assert dataset.report.stats["non_text_blocks"] == 2
    assert dataset.report.stats["empty_text"] == 1


def test_sidechains_excluded_by_default_and_included_on_request(tmp_path: Path) -> None:
    log = write(tmp_path / "s.jsonl", [
        user("main question"),
        said("delegating"),
        user("subagent task: grep for TODO", isSidechain=True),
        said("found 3 TODOs", isSidechain=True),
        tool_result(),
        said("main answer"),
    ])
    default = load_claude_code(log)
    assert [e.assistant_response for e in default.entries] == ["delegating", "main answer"]
    assert {e.user_prompt for e in default.entries} == {"main question"}
    assert default.report.stats["sidechain_events"] == 2
    both = load_claude_code(log, include_sidechains=True)
    assert [(e.user_prompt, e.assistant_response, e.meta["is_sidechain"])
            for e in both.entries] == [
        ("main question", "delegating", False),
        ("subagent task: grep for TODO", "found 3 TODOs", True),
        ("main question", "main answer", False)]


@pytest.mark.bad_input
def test_truncation_and_min_chars_are_counted(tmp_path: Path) -> None:
    log = write(tmp_path / "s.jsonl", [user("q"), said("x" * 50, "ok", "y" * 10)])
    dataset = load_claude_code(log, max_chars=20, min_chars=3)
    assert [e.assistant_response for e in dataset.entries] == ["x" * 20, "y" * 10]
    assert dataset.report.stats["truncated"] == 1 and dataset.report.stats["empty_text"] == 1


@pytest.mark.bad_input
def test_duplicate_events_across_files_load_once(tmp_path: Path) -> None:
    question, answer = user("q"), said("a")
    write(tmp_path / "proj" / "a.jsonl", [question, answer])
    write(tmp_path / "proj" / "b.jsonl", [question, answer, said("new in b")])
    dataset = load_claude_code(tmp_path)  # a folder of project folders
    assert [e.assistant_response for e in dataset.entries] == ["a", "new in b"]
    assert dataset.entries[0].meta["file"].endswith("a.jsonl")  # sorted path order
    assert dataset.report.stats["duplicate_blocks"] == 1 and dataset.report.stats["files"] == 2


def test_string_assistant_content_and_interrupted_turn(tmp_path: Path) -> None:
    log = write(tmp_path / "s.jsonl", [
        user("q1"), event("assistant", "plain string reply"),
        user("[Request interrupted by user]"), user("q2"), said("a2"),
    ])
    pairs = [(e.user_prompt, e.assistant_response) for e in load_claude_code(log).entries]
    assert pairs == [("q1", "plain string reply"), ("q2", "a2")]


@pytest.mark.bad_input
def test_missing_path_and_empty_folder_name_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(DatasetError, match=r"not found: .*nope.*dataset\.path="):
        load_claude_code(missing)
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "notes.txt").write_text("x")
    pattern = rf"no \.jsonl session logs under {re.escape(str(empty))} .*dataset\.path="
    with pytest.raises(DatasetError, match=pattern):
        load_claude_code(empty)
    only_tools = write(tmp_path / "t" / "s.jsonl", [user("q"), tool_result()])
    with pytest.raises(DatasetError, match="no assistant text"):
        load_claude_code(only_tools)


def test_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    write(tmp_path / ".claude" / "projects" / "-repo" / "s.jsonl", [user("q"), said("a")])
    dataset = DATASETS.build({"name": "claude_code"})  # default path ~/.claude/projects
    assert dataset.report.source == str(tmp_path / ".claude" / "projects")
    assert dataset.entries[0].assistant_response == "a"


@pytest.mark.parametrize("bad", [{"on_error": "ignore"}, {"limit": 0}, {"max_chars": 0},
                                 {"min_chars": 0}, {"pathh": "x"}])
def test_config_validation(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        DATASETS.validate({"name": "claude_code", **bad})


def test_yaml_lists_every_config_field() -> None:
    import dataclasses

    import yaml

    from memeval.data.claude_code import ClaudeCodeConfig

    conf = Path(__file__).resolve().parents[2] / "memeval" / "conf" / "dataset" / "claude_code.yaml"
    node = yaml.safe_load(conf.read_text())
    assert node.pop("name") == "claude_code"
    assert set(node) == {f.name for f in dataclasses.fields(ClaudeCodeConfig)}
    assert DATASETS.validate({"name": "claude_code", **node}) == ClaudeCodeConfig()


def test_factory_accepts_the_runner_dependencies(tmp_path: Path) -> None:
    """The runner builds every dataset with labeller= and cache_dir=; a factory must take them."""
    session = tmp_path / "s.jsonl"
    session.write_text(
        json.dumps({"type": "user", "uuid": "u1", "sessionId": "s", "timestamp": "t",
                    "message": {"role": "user", "content": "why does it fail?"}}) + "\n"
        + json.dumps({"type": "assistant", "uuid": "a1", "sessionId": "s", "timestamp": "t",
                      "message": {"role": "assistant", "model": "m",
                                  "content": [{"type": "text", "text": "Because X."}]}}) + "\n")
    data = DATASETS.build({"name": "claude_code", "path": str(session)},
                          labeller=LABELLERS.choose({"name": "heuristic"}),
                          cache_dir=tmp_path)
    assert [e.assistant_response for e in data.entries] == ["Because X."]
