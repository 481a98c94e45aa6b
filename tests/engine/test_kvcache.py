"""SqliteKV and content_key: the on-disk cache under embeddings and judge responses."""

from __future__ import annotations

from pathlib import Path

import pytest

from memeval.engine.kvcache import SqliteKV, content_key


def test_content_key_separates_parts() -> None:
    assert content_key("ab", "c") != content_key("a", "bc")
    assert content_key("a", "b") == content_key("a", "b")
    assert len(content_key("x")) == 64


def test_content_key_survives_lone_surrogates() -> None:
    assert content_key("bad \ud800 text") != content_key("bad  text")


def test_put_get_overwrite_and_len(tmp_path: Path) -> None:
    kv = SqliteKV(tmp_path / "kv.sqlite", "t")
    assert kv.get("k") is None and len(kv) == 0
    kv.put("k", b"\x00\x01")
    assert kv.get("k") == b"\x00\x01"
    kv.put("k", b"new")
    assert kv.get("k") == b"new" and len(kv) == 1


def test_get_many_over_the_chunk_size(tmp_path: Path) -> None:
    kv = SqliteKV(tmp_path / "kv.sqlite", "t")
    kv.put_many((f"k{i}", str(i).encode()) for i in range(1200))
    keys = [f"k{i}" for i in range(0, 1300, 1)]
    found = kv.get_many(keys)
    assert len(found) == 1200
    assert found["k1199"] == b"1199" and "k1250" not in found


def test_tables_are_separate_and_persist(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "kv.sqlite"
    a, b = SqliteKV(path, "a"), SqliteKV(path, "b")
    a.put("k", b"from a")
    assert b.get("k") is None
    a.close()
    assert SqliteKV(path, "a").get("k") == b"from a"


def test_bad_table_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bad table name"):
        SqliteKV(tmp_path / "kv.sqlite", "x; DROP TABLE y")
