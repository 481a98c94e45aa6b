"""Label oracle judge: keep_labels, deterministic seeded error flips, unlabelled entries."""

from __future__ import annotations

import pytest

from memeval.backends.judges.base import JUDGES, JudgeError
from memeval.backends.judges.labels import LabelJudge, LabelJudgeConfig
from memeval.entry import Entry
from memeval.registry import ConfigError


def entry(entry_id: str, label: str | None) -> Entry:
    return Entry(entry_id, "q", "some answer", label)


def skips(judge: LabelJudge, entries: list[Entry]) -> list[bool]:
    return [judge.judge(e, e.user_prompt, e.assistant_response).skip for e in entries]


def test_keeps_only_keep_labels() -> None:
    judge = LabelJudge(LabelJudgeConfig())
    entries = [entry("a", "substantive"), entry("b", "low_value"), entry("c", "noise")]
    assert skips(judge, entries) == [False, True, True]
    wider = LabelJudge(LabelJudgeConfig(keep_labels=["substantive", "low_value"]))
    assert skips(wider, entries) == [False, False, True]


def test_verdict_fields() -> None:
    judge = LabelJudge(LabelJudgeConfig())
    keep = judge.judge(entry("a", "substantive"), "q", "t")
    skip = judge.judge(entry("b", "noise"), "q", "t")
    assert (keep.model, keep.raw, keep.memory, keep.cost_usd) == ("labels", "", None, 0.0)
    assert skip.raw == "SKIP"
    assert LabelJudge(LabelJudgeConfig(error_rate=0.1)).name == "labels(err=0.1)"


def test_unlabelled_entry_is_a_judge_error() -> None:
    with pytest.raises(JudgeError, match="'u1' has no label"):
        LabelJudge(LabelJudgeConfig()).judge(entry("u1", None), "q", "t")


def test_error_rate_flips_deterministically_per_entry() -> None:
    entries = [entry(f"wg-{i:04d}", "substantive") for i in range(2000)]
    truth = skips(LabelJudge(LabelJudgeConfig()), entries)
    assert not any(truth)
    noisy = LabelJudge(LabelJudgeConfig(error_rate=0.2, seed=1))
    first = skips(noisy, entries)
    assert first == skips(noisy, entries)  # same entry, same wrong answer, every pass
    assert first == skips(LabelJudge(LabelJudgeConfig(error_rate=0.2, seed=1)), entries)
    flipped = sum(first) / len(first)
    assert 0.17 < flipped < 0.23  # sd ≈ 0.009
    other_seed = skips(LabelJudge(LabelJudgeConfig(error_rate=0.2, seed=2)), entries)
    assert other_seed != first


def test_flips_apply_to_both_sides() -> None:
    entries = [entry(f"n{i}", "noise") for i in range(2000)]
    kept = [not s for s in skips(LabelJudge(LabelJudgeConfig(error_rate=0.3)), entries)]
    assert 0.27 < sum(kept) / len(kept) < 0.33


def test_flip_depends_on_id_not_label() -> None:
    judge = LabelJudge(LabelJudgeConfig(error_rate=0.5, seed=0))
    ids = [f"e{i}" for i in range(200)]
    keep_side = skips(judge, [entry(i, "substantive") for i in ids])
    skip_side = skips(judge, [entry(i, "noise") for i in ids])
    assert keep_side == [not s for s in skip_side]


def test_higher_rate_flips_a_superset() -> None:
    entries = [entry(f"e{i}", "substantive") for i in range(500)]
    low = skips(LabelJudge(LabelJudgeConfig(error_rate=0.1)), entries)
    high = skips(LabelJudge(LabelJudgeConfig(error_rate=0.3)), entries)
    assert all(h for lo, h in zip(low, high, strict=True) if lo)


def test_full_error_rate_inverts_everything() -> None:
    entries = [entry("a", "substantive"), entry("b", "noise")]
    assert skips(LabelJudge(LabelJudgeConfig(error_rate=1.0)), entries) == [True, False]


@pytest.mark.parametrize(("params", "match"), [
    ({"keep_labels": ["substantial"]}, "unknown labels"),
    ({"error_rate": 1.5}, "error_rate"),
    ({"eror_rate": 0.1}, "did you mean 'error_rate'"),
])
def test_invalid_config(params: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        JUDGES.validate({"name": "labels", **params})


def test_building_for_unlabelled_rows_is_refused_with_the_fix() -> None:
    rows = [entry("a", "substantive"), entry("u1", None), entry("u2", None)]
    refused = r"2 of 3 rows have none \(first: 'u1'\).*three_pass_mixed"
    with pytest.raises(ConfigError, match=refused):
        JUDGES.build({"name": "labels"}, entries=rows)
    assert JUDGES.build({"name": "labels"}, entries=rows[:1]).name == "labels"
