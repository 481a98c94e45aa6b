"""Which entries compare_systems' write gate replays: the splits named, or a dataset without
splits whole; splits that match nothing, or entries that lack the field, are refused by name."""

from __future__ import annotations

import pytest

from memeval.entry import Entry
from memeval.experiments.compare_systems import CompareSystemsConfig
from memeval.registry import ConfigError


def turns(*splits: str | None) -> list[Entry]:
    return [Entry(f"t{i}", "prompt", "response", "noise", "human",
                  {} if split is None else {"split": split}) for i, split in enumerate(splits)]


BLIND = CompareSystemsConfig(splits=["test4", "test5"])


def test_the_named_splits_are_replayed_in_order() -> None:
    entries = turns("learn", "test4", "test1", "test5", "test4")
    assert [e.id for e in BLIND.replayed(entries)] == ["t1", "t3", "t4"]
    assert BLIND.splits_of(entries) == ["test4", "test5"]


def test_a_dataset_without_splits_is_replayed_whole() -> None:
    bundled = turns(None, None, None)
    assert BLIND.replayed(bundled) == bundled and BLIND.splits_of(bundled) is None
    every = CompareSystemsConfig(splits=[])
    split = turns("learn", "test4")
    assert every.replayed(split) == split and every.splits_of(split) is None


def test_splits_no_entry_is_in_are_refused_naming_those_there_are() -> None:
    with pytest.raises(ConfigError, match=r"no entry of the dataset has its 'split' among them "
                                          r"\(it has: learn, test1\)"):
        BLIND.replayed(turns("learn", "test1"))


def test_an_entry_without_the_split_field_is_refused() -> None:
    with pytest.raises(ConfigError, match="entry 't1' has no field 'split'"):
        BLIND.replayed(turns("test4", None))
