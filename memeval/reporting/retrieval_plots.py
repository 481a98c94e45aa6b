"""Figure of a `retrieval_replay` run: nDCG@k per pass for each arm, and how concentrated each
arm's accesses became (reinforcement's rich-get-richer risk)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from memeval.reporting.figures import save
from memeval.results.result import PassMetrics

MARKERS = "osD^vP*X"


def make_retrieval_figures(run_dir: Path, passes: Sequence[PassMetrics]) -> list[Path]:
    out = run_dir / "figures"
    out.mkdir(exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 4.5))
    xs = [p.pass_no for p in passes]
    arms = list(passes[-1].ranking)
    for n, arm in enumerate(arms):
        scores = [p.ranking[arm] for p in passes]
        values = [s.ndcg for s in scores]
        errors = [[v - s.ndcg_ci95[0] for v, s in zip(values, scores, strict=True)],
                  [s.ndcg_ci95[1] - v for v, s in zip(values, scores, strict=True)]]
        shift = (n - (len(arms) - 1) / 2) * 0.04  # side by side, so the CIs stay readable
        left.errorbar([x + shift for x in xs], values, yerr=errors,
                      fmt=f"{MARKERS[n % len(MARKERS)]}-", capsize=3, label=arm)
        concentration = [s.gini_access if s.gini_access is not None else s.gini_recall
                         for s in scores]
        if all(c is not None for c in concentration):
            right.plot(xs, concentration, f"{MARKERS[n % len(MARKERS)]}-", label=arm)
    for axis in (left, right):
        axis.set_xlabel("replay pass")
        axis.set_xticks(xs)
    left.set_ylabel("nDCG@k on held-out queries (95% CI)")
    left.set_title("Ranking quality")
    right.set_ylim(0, 1)
    right.set_ylabel("Gini of accesses (0 even, 1 one memory)")
    right.set_title("Concentration of use")
    # one legend for both panels, beside them: inside, it hides points of either
    handles, labels = left.get_legend_handles_labels()
    right.legend(handles, labels, fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return [save(fig, out / "retrieval.png")]
