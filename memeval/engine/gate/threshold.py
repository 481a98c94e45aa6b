"""Threshold policies: where the content-score cut sits, and why.

memoryd's 0.35 was tuned for voyage-4-nano; cosine scales differ between embedders, so a fixed
number does not transfer. `judge_quantile` re-derives the cut at every rebuild from the judge's own
acceptances: it takes the (1 − target_recall) quantile of their out-of-sample scores, so that about
`target_recall` of what the judge keeps would still pass the gate — with any embedder, on any data.
`estimator: normal` reads that quantile off a normal fit (mean − z·sd), steadier than the empirical
quantile when only a few dozen acceptances exist and the target sits in the extreme tail.
`estimator: robust` reads it off a normal fit to the median and the MAD (median − z·1.4826·MAD):
a real judge wrongly accepts some noise, whose low scores drag a mean down and widen an sd, so
a few such mistakes pulled the cut far enough down that the gate passed nearly everything; the
median and MAD barely move until a large share of the acceptances are wrong.

Out-of-sample scores come from one of two sources (`scores:`). `held_out` asks the scorer
(K-fold or leave-one-out refits over the current window). `prequential` uses the score each
acceptance got from the model fitted *before* it was learned — what the gate would have said to
it — which costs one dot product instead of K refits; until `min_accepted` of those exist (after
start-up or a restart) it falls back to `held_out`.

The settings are the top-level `threshold` config group (memeval/conf/threshold/; a scorer's YAML
may pick its default option), read by the content-score stage alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

from memeval.registry import ConfigError, bounded, did_you_mean, to_dataclass

SCORE_SOURCES = ("held_out", "prequential")


@dataclass
class ThresholdConfig:
    """`fixed`: use `value`; `judge_quantile`: calibrate from the judge's acceptances, scored
    `held_out` (by the scorer's refits) or `prequential` (before each was learned). The defaults
    are the group default's (memeval/conf/threshold/judge_quantile.yaml); ranges are checked by
    `bounded`."""

    policy: str = "judge_quantile"
    value: float = bounded(0.0, -2, 2)
    target_recall: float = bounded(0.995, high=1, above=0)
    estimator: str = "normal"
    margin: float = bounded(0.0, -2, 2)
    min_accepted: int = bounded(20, 1)
    # False: keep the first calibrated cut for good ("tuned once", as memoryd's 0.35 was).
    refresh: bool = True
    scores: str = "held_out"

    def validate(self) -> None:
        resolve_policy(self.policy)
        if self.scores not in SCORE_SOURCES:
            raise ValueError(f"threshold.scores must be one of {', '.join(SCORE_SOURCES)}, "
                             f"got '{self.scores}'")
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"threshold.estimator must be one of {', '.join(ESTIMATORS)}, "
                             f"got '{self.estimator}'")


Policy = Callable[[ThresholdConfig, Callable[[], np.ndarray], int], float | None]
"""(settings, out-of-sample scores of the acceptances — computed only if needed, how many
acceptances the scorer learned from) -> the cut, or None while it cannot be set."""


def _z(target_recall: float) -> float:
    return NormalDist().inv_cdf(target_recall) if target_recall < 1 else 4.0


def _normal(scores: np.ndarray, target_recall: float) -> float:
    return float(scores.mean() - _z(target_recall) * scores.std(ddof=1))


def _robust(scores: np.ndarray, target_recall: float) -> float:
    median = float(np.median(scores))
    spread = 1.4826 * float(np.median(np.abs(scores - median)))  # the MAD as a normal sd
    return median - _z(target_recall) * spread


def _empirical(scores: np.ndarray, target_recall: float) -> float:
    return float(np.quantile(scores, 1.0 - target_recall))


class Estimator(NamedTuple):
    """How the cut is read off the acceptances' scores, and how reports say so."""

    cut: Callable[[np.ndarray, float], float]  # (scores, target recall) -> cut before the margin
    words: str


ESTIMATORS: dict[str, Estimator] = {
    "normal": Estimator(_normal, "a normal fit (mean − z·sd)"),
    "robust": Estimator(_robust, "a robust normal fit (median − z·1.4826·MAD)"),
    "empirical": Estimator(_empirical, "the empirical quantile"),
}


def fixed(cfg: ThresholdConfig, scores: Callable[[], np.ndarray], accepted: int) -> float | None:
    return cfg.value


def judge_quantile(cfg: ThresholdConfig, scores_of: Callable[[], np.ndarray],
                   accepted: int) -> float | None:
    if accepted < cfg.min_accepted:
        return None
    return ESTIMATORS[cfg.estimator].cut(scores_of(), cfg.target_recall) - cfg.margin


POLICIES: dict[str, Policy] = {"fixed": fixed, "judge_quantile": judge_quantile}


def explain(cfg: ThresholdConfig) -> str:
    """One sentence for reports: which cut is in force and why."""
    if cfg.policy == "fixed":
        return f"fixed cut {cfg.value:g}, set by hand (memoryd: 0.35, tuned for voyage-4-nano)"
    how = ESTIMATORS[cfg.estimator].words
    refresh = "re-derived at every scorer rebuild" if cfg.refresh else "derived once, then frozen"
    source = ("prequential scores (each scored before it was learned; held-out refits until "
              f"{cfg.min_accepted} exist)" if cfg.scores == "prequential" else "held-out scores")
    return (f"cut = {1 - cfg.target_recall:.3g} quantile of the judge's acceptances' {source} "
            f"via {how}, minus {cfg.margin:g}, so ≈{cfg.target_recall:.1%} of what the "
            f"judge keeps passes, for any embedder; {refresh}; inactive below "
            f"{cfg.min_accepted} acceptances")


def threshold_settings(params: Mapping[Any, Any]) -> ThresholdConfig:
    """The composed `threshold` node as settings: the one place it is validated."""
    return to_dataclass(ThresholdConfig, params, "content-score threshold", key="threshold")


def resolve_policy(name: str) -> Policy:
    if name not in POLICIES:
        raise ConfigError(f"unknown threshold policy '{name}'{did_you_mean(name, POLICIES)} "
                          f"(known: {', '.join(sorted(POLICIES))})")
    return POLICIES[name]
