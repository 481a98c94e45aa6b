"""RingStore: bounded, distinct, truncating, persisted atomically, tolerant of a damaged file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memeval.engine.store.ring_store import RingStore, StoreRecord


def texts(store: RingStore) -> list[str]:
    return [r.asst_text for r in store.records]


def test_capacity_evicts_the_oldest(tmp_path: Path) -> None:
    store = RingStore(tmp_path / "s.jsonl", capacity=3)
    for i in range(5):
        store.add("judge", "q", f"text {i}")
    assert texts(store) == ["text 2", "text 3", "text 4"]
    assert len(store) == 3


def test_distinct_moves_a_repeat_to_most_recent() -> None:
    store = RingStore(None, capacity=3, distinct=True)
    for t in ["a", "b", "c", "a"]:
        store.add("judge", "q", t)
    assert texts(store) == ["b", "c", "a"]


def test_without_distinct_repeats_are_held_twice() -> None:
    store = RingStore(None, capacity=3, distinct=False)
    for t in ["a", "b", "a"]:
        store.add("judge", "q", t)
    assert texts(store) == ["a", "b", "a"]


def test_distinct_keeps_capacity_after_dedup() -> None:
    store = RingStore(None, capacity=2, distinct=True)
    for t in ["a", "b", "a", "c"]:
        store.add("judge", "q", t)
    assert texts(store) == ["a", "c"]


def test_distinct_compares_truncated_texts() -> None:
    store = RingStore(None, capacity=5, text_chars=3, distinct=True)
    store.add("judge", "q", "abcXXX")
    store.add("judge", "q", "abcYYY")  # same first 3 characters: the same stored text
    assert texts(store) == ["abc"]


def test_text_is_truncated_and_lengths_recorded() -> None:
    store = RingStore(None, capacity=5, text_chars=4)
    store.add("length", "p" * 150, "abcdefgh", source_id="wg-9")
    (record,) = store.records
    assert record.asst_text == "abcd"
    assert record.asst_len == 8
    assert record.user_len == 150
    assert record.user_prefix == "p" * 100
    assert (record.stage, record.source_id) == ("length", "wg-9")


def test_recent_texts_oldest_first() -> None:
    store = RingStore(None, capacity=10)
    for t in "abcde":
        store.add("judge", "q", t)
    assert store.recent_texts(3) == ["c", "d", "e"]
    assert store.recent_texts(0) == []
    assert store.recent_texts(99) == list("abcde")


def test_persists_and_reloads_in_a_new_instance(tmp_path: Path) -> None:
    path = tmp_path / "state" / "rejections.jsonl"
    first = RingStore(path, capacity=4)
    for t in ["one", "two", "thr\u00e9e \u2014 \U0001f44d"]:
        first.add("judge", "ok", t, source_id=t)
    second = RingStore(path, capacity=4)
    assert list(second.records) == list(first.records)
    assert second.load_problems == []
    # the file is one JSON object per line, unicode kept as is
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    assert "\U0001f44d" in lines[2]


def test_reload_with_smaller_capacity_keeps_the_newest(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    big = RingStore(path, capacity=10)
    for i in range(6):
        big.add("judge", "q", str(i))
    assert texts(RingStore(path, capacity=2)) == ["4", "5"]


def test_rewrite_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = RingStore(path, capacity=2)
    for i in range(5):
        store.add("judge", "q", f"t{i}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]
    assert len(path.read_text().splitlines()) == 2  # rewritten whole, not appended


def test_memory_only_store_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = RingStore(None, capacity=2)
    store.add("judge", "q", "t")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.bad_input
def test_damaged_file_loads_valid_lines_and_reports_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = {"time": 1.0, "stage": "judge", "user_len": 2, "asst_len": 4, "user_prefix": "ok",
            "asst_text": "good", "source_id": "g1"}
    legacy = {k: v for k, v in good.items() if k != "source_id"}  # source_id has a default
    legacy["asst_text"] = "legacy"
    lines = [
        json.dumps(good).encode(),                                # 1 ok
        b'{"time": 1.0, "stage": "judge", ',                      # 2 truncated JSON
        json.dumps({**good, "extra": 1}).encode(),                # 3 unknown field
        json.dumps({"time": 1.0}).encode(),                       # 4 missing fields
        b"\xff\xfe not utf-8",                                    # 5 invalid UTF-8
        b"",                                                      # 6 blank: ignored
        json.dumps(["a", "list"]).encode(),                       # 7 not an object
        json.dumps(legacy).encode(),                              # 8 ok
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    store = RingStore(path, capacity=10)
    assert [r.source_id for r in store.records] == ["g1", ""]
    assert store.records[0] == StoreRecord(**good)
    reported = [p.split(": ", 1)[0] for p in store.load_problems]
    assert reported == [f"{path}:{n}" for n in (2, 3, 4, 5, 7)]
    # the next write rewrites a clean file
    store.add("judge", "q", "new")
    assert RingStore(path, capacity=10).load_problems == []


def test_zero_capacity_is_refused() -> None:
    with pytest.raises(ValueError, match="capacity"):
        RingStore(None, capacity=0)


def test_a_distinct_store_loads_a_repeated_text_once_at_its_latest_place(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    writer = RingStore(path, capacity=5, distinct=False)
    for t in ["a", "b", "a"]:
        writer.add("judge", "q", t)
    assert texts(RingStore(path, capacity=5, distinct=True)) == ["b", "a"]
    assert texts(RingStore(path, capacity=5, distinct=False)) == ["a", "b", "a"]


def test_add_says_whether_the_text_was_new() -> None:
    distinct = RingStore(None, capacity=3, distinct=True)
    assert [distinct.add("judge", "q", t) for t in ["a", "b", "a", "c"]] == [
        True, True, False, True]
    repeats = RingStore(None, capacity=3, distinct=False)
    assert all(repeats.add("judge", "q", t) for t in ["a", "a"])


@pytest.mark.faults
def test_a_temp_file_left_by_a_killed_rewrite_is_removed_at_start(tmp_path: Path) -> None:
    """SIGKILL mid-rewrite: the store file is whole (the rename never happened), the temp stays."""
    path = tmp_path / "accept_store.jsonl"
    RingStore(path, capacity=3).add("judge", "q", "kept")
    orphan = tmp_path / ".accept_store.jsonl.k3j4h5g6.tmp"
    orphan.write_text('{"half": "a line')
    other = tmp_path / ".rejection_store.jsonl.k3j4h5g6.tmp"  # another store's: not this one's
    other.write_text("")
    store = RingStore(path, capacity=3)
    assert texts(store) == ["kept"] and not orphan.exists() and other.exists()
