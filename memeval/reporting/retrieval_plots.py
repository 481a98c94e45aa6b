"""Figure of a `retrieval_replay` run: nDCG@k per pass for each arm, and the concentration the
reinforced arm pays for it."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from memeval.reporting.figures import save
from memeval.results.result import load_result


def make_retrieval_figures(run_dir: str | Path) -> list[Path]:
    passes = load_result(run_dir).passes
    out = Path(run_dir) / "figures"
    out.mkdir(exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    xs = [p.pass_no for p in passes]
    for arm, style in (("off", "o-"), ("on", "s--")):
        scores = [p.ranking[arm] for p in passes]
        values = [s.ndcg for s in scores]
        errors = [[v - s.ndcg_ci95[0] for v, s in zip(values, scores, strict=True)],
                  [s.ndcg_ci95[1] - v for v, s in zip(values, scores, strict=True)]]
        left.errorbar(xs, values, yerr=errors, fmt=style, capsize=4,
                      label=f"reinforcement {arm}")
    left.set_xlabel("replay pass")
    left.set_ylabel("nDCG@k, held-out queries")
    left.set_title("Ranking quality")
    left.legend()
    right.plot(xs, [p.ranking["on"].gini_recall for p in passes], "o-",
               label="Gini of recall counts")
    right.plot(xs, [p.ranking["on"].pagerank_top1pct_share for p in passes], "s--",
               label="PageRank mass in top 1%")
    right.set_xlabel("replay pass")
    right.set_ylim(0, 1)
    right.set_title("Concentration (reinforced arm)")
    right.legend()
    return [save(fig, out / "retrieval.png")]
