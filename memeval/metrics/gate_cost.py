"""One figure to rank write gates by: what a gate loses, lets in and spends, weighed together.

Recall, noise stored and judge calls each favour a different gate: keeping everything loses
nothing, judging everything lets no noise in. The weighed cost puts gates in one order (lower is
better), and a paired bootstrap over the entries says how far that order holds: each system's
cost with its 95% CI, the share of resamples in which it keeps its rank, and whether the cost
difference between neighbours in the order excludes 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from memeval.metrics.bootstrap import percentile_interval, resample_counts
from memeval.registry import bounded

LEVEL = 0.95


@dataclass
class CostWeights:
    """What a share of 1 of each failure costs: every substantive finding missed, every noise
    entry stored, every entry sent to the judge."""

    missed: float = bounded(1.0, 0.0)
    noise: float = bounded(0.5, 0.0)
    judged: float = bounded(0.1, 0.0)

    def validate(self) -> None:
        if self.missed + self.noise + self.judged == 0:
            raise ValueError("gate_cost: at least one weight must be above 0 (with all three at "
                             "0 every gate costs nothing and none can be ranked)")


@dataclass(frozen=True)
class GateOutcome:
    """One system's decisions on the shared entries, in the same order for every system."""

    kept: np.ndarray  # bool per entry: stored
    judged: np.ndarray  # bool per entry: sent to the judge


@dataclass(frozen=True)
class Truth:
    """The entries' human labels, in the order of every `GateOutcome`."""

    substantive: np.ndarray  # bool per entry
    noise: np.ndarray  # bool per entry

    @property
    def size(self) -> int:
        return int(self.substantive.size)


def _share(counts: np.ndarray, hit: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Per row of `counts` (how often each entry is drawn), the share of the `among` entries
    that `hit`; 0 where no `among` entry was drawn (nothing to miss or let in)."""
    total = counts @ among.astype(float)
    return np.divide(counts @ (hit & among).astype(float), total, out=np.zeros_like(total),
                     where=total > 0)


def shares(counts: np.ndarray, truth: Truth, outcome: GateOutcome) -> dict[str, np.ndarray]:
    """The three failures per row of `counts`: substantive entries dropped, noise entries
    stored, entries judged."""
    every = np.ones(truth.size, dtype=bool)
    return {"missed": _share(counts, ~outcome.kept, truth.substantive),
            "noise": _share(counts, outcome.kept, truth.noise),
            "judged": _share(counts, outcome.judged, every)}


def weighed(found: Mapping[str, np.ndarray], weights: CostWeights) -> np.ndarray:
    """The cost of each row's three shares (`shares`)."""
    return (weights.missed * found["missed"] + weights.noise * found["noise"]
            + weights.judged * found["judged"])


def competition_ranks(costs: np.ndarray) -> np.ndarray:
    """Each system's rank per row of `costs` (rows × systems), 1 the cheapest: systems of equal
    cost share the better rank, so two indistinguishable gates never look ordered."""
    return 1 + (costs[:, None, :] < costs[:, :, None]).sum(axis=2)


def rank_gates(truth: Truth, outcomes: Mapping[str, GateOutcome], weights: CostWeights, *,
               resamples: int, seed: int) -> dict[str, Any]:
    """Systems cheapest first, each with its cost, 95% CI, the three shares, its rank and the
    share of resamples in which it keeps that rank; then each neighbouring pair's paired cost
    difference (the later minus the earlier) with its CI and whether that excludes 0. Every
    system is weighed on the same resampled entries."""
    names = list(outcomes)
    observed = {n: shares(np.ones((1, truth.size)), truth, outcomes[n]) for n in names}
    costs = np.array([weighed(observed[n], weights)[0] for n in names])
    counts = resample_counts(truth.size, resamples, seed)
    drawn = np.stack([weighed(shares(counts, truth, outcomes[n]), weights) for n in names],
                     axis=1)
    rank = competition_ranks(costs[None, :])[0]
    keeps = (competition_ranks(drawn) == rank).mean(axis=0)
    order = sorted(range(len(names)), key=lambda i: (rank[i], i))
    systems = {names[i]: {"rank": int(rank[i]), "cost": float(costs[i]),
                          "cost_ci95": list(percentile_interval(drawn[:, i], LEVEL)),
                          **{k: float(v[0]) for k, v in observed[names[i]].items()},
                          "keeps_rank": float(keeps[i])} for i in order}
    return {"weights": {"missed": weights.missed, "noise": weights.noise,
                        "judged": weights.judged},
            "entries": truth.size, "labelled": {"substantive": int(truth.substantive.sum()),
                                                "noise": int(truth.noise.sum())},
            "systems": systems,
            "neighbours": [_neighbours(names[a], names[b], costs[b] - costs[a],
                                       drawn[:, b] - drawn[:, a])
                           for a, b in pairwise(order)]}


def _neighbours(better: str, worse: str, delta: float, drawn: np.ndarray) -> dict[str, Any]:
    low, high = percentile_interval(drawn, LEVEL)
    return {"better": better, "worse": worse, "delta": float(delta), "delta_ci95": [low, high],
            "separated": bool(low > 0 or high < 0)}
