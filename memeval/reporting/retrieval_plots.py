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

GROUP = 0.8  # share of a pass's slot its arms' bars fill


def retrieval_figure(passes: Sequence[PassMetrics], k: int) -> plt.Figure:
    """Side-by-side bars from zero, an arm's colour the same in both panels: arms that score
    alike stay visible, and their gaps are to scale."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 4.5))
    xs = [p.pass_no for p in passes]
    arms = list(passes[-1].ranking)
    width = GROUP / len(arms)
    for n, arm in enumerate(arms):
        scores = [p.ranking[arm] for p in passes]
        at = [x + (n - (len(arms) - 1) / 2) * width for x in xs]
        values = [s.ndcg for s in scores]
        errors = [[v - s.ndcg_ci95[0] for v, s in zip(values, scores, strict=True)],
                  [s.ndcg_ci95[1] - v for v, s in zip(values, scores, strict=True)]]
        left.bar(at, values, width, yerr=errors, capsize=2, color=f"C{n}", label=arm,
                 error_kw={"elinewidth": 0.8})
        concentration = [s.gini_access if s.gini_access is not None else s.gini_recall
                         for s in scores]
        if all(c is not None for c in concentration):
            right.bar(at, concentration, width, color=f"C{n}", label=arm)
    for axis in (left, right):
        axis.set_xlabel("replay pass")
        axis.set_xticks(xs)
        axis.set_ylim(0, 1)
    left.set_ylabel(f"nDCG@{k} on held-out queries (95% CI)")
    left.set_title("Ranking quality")
    right.set_ylabel("Gini of accesses (0 even, 1 one memory)")
    right.set_title("Concentration of use")
    # one legend for both panels, beside them: inside, it hides bars of either
    handles, labels = left.get_legend_handles_labels()
    right.legend(handles, labels, fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def make_retrieval_figures(run_dir: Path, passes: Sequence[PassMetrics], k: int) -> list[Path]:
    out = run_dir / "figures"
    out.mkdir(exist_ok=True)
    return [save(retrieval_figure(passes, k), out / "retrieval.png")]
