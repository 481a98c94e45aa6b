"""`python -m memeval cache`: it reports what a run's caches hold and clears only what is named."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memeval.__main__ import main as memeval_main
from memeval.backends.embedders.cache import CACHE_FILE, CachedEmbedder
from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.backends.judges.http_judge import CACHE_FILE as JUDGE_FILE
from memeval.backends.judges.http_judge import CACHE_TABLE as JUDGE_TABLE
from memeval.cli.cache import default_dir
from memeval.utils import fit_cache
from memeval.utils.kvcache import SqliteKV


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Three embeddings written the way a run writes them, a judge cache with one row and one
    fitted model (signed with a key of the test's own)."""
    CachedEmbedder(HashingEmbedder(), tmp_path / CACHE_FILE).embed(["a fact", "another", "third"])
    judge = SqliteKV(tmp_path / JUDGE_FILE, JUDGE_TABLE)
    judge.put("a prompt's key", b"a verdict")
    judge.close()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path.parent / f"{tmp_path.name}-config"))
    monkeypatch.delenv(fit_cache.DIR_ENV, raising=False)  # the fits under the cache directory
    fit_cache.signing_key.cache_clear()
    fit_cache.FitCache(tmp_path / fit_cache.FITS_DIR).fit("model", "key", lambda: [1.0, 2.0])
    yield tmp_path
    fit_cache.forget_in_memory()
    fit_cache.signing_key.cache_clear()


def test_info_counts_each_cache(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert memeval_main(["cache", "--dir", str(cache), "info"]) == 0
    out = capsys.readouterr().out
    assert f"cache directory: {cache}" in out
    assert "embeddings  embeddings.sqlite  3 entries" in out
    assert "judge       judge.sqlite       1 entries" in out
    assert "fits        fits/              1 models, 0.0 MB" in out


def test_clear_removes_only_the_named_cache(cache: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert memeval_main(["cache", "--dir", str(cache), "clear", "embeddings"]) == 0
    assert not list(cache.glob(f"{CACHE_FILE}*"))
    assert (cache / JUDGE_FILE).is_file()
    assert memeval_main(["cache", "--dir", str(cache), "info"]) == 0
    assert "embeddings  embeddings.sqlite  empty" in capsys.readouterr().out
    assert (cache / "fits").is_dir()
    assert memeval_main(["cache", "--dir", str(cache), "clear"]) == 0
    assert not list(cache.iterdir())  # the fitted models too


def test_an_unknown_cache_is_an_error(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        memeval_main(["cache", "--dir", str(cache), "clear", "models"])
    assert stop.value.code == 2
    assert "no cache named models (caches: embeddings, judge, fits)" in capsys.readouterr().err
    assert (cache / CACHE_FILE).is_file()


def test_the_default_is_the_runs_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEVAL_CACHE_DIR", str(tmp_path / "shared"))
    assert default_dir() == tmp_path / "shared"
