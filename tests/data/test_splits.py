"""Stratified splits: disjoint, complete, per-label fractions, seeded, order-preserving."""

from __future__ import annotations

from collections import Counter

import pytest

from memeval.data.splits import field_split, stratified_split
from memeval.entry import Entry


def entries() -> list[Entry]:
    labels = ["substantive"] * 40 + ["low_value"] * 25 + ["noise"] * 15 + [None] * 4
    return [Entry(f"e{i:03d}", "q", f"text {i}", label) for i, label in enumerate(labels)]


def test_disjoint_and_complete() -> None:
    data = entries()
    first, second = stratified_split(data, 0.5, seed=0)
    ids_a, ids_b = {e.id for e in first}, {e.id for e in second}
    assert not ids_a & ids_b
    assert ids_a | ids_b == {e.id for e in data}


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.8])
def test_stratified_by_label(fraction: float) -> None:
    data = entries()
    first, _ = stratified_split(data, fraction, seed=1)
    totals = Counter(e.label for e in data)
    taken = Counter(e.label for e in first)
    for label, n in totals.items():
        assert taken[label] == round(n * fraction), label


def test_seeded_deterministic() -> None:
    data = entries()
    assert stratified_split(data, 0.5, seed=7) == stratified_split(data, 0.5, seed=7)
    assert stratified_split(data, 0.5, seed=7)[0] != stratified_split(data, 0.5, seed=8)[0]


def test_original_order_kept() -> None:
    data = entries()
    position = {e.id: i for i, e in enumerate(data)}
    for part in stratified_split(data, 0.5, seed=3):
        assert [position[e.id] for e in part] == sorted(position[e.id] for e in part)


def test_extreme_fractions() -> None:
    data = entries()
    assert stratified_split(data, 0.0, seed=0) == ([], data)
    assert stratified_split(data, 1.0, seed=0) == (data, [])


def sessions() -> list[Entry]:
    return [Entry(f"t{i}", "q", f"text {i}", "noise", meta={"session": f"s{i % 3}"})
            for i in range(9)]


def test_field_split_keeps_groups_whole_and_order() -> None:
    learn, evaluate = field_split(sessions(), "session", ["s0", "s2"])
    assert [e.id for e in learn] == ["t0", "t2", "t3", "t5", "t6", "t8"]
    assert [e.id for e in evaluate] == ["t1", "t4", "t7"]  # empty evaluate: all the others


def test_field_split_leaves_out_values_in_neither_list() -> None:
    learn, evaluate = field_split(sessions(), "session", ["s0"], ["s1"])
    assert {e.meta["session"] for e in learn} == {"s0"}
    assert {e.meta["session"] for e in evaluate} == {"s1"}
    assert len(learn) + len(evaluate) == 6


def test_field_split_refuses_an_entry_without_the_field() -> None:
    data = [*sessions(), Entry("bare", "q", "text", "noise")]
    with pytest.raises(ValueError, match="entry 'bare' has no field 'session'"):
        field_split(data, "session", ["s0"])
