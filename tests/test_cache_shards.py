"""Caches shared as Parquet shards: a round trip keeps every byte, import never overwrites a local
value, and a shard that cannot be trusted is skipped whole and named, never partly imported."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memeval.__main__ import main as memeval_main
from memeval.backends.embedders.cache import (
    CACHE_FILE,
    CACHE_TABLE,
    CachedEmbedder,
    usable_vectors,
    vectors_for,
)
from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.backends.judges.http_judge import CACHE_FILE as JUDGE_FILE
from memeval.backends.judges.http_judge import CACHE_TABLE as JUDGE_TABLE
from memeval.backends.judges.http_judge import usable_records
from memeval.utils import cache_shards
from memeval.utils.cache_shards import (
    ShardError,
    export_store,
    import_shards,
    read_shard,
    write_shards,
)
from memeval.utils.kvcache import SqliteKV, content_key
from tests.test_cli import unwrapped

TEXTS = [f"fact number {i} about {word}" for i, word in enumerate(["tea", "rust", "git"] * 15)]


def judge_record(text: str, tokens: int) -> bytes:
    """A value as `HttpJudge.judge` stores it."""
    return json.dumps({"text": text, "input_tokens": tokens, "output_tokens": 1}).encode()


@pytest.fixture(autouse=True)
def small_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several shards from a few dozen rows."""
    monkeypatch.setattr(cache_shards, "SHARD_ROWS", 8)


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    """A run's caches: 45 embeddings written by a real run's code and 12 judge replies."""
    folder = tmp_path / "cache"
    embedder = CachedEmbedder(HashingEmbedder(), folder / CACHE_FILE)
    embedder.embed(TEXTS)
    embedder.store.close()
    judge = SqliteKV(folder / JUDGE_FILE, JUDGE_TABLE)
    judge.put_many((content_key("judge", str(i)), judge_record("SKIP", i)) for i in range(12))
    judge.close()
    return folder


def rows_of(path: Path, table: str) -> list[tuple[str, bytes]]:
    store = SqliteKV(path, table)
    try:
        return list(store.items())
    finally:
        store.close()


def shard_name(rows: Iterable[tuple[str, bytes | str]]) -> str:
    """The file name the format prescribes, computed here from its description."""
    digest = hashlib.sha256()
    for key, value in sorted(rows):
        data = value.encode() if isinstance(value, str) else value
        digest.update(key.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return f"{digest.hexdigest()}.parquet"


def random_rows(count: int, seed: int = 0) -> list[tuple[str, bytes]]:
    """Incompressible values, so Parquet stores their bytes as they are."""
    rng = np.random.default_rng(seed)
    return [(content_key("row", str(seed), str(i)), rng.bytes(64)) for i in range(count)]


def test_a_round_trip_gives_the_same_rows_byte_for_byte(cache_dir: Path, tmp_path: Path) -> None:
    for file, table, name, valid in ((CACHE_FILE, CACHE_TABLE, "embeddings", usable_vectors),
                                     (JUDGE_FILE, JUDGE_TABLE, "judge", usable_records)):
        source = SqliteKV(cache_dir / file, table)
        written = export_store(source, tmp_path / "shards", name)
        expected = list(source.items())
        source.close()
        assert len(written) == -(-len(expected) // 8)  # 8 rows per shard
        target = SqliteKV(tmp_path / "fresh" / file, table)
        report = import_shards(tmp_path / "shards", name, target, valid)
        assert report == cache_shards.ImportReport(len(written), len(expected), 0, 0, ())
        assert list(target.items()) == expected
        target.close()

    inner = HashingEmbedder()
    warm = CachedEmbedder(inner, tmp_path / "fresh" / CACHE_FILE)
    np.testing.assert_array_equal(warm.embed(TEXTS), inner.embed(TEXTS))
    assert warm.hits == len(TEXTS) and warm.misses == 0


def test_importing_twice_adds_nothing_the_second_time(cache_dir: Path, tmp_path: Path) -> None:
    source = SqliteKV(cache_dir / JUDGE_FILE, JUDGE_TABLE)
    export_store(source, tmp_path / "shards", "judge")
    source.close()
    target = SqliteKV(tmp_path / "fresh.sqlite", JUDGE_TABLE)
    assert import_shards(tmp_path / "shards", "judge", target).imported == 12
    again = import_shards(tmp_path / "shards", "judge", target)
    assert (again.shards, again.imported, again.present) == (2, 0, 12)
    assert len(target) == 12


def test_a_shard_is_named_by_the_digest_of_its_sorted_rows(tmp_path: Path) -> None:
    rows = random_rows(11)
    paths = write_shards(tmp_path, "judge", reversed(rows), identity="model-x")
    assert len(paths) == 2 and all(path.parent == tmp_path / "judge" for path in paths)
    first = pq.read_table(paths[0])
    assert first.schema.field("key").type == pa.string()
    assert first.schema.field("value").type == pa.binary()
    assert first.schema.metadata == {b"memeval.cache": b"judge", b"memeval.identity": b"model-x",
                                     b"memeval.rows": b"8", b"memeval.format": b"1"}
    keys = first.column("key").to_pylist()
    assert keys == sorted(keys)
    assert paths[0].name == shard_name(zip(keys, first.column("value").to_pylist(), strict=True))
    assert sorted(read_shard(paths[0], "judge") + read_shard(paths[1], "judge")) == sorted(rows)

    stamp = paths[0].stat().st_mtime_ns
    assert write_shards(tmp_path, "judge", reversed(rows)) == paths  # same rows, same names
    assert paths[0].stat().st_mtime_ns == stamp  # present already: not rewritten
    assert sorted(p.name for p in (tmp_path / "judge").iterdir()) == sorted(p.name for p in paths)
    os.truncate(paths[1], 10)
    write_shards(tmp_path, "judge", reversed(rows))  # a damaged copy is replaced
    assert len(read_shard(paths[1], "judge")) == 3


def test_the_store_lists_its_rows_in_key_order_page_by_page(tmp_path: Path) -> None:
    store = SqliteKV(tmp_path / "kv.sqlite", "t")
    rows = random_rows(10)
    store.put_many(rows)
    assert list(store.items(page=3)) == sorted(rows)
    assert store.add_missing([(rows[0][0], b"other"), ("new", b"v")]) == 1
    assert store.get(rows[0][0]) == rows[0][1]


def three_shards(tmp_path: Path) -> list[Path]:
    return write_shards(tmp_path / "shards", "judge", random_rows(24))


@pytest.mark.faults
def test_bytes_changed_inside_a_value_are_refused_and_the_other_shards_import(
        tmp_path: Path) -> None:
    paths = three_shards(tmp_path)
    damaged = paths[1]
    kept = dict(read_shard(damaged, "judge"))
    data = bytearray(damaged.read_bytes())
    at = data.index(next(iter(kept.values()))) + 20
    data[at : at + 4] = bytes(b ^ 0xFF for b in data[at : at + 4])
    damaged.write_bytes(data)
    assert len(pq.read_table(damaged)) == 8  # Parquet still reads it: only the digest can tell

    store = SqliteKV(tmp_path / "kv.sqlite", JUDGE_TABLE)
    report = import_shards(tmp_path / "shards", "judge", store)
    (line,) = report.damaged
    assert line.startswith(f"{damaged}: its rows do not match its name")
    assert (report.shards, report.imported) == (2, 16)
    assert not store.get_many(list(kept)) and len(store) == 16


@pytest.mark.faults
def test_a_truncated_shard_is_refused_and_the_other_shards_import(tmp_path: Path) -> None:
    paths = three_shards(tmp_path)
    keys = [key for key, _ in read_shard(paths[2], "judge")]
    os.truncate(paths[2], paths[2].stat().st_size // 2)
    with pytest.raises(ShardError, match="not a readable Parquet file"):
        read_shard(paths[2], "judge")
    store = SqliteKV(tmp_path / "kv.sqlite", JUDGE_TABLE)
    report = import_shards(tmp_path / "shards", "judge", store)
    assert [line.split(": ")[0] for line in report.damaged] == [str(paths[2])]
    assert (report.shards, report.imported) == (2, 16)
    assert not store.get_many(keys)


@pytest.mark.faults
def test_a_shard_renamed_to_another_digest_is_refused(tmp_path: Path) -> None:
    paths = three_shards(tmp_path)
    renamed = paths[0].rename(paths[0].with_name(f"{'0' * 64}.parquet"))
    with pytest.raises(ShardError, match="do not match its name"):
        read_shard(renamed, "judge")


@pytest.mark.bad_input
def test_a_shard_that_decompresses_past_the_cap_is_refused_before_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sound shard, named by its digest, whose footer declares more than a shard may take:
    refused from its metadata, so a few kB of zstd never become gigabytes in memory."""
    (path,) = write_shards(tmp_path, "judge", [("k", b"\0" * (8 * 2**20))])
    assert path.stat().st_size < 2**20 and read_shard(path, "judge")  # it is sound
    monkeypatch.setattr(cache_shards, "MAX_SHARD_BYTES", 4 * 2**20)
    with pytest.raises(ShardError, match=r"^its rows take \d+ bytes uncompressed, over the "
                                         r"4194304 a shard may$"):
        read_shard(path, "judge")


@pytest.mark.bad_input
def test_a_shard_of_more_rows_than_a_shard_holds_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (path,) = write_shards(tmp_path, "judge", random_rows(8))
    monkeypatch.setattr(cache_shards, "SHARD_ROWS", 4)
    with pytest.raises(ShardError, match=r"^8 rows, more than a shard holds \(4\)$"):
        read_shard(path, "judge")


@pytest.mark.bad_input
def test_a_shard_of_another_cache_is_refused(tmp_path: Path) -> None:
    (path,) = write_shards(tmp_path, "judge", random_rows(3))
    moved = tmp_path / "embeddings" / path.name
    moved.parent.mkdir()
    path.rename(moved)
    with pytest.raises(ShardError, match="holds the 'judge' cache, not 'embeddings'"):
        read_shard(moved, "embeddings")
    store = SqliteKV(tmp_path / "kv.sqlite", CACHE_TABLE)
    report = import_shards(tmp_path, "embeddings", store)
    assert report.shards == 0 and len(report.damaged) == 1 and len(store) == 0


def forged(tmp_path: Path, table: pa.Table) -> Path:
    """`table` written under the digest of its rows, as a careless or hostile writer might."""
    rows = list(zip(*(table.column(i).to_pylist() for i in range(2)), strict=True))
    path = tmp_path / "judge" / shard_name(rows)
    path.parent.mkdir(exist_ok=True)
    pq.write_table(table, path)
    return path


def metadata(rows: int) -> dict[str, str]:
    return {"memeval.cache": "judge", "memeval.rows": str(rows), "memeval.format": "1"}


@pytest.mark.bad_input
@pytest.mark.parametrize(("table", "reason"), [
    (pa.table({"key": ["a", "a"], "value": [b"1", b"2"]}).replace_schema_metadata(metadata(2)),
     "1 duplicate key"),
    (pa.table({"key": ["a", "b"], "value": [b"1", b"2"]}).replace_schema_metadata(metadata(3)),
     "2 rows where its metadata says '3'"),
    (pa.table({"key": ["a"], "value": ["text"]}).replace_schema_metadata(metadata(1)),
     "columns are (key: string, value: string)"),
    (pa.table({"key": ["a"], "value": [b"1"]}), "format None"),
])
def test_a_malformed_shard_is_refused_with_its_reason(tmp_path: Path, table: pa.Table,
                                                      reason: str) -> None:
    with pytest.raises(ShardError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        read_shard(forged(tmp_path, table), "judge")


@pytest.mark.bad_input
def test_the_validator_refuses_a_vector_that_is_not_of_unit_length(tmp_path: Path) -> None:
    embedder = HashingEmbedder(32)
    vectors = embedder.embed(["alpha", "beta", "gamma"])
    vectors[1] *= 0.5  # finite, the right width, but no embedder returns it
    rows = [(content_key(embedder.identity, str(i)), v.tobytes()) for i, v in enumerate(vectors)]
    write_shards(tmp_path, "embeddings", rows, identity=embedder.identity)
    store = SqliteKV(tmp_path / "kv.sqlite", CACHE_TABLE)
    report = import_shards(tmp_path, "embeddings", store, usable_vectors)
    assert (report.shards, report.imported, report.invalid, report.damaged) == (1, 2, 1, ())
    assert store.get(rows[1][0]) is None and store.get(rows[2][0]) == rows[2][1]


@pytest.mark.bad_input
def test_a_shard_of_vectors_narrower_than_the_cache_holds_is_refused(tmp_path: Path) -> None:
    """Unit vectors 3 wide, each shard sound and named by its digest: a cache of 32-wide vectors
    takes only its own widths, however many of the shard's rows share another."""
    store = SqliteKV(tmp_path / "kv.sqlite", CACHE_TABLE)
    wide = HashingEmbedder(32)
    store.put(content_key(wide.identity, "held"), wide.embed(["held"])[0].tobytes())
    narrow = np.eye(3, dtype=np.float32)
    rows = [(content_key("forged-3", str(i)), v.tobytes()) for i, v in enumerate(narrow)]
    rows.append((content_key(wide.identity, "new"), wide.embed(["new"])[0].tobytes()))
    write_shards(tmp_path, "embeddings", rows)
    report = import_shards(tmp_path, "embeddings", store, vectors_for(store))
    assert (report.imported, report.invalid) == (1, 3)
    assert store.get(rows[0][0]) is None and store.get(rows[3][0]) == rows[3][1]


@pytest.mark.bad_input
def test_the_judge_validator_accepts_only_the_records_the_judge_replays() -> None:
    assert usable_records([judge_record("SKIP", 3), b"not json", b'{"text": "x"}', b"[1]",
                           b"[" * 100_000, b'{"text": "x", "input_tokens": 1e999, '
                                           b'"output_tokens": 1}']) == [True] + [False] * 5


def test_an_already_cached_key_keeps_its_local_value(tmp_path: Path) -> None:
    rows = random_rows(5)
    write_shards(tmp_path, "judge", rows)
    store = SqliteKV(tmp_path / "kv.sqlite", JUDGE_TABLE)
    store.put(rows[2][0], b"local")
    report = import_shards(tmp_path, "judge", store)
    assert (report.imported, report.present) == (4, 1)
    assert store.get(rows[2][0]) == b"local" and store.get(rows[3][0]) == rows[3][1]


@pytest.mark.faults
def test_a_writers_temp_file_is_ignored(tmp_path: Path) -> None:
    write_shards(tmp_path, "judge", random_rows(3))
    # what `write_atomic` leaves if the writer is killed: `.<name>.<random>.tmp`
    (tmp_path / "judge" / f".{'0' * 64}.parquet.0123abcd.tmp").write_bytes(b"half a shard")
    report = import_shards(tmp_path, "judge", SqliteKV(tmp_path / "kv.sqlite", JUDGE_TABLE))
    assert (report.shards, report.imported, report.damaged) == (1, 3, ())


def test_a_folder_without_shards_is_an_error_naming_it(tmp_path: Path) -> None:
    store = SqliteKV(tmp_path / "kv.sqlite", JUDGE_TABLE)
    with pytest.raises(ShardError, match=f"no shards in {tmp_path / 'judge'}"):
        import_shards(tmp_path, "judge", store)


def test_the_cli_exports_and_imports_every_cache(cache_dir: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    shards, fresh = tmp_path / "shards", tmp_path / "fresh"
    assert memeval_main(["cache", "--dir", str(cache_dir), "export", str(shards)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"embeddings: 45 rows in 6 shard(s) in {shards / 'embeddings'}",
        f"judge: 12 rows in 2 shard(s) in {shards / 'judge'}"]
    assert memeval_main(["cache", "--dir", str(fresh), "import", str(shards)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "embeddings: 6 shard(s), 45 rows imported, 0 already cached, 0 refused",
        "judge: 2 shard(s), 12 rows imported, 0 already cached, 0 refused"]
    assert rows_of(fresh / CACHE_FILE, CACHE_TABLE) == rows_of(cache_dir / CACHE_FILE, CACHE_TABLE)
    assert memeval_main(["cache", "--dir", str(fresh), "import", str(shards), "judge"]) == 0
    assert capsys.readouterr().out == "judge: 2 shard(s), 0 rows imported, 12 already cached, " \
                                      "0 refused\n"


@pytest.mark.faults
def test_the_cli_names_a_damaged_shard_and_exits_1(cache_dir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    shards = tmp_path / "shards"
    assert memeval_main(["cache", "--dir", str(cache_dir), "export", str(shards), "judge"]) == 0
    damaged = sorted((shards / "judge").glob("*.parquet"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])
    capsys.readouterr()
    assert memeval_main(["cache", "--dir", str(tmp_path / "fresh"), "import", str(shards)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"embeddings: no shards in {shards / 'embeddings'}, nothing imported"
    assert out[1].startswith("judge: 1 shard(s), ") and out[1].endswith(" rows imported, "
                                                                         "0 already cached, "
                                                                         "0 refused")
    assert out[2].startswith(f"  skipped damaged shard {damaged}: not a readable Parquet file")
    assert len(out) == 3


@pytest.mark.bad_input
def test_the_cli_refuses_a_named_cache_without_shards_and_writes_nothing(
        cache_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shards, fresh = tmp_path / "shards", tmp_path / "fresh"
    assert memeval_main(["cache", "--dir", str(cache_dir), "export", str(shards), "judge"]) == 0
    argv = ["cache", "--dir", str(fresh), "import", str(shards), "judge", "embeddings"]
    assert memeval_main(argv) == 2
    assert (f"no shards in {shards / 'embeddings'}: nothing imported"
            in unwrapped(capsys.readouterr().err))
    assert not fresh.exists()
    assert memeval_main(["cache", "--dir", str(fresh), "import", str(tmp_path / "empty")]) == 2
    assert f"no shards in {tmp_path / 'empty'}" in unwrapped(capsys.readouterr().err)
    assert not fresh.exists()


@pytest.mark.bad_input
def test_the_cli_exports_a_missing_cache_only_if_unnamed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, shards = tmp_path / "cache", tmp_path / "shards"
    store = SqliteKV(folder / JUDGE_FILE, JUDGE_TABLE)
    store.put("key", judge_record("SKIP", 1))
    store.close()
    assert memeval_main(["cache", "--dir", str(folder), "export", str(shards)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"embeddings: no cache at {folder / CACHE_FILE}, nothing exported")
    assert memeval_main(["cache", "--dir", str(folder), "export", str(tmp_path / "other"),
                         "judge", "embeddings"]) == 2
    assert f"no cache at {folder / CACHE_FILE}" in unwrapped(capsys.readouterr().err)
    assert not (tmp_path / "other").exists()
    with pytest.raises(SystemExit) as stop:
        memeval_main(["cache", "--dir", str(folder), "import", str(shards), "models"])
    assert stop.value.code == 2
