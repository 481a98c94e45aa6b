"""`python -m memeval embed`: it embeds exactly what the run it prepares would (that run then
misses the cache nowhere), skips what is cached, and shards what it embeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from memeval.__main__ import main as memeval_main
from memeval.backends.embedders.cache import chunked
from memeval.config import compose
from memeval.runner import run_experiment
from tests.test_cli import unwrapped

RUN = ["+experiment=three_pass", "embedder=hashing", "dataset.limit=60", "plots=false",
       "progress=false", "reporting.phoenix.enabled=false", "bootstrap=50"]


def test_chunks_follow_the_caches_own_order() -> None:
    """Shortest first, ties by key, cut at the chunk size: the batches a cold cache embeds."""
    chunks = chunked({"k3": "ccc", "k1": "a", "k2": "bb", "k0": "z"}, 3)
    assert chunks == [(["k0", "k1", "k2"], ["z", "a", "bb"]), (["k3"], ["ccc"])]


@pytest.mark.slow
def test_a_run_after_a_warm_up_misses_the_cache_nowhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    assert memeval_main(["embed", *RUN, f"cache_dir={cache}"]) == 0
    first = capsys.readouterr().out.splitlines()
    embedded = int(first[0].split(" texts to embed")[0].replace(",", ""))
    assert first[0].endswith(" s") and "0 already cached" in first[0]
    assert "embedded in this process" in first[0]
    assert len(list((cache / "shards" / "embeddings").glob("*.parquet"))) == 1
    assert f"imported {embedded:,} vectors" in first[1]

    metrics = run_experiment(compose([*RUN, f"cache_dir={cache}"]), tmp_path / "run")
    assert metrics["embedder"]["cache_misses"] == 0
    assert metrics["embedder"]["cache_hits"] > 0
    capsys.readouterr()  # the run's own tables

    # what is cached is not embedded again, and no new shard is written
    assert memeval_main(["embed", *RUN, f"cache_dir={cache}"]) == 0
    again = capsys.readouterr().out.splitlines()
    assert f"{embedded:,} already cached, 0 embedded" in again[0]
    assert "0 shard(s)" in again[1]


@pytest.mark.bad_input
def test_a_bad_override_is_refused_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert memeval_main(["embed", "+experiment=three_pass", "embedder=hashng",
                         f"cache_dir={tmp_path}"]) == 2
    assert "embedder" in capsys.readouterr().err
    assert not (tmp_path / "shards").exists()


def test_workers_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        memeval_main(["embed", "--ray", "--workers", "0", *RUN])
    assert stop.value.code == 2
    assert "--workers must be at least 1" in capsys.readouterr().err


@pytest.mark.slow
def test_a_memory_corpus_is_warmed_with_its_memories_and_queries(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpora = Path(__file__).parent / "data" / "corpora"
    run = ["+experiment=retrieval_replay", "dataset=memory_jsonl", "embedder=hashing",
           f"dataset.memories={corpora / 'memories.jsonl'}",
           f"dataset.queries={corpora / 'queries.jsonl'}", "plots=false", "progress=false",
           "reporting.phoenix.enabled=false", "bootstrap=50", f"cache_dir={tmp_path / 'cache'}"]
    assert memeval_main(["embed", *run]) == 0
    assert "0 already cached" in capsys.readouterr().out
    metrics = run_experiment(compose(run), tmp_path / "run")
    assert metrics["embedder"]["cache_misses"] == 0
    assert metrics["embedder"]["cache_hits"] > 0


@pytest.mark.slow
@pytest.mark.bad_input
def test_a_loopback_cluster_without_ray_s_loopback_switch_is_named(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Ray would resolve 127.0.0.1 to the routable address and wait: the fix is named instead."""
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    assert memeval_main(["embed", "--ray", "--address", "127.0.0.1:6379", *RUN,
                         f"cache_dir={tmp_path}"]) == 2
    err = unwrapped(capsys.readouterr().err)
    assert "needs RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" in err and "127.0.0.1:6379" in err
    assert not (tmp_path / "shards").exists()
