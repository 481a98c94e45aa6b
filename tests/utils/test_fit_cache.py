"""The fit cache: one fit per settings, data and code; any change refits; damage is a miss."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest

from memeval.quality.conflict_model import LearnedConflictConfig, LearnedConflictDetector
from memeval.quality.difference_words import DifferenceWords
from memeval.utils import fit_cache
from memeval.utils.fit_cache import FitCache, forget_in_memory, source_digest
from tests.quality.test_conflict_learned import _toy, _words


@pytest.fixture(autouse=True)
def _empty_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No model held in this process, and a signing key of the test's own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    fit_cache.signing_key.cache_clear()
    forget_in_memory()
    yield
    forget_in_memory()
    fit_cache.signing_key.cache_clear()


def _signed(payload: bytes, key: bytes) -> bytes:
    return fit_cache.MAGIC + fit_cache._mac(key, payload) + payload


class Counting:
    """A fit that says how often it ran."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict[str, int]:
        self.calls += 1
        return {"weights": self.calls}


def test_the_same_settings_data_and_code_fit_once_in_a_process_and_on_disk(
        tmp_path: Path) -> None:
    make = Counting()
    cache = FitCache(tmp_path, code="c1")
    assert cache.fit("model", ("settings", "data"), make) == {"weights": 1}
    assert cache.fit("model", ("settings", "data"), make) == {"weights": 1}
    forget_in_memory()  # a new process: only the disk entry is left
    again = FitCache(tmp_path, code="c1")
    assert again.fit("model", ("settings", "data"), make) == {"weights": 1}
    assert make.calls == 1 and (cache.misses, cache.hits, again.hits) == (1, 1, 1)


@pytest.mark.parametrize("changed", ["setting", "data", "code", "kind"])
def test_a_changed_setting_file_or_fitting_code_refits(tmp_path: Path, changed: str) -> None:
    make = Counting()
    FitCache(tmp_path, code="c1").fit("model", ("settings", "data"), make)
    forget_in_memory()
    kind, key, code = "model", ("settings", "data"), "c1"
    if changed == "setting":
        key = ("other settings", "data")
    elif changed == "data":
        key = ("settings", "other data fingerprint")
    elif changed == "code":
        code = "c2"
    else:
        kind = "other model"
    assert FitCache(tmp_path, code=code).fit(kind, key, make) == {"weights": 2}
    assert make.calls == 2


def test_the_code_digest_changes_with_any_source_file(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "fit.py").write_text("C = 1\n")
    (tmp_path / "notes.txt").write_text("not code")
    before = source_digest(tmp_path)
    (tmp_path / "notes.txt").write_text("still not code")
    assert source_digest(tmp_path) == before
    (tmp_path / "pkg" / "fit.py").write_text("C = 2\n")
    assert source_digest(tmp_path) != before
    assert len(fit_cache.code_digest()) == 64  # the package's own source, read once


@pytest.mark.bad_input
@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "another key's"])
def test_a_damaged_entry_is_a_miss_that_refits_and_is_rewritten(
        tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture) -> None:
    make = Counting()
    FitCache(tmp_path, code="c1").fit("model", "key", make)
    forget_in_memory()
    [entry] = (tmp_path / "model").glob("*.fit")
    good = entry.read_bytes()
    key = fit_cache.signing_key()
    assert key is not None and fit_cache.key_file().stat().st_mode & 0o777 == 0o600
    entry.write_bytes({"garbage": b"\x80\x05not a pickle at all",
                       "truncated": good[: len(good) // 2], "empty": b"",
                       "another key's": _signed(pickle.dumps((fit_cache.FORMAT, "model", "0" * 64,
                                                              {"weights": 99})), key)}[damage])
    cache = FitCache(tmp_path, code="c1")
    with caplog.at_level(logging.WARNING, logger="memeval.utils.fit_cache"):
        assert cache.fit("model", "key", make) == {"weights": 2}
    assert cache.damaged == 1 and make.calls == 2
    assert "fitting it again" in caplog.text and str(entry) in caplog.text
    forget_in_memory()
    assert FitCache(tmp_path, code="c1").fit("model", "key", make) == {"weights": 2}  # rewritten


class Planted:
    """A pickle that would run code when loaded: it leaves a file behind."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (Path.touch.__get__(self.marker), ())  # type: ignore[return-value]


@pytest.mark.bad_input
@pytest.mark.parametrize("signed_by", ["nobody", "another user's key"])
def test_an_entry_not_signed_with_this_users_key_is_never_unpickled(
        tmp_path: Path, signed_by: str) -> None:
    """A cache directory others can write to (a shared or restored CI cache) can plant a pickle
    that runs code: it is refused unread, and the model is fitted instead."""
    make = Counting()
    FitCache(tmp_path, code="c1").fit("model", "key", make)
    forget_in_memory()
    [entry] = (tmp_path / "model").glob("*.fit")
    marker = tmp_path / "code ran"
    payload = pickle.dumps((fit_cache.FORMAT, "model", "x", Planted(marker)))
    entry.write_bytes(payload if signed_by == "nobody" else _signed(payload, b"k" * 32))
    cache = FitCache(tmp_path, code="c1")
    assert cache.fit("model", "key", make) == {"weights": 2}
    assert not marker.exists() and cache.damaged == 1


def test_without_a_usable_key_fits_stay_in_this_process(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "not a folder").write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "not a folder"))
    fit_cache.signing_key.cache_clear()
    make = Counting()
    FitCache(tmp_path / "fits", code="c1").fit("model", "key", make)
    assert make.calls == 1 and not (tmp_path / "fits").exists()


def test_no_directory_keeps_fits_in_this_process_only(tmp_path: Path) -> None:
    make = Counting()
    cache = FitCache(None, code="c1")
    cache.fit("model", "key", make)
    cache.fit("model", "key", make)
    assert make.calls == 1 and not any(tmp_path.iterdir())


def test_a_cached_conflict_detector_predicts_as_a_fresh_fit_without_fitting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs, labels = _toy(8)
    test_pairs, _ = _toy(3, offset=50)
    cfg = LearnedConflictConfig(words=_words(), max_iter=20)
    fresh = LearnedConflictDetector(cfg)
    fresh.fit(pairs, labels)
    first = LearnedConflictDetector(cfg, FitCache(tmp_path, code="c1"))
    first.fit(pairs, labels)
    forget_in_memory()
    fits = []
    real_fit = DifferenceWords.fit
    monkeypatch.setattr(DifferenceWords, "fit",
                        lambda self, *a: fits.append(1) or real_fit(self, *a))
    second = LearnedConflictDetector(cfg, FitCache(tmp_path, code="c1"))
    second.fit(pairs, labels)  # from the disk entry
    assert not fits
    assert second.predict(test_pairs) == first.predict(test_pairs) == fresh.predict(test_pairs)
    assert second.newer(test_pairs) == fresh.newer(test_pairs)
    third = LearnedConflictDetector(cfg, FitCache(tmp_path, code="c1"))
    third.fit(pairs[:-4], labels[:-4])  # other training pairs: fitted
    assert len(fits) == 1


def test_fits_go_under_the_cache_directory_unless_a_fit_directory_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fit_cache.DIR_ENV, raising=False)
    assert fit_cache.fits_dir(tmp_path / "cache") == tmp_path / "cache" / "fits"
    monkeypatch.setenv(fit_cache.DIR_ENV, str(tmp_path / "shared fits"))
    assert fit_cache.fits_dir(tmp_path / "cache") == tmp_path / "shared fits"
