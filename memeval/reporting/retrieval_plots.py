"""Figure of a `retrieval_replay` run: nDCG@k per pass for each arm, and the concentration the
reinforced arm pays for it."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from memeval.reporting.figures import save
from memeval.results.run_dir import read_metrics


def make_retrieval_figures(run_dir: str | Path) -> list[Path]:
    passes = read_metrics(run_dir)["passes"]
    out = Path(run_dir) / "figures"
    out.mkdir(exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    xs = [p["pass"] for p in passes]
    for arm, style in (("off", "o-"), ("on", "s--")):
        values = [p[arm]["ndcg"] for p in passes]
        errors = [[v - p[arm]["ndcg_ci95"][0] for v, p in zip(values, passes, strict=True)],
                  [p[arm]["ndcg_ci95"][1] - v for v, p in zip(values, passes, strict=True)]]
        left.errorbar(xs, values, yerr=errors, fmt=style, capsize=4,
                      label=f"reinforcement {arm}")
    left.set_xlabel("replay pass")
    left.set_ylabel("nDCG@k, held-out queries")
    left.set_title("Ranking quality")
    left.legend()
    right.plot(xs, [p["on"]["gini_recall"] for p in passes], "o-", label="Gini of recall counts")
    right.plot(xs, [p["on"]["pagerank_top1pct_share"] for p in passes], "s--",
               label="PageRank mass in top 1%")
    right.set_xlabel("replay pass")
    right.set_ylim(0, 1)
    right.set_title("Concentration (reinforced arm)")
    right.legend()
    return [save(fig, out / "retrieval.png")]
