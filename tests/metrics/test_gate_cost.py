"""The write gates' ranking figure: a weighed cost of findings missed, noise stored and judge
calls, its order, and how far that order holds over resamples of the same entries."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.metrics.gate_cost import CostWeights, GateOutcome, Truth, rank_gates
from memeval.registry import ConfigError, to_dataclass

RESAMPLES, SEED = 400, 0


def truth(substantive: int, noise: int) -> Truth:
    """`substantive` substantive entries, then `noise` noise entries."""
    kinds = np.array([True] * substantive + [False] * noise)
    return Truth(kinds, ~kinds)


def gate(size: int, kept: list[int], judged: list[int] | None = None) -> GateOutcome:
    """Keeps the entries at `kept`, sends those at `judged` to the judge."""
    flags = np.zeros(size, dtype=bool)
    flags[kept] = True
    calls = np.zeros(size, dtype=bool)
    calls[judged or []] = True
    return GateOutcome(flags, calls)


def ranked(labels: Truth, weights: CostWeights | None = None,
           **outcomes: GateOutcome) -> dict:
    return rank_gates(labels, outcomes, weights or CostWeights(), resamples=RESAMPLES, seed=SEED)


def test_a_gate_that_keeps_the_findings_and_drops_the_noise_ranks_first() -> None:
    labels = truth(50, 50)
    everything = list(range(100))
    found = ranked(labels, judging=gate(100, list(range(50)), judged=everything[::2]),
                   keep_all=gate(100, everything))
    assert list(found["systems"]) == ["judging", "keep_all"]  # cheapest first
    judging, keep_all = found["systems"]["judging"], found["systems"]["keep_all"]
    # 0.1 x half the entries judged; 0.5 x all the noise stored
    assert judging["cost"] == pytest.approx(0.05) and keep_all["cost"] == pytest.approx(0.5)
    assert (judging["missed"], judging["noise"], judging["judged"]) == (0.0, 0.0, 0.5)
    assert (judging["rank"], keep_all["rank"]) == (1, 2)
    assert judging["keeps_rank"] == keep_all["keeps_rank"] == 1.0
    low, high = judging["cost_ci95"]
    assert low < 0.05 < high and keep_all["cost_ci95"] == [0.5, 0.5]
    (pair,) = found["neighbours"]
    assert (pair["better"], pair["worse"]) == ("judging", "keep_all")
    assert pair["delta"] == pytest.approx(0.45) and pair["separated"]
    assert pair["delta_ci95"][0] > 0.4


def test_the_weights_decide_the_order() -> None:
    labels = truth(50, 50)
    keep_all = gate(100, list(range(100)))  # every finding, every noise entry
    strict = gate(100, list(range(40)))  # 10 of 50 findings lost, no noise
    noise_matters = CostWeights(missed=1.0, noise=0.5, judged=0.0)  # 0.5 against 0.2
    noise_cheap = CostWeights(missed=1.0, noise=0.1, judged=0.0)  # 0.1 against 0.2
    assert list(ranked(labels, noise_matters, keep_all=keep_all, strict=strict)["systems"]) == [
        "strict", "keep_all"]
    assert list(ranked(labels, noise_cheap, keep_all=keep_all, strict=strict)["systems"]) == [
        "keep_all", "strict"]


def test_two_nearly_equal_gates_keep_their_ranks_in_only_some_resamples() -> None:
    labels = truth(100, 100)
    findings = list(range(100))
    # a misses 2 findings, b misses 3 others: b costs 0.01 more, well within the noise
    a = gate(200, [i for i in findings if i not in (0, 1)])
    b = gate(200, [i for i in findings if i not in (2, 3, 4)])
    found = ranked(labels, a=a, b=b)
    assert [row["rank"] for row in found["systems"].values()] == [1, 2]
    for row in found["systems"].values():
        assert 0 < row["keeps_rank"] < 1
    (pair,) = found["neighbours"]
    low, high = pair["delta_ci95"]
    assert low < 0 < high and not pair["separated"]


def test_equal_gates_share_a_rank_in_every_resample() -> None:
    labels = truth(20, 20)
    same = gate(40, list(range(15)), judged=[1, 2, 3])
    found = ranked(labels, first=same, again=same)
    assert [(r["rank"], r["keeps_rank"]) for r in found["systems"].values()] == [(1, 1.0)] * 2
    (pair,) = found["neighbours"]
    assert pair["delta"] == 0 and pair["delta_ci95"] == [0.0, 0.0] and not pair["separated"]


def test_every_system_is_weighed_on_the_same_resamples() -> None:
    labels = truth(30, 30)
    kept = list(range(25))
    a = gate(60, kept, judged=list(range(0, 60, 3)))
    b = gate(60, kept, judged=[*range(0, 60, 3), 1])  # one judge call more, nothing else
    found = ranked(labels, a=a, b=b)
    (pair,) = found["neighbours"]
    # paired, b never costs less than a; apart, their CIs overlap almost wholly
    assert pair["delta_ci95"][0] >= 0 and pair["delta"] > 0
    a_ci, b_ci = found["systems"]["a"]["cost_ci95"], found["systems"]["b"]["cost_ci95"]
    assert b_ci[0] < a_ci[1]


def test_weights_are_validated() -> None:
    with pytest.raises(ConfigError, match=r"experiment\.gate_cost\.noise must be ≥ 0"):
        to_dataclass(CostWeights, {"noise": -0.5}, "gate_cost", key="experiment.gate_cost")
    with pytest.raises(ConfigError, match="at least one weight must be above 0"):
        to_dataclass(CostWeights, {"missed": 0, "noise": 0, "judged": 0}, "gate_cost")
