"""Figures of the QA experiments: scores per question category, each with its 95% CI."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from memeval.reporting.figures import save

SHOWN = (("locomo_f1", "LoCoMo F1"), ("j", "J (LLM judge)"))


def make_qa_figures(run_dir: Path, qa: Mapping[str, Any]) -> list[Path]:
    return [category_bars(run_dir, qa["by_category"], SHOWN,
                          f"Memory QA: {qa['system']} on {qa['corpus']}, top {qa['k']}, "
                          f"answerer {qa['answerer']}", "memory_qa.png")]


def category_bars(run_dir: Path, by_category: Mapping[str, Any],
                  shown: Sequence[tuple[str, str]], title: str, name: str) -> Path:
    """Scores (key, label) per category, each a bar with its 95% CI; a score never measured
    (J without a grader) is left out."""
    out = run_dir / "figures"
    out.mkdir(exist_ok=True)
    categories = list(by_category)
    shown = [(key, label) for key, label in shown
             if any(by_category[c][key]["mean"] is not None for c in categories)]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(categories) + 2), 4.2))
    width = 0.8 / max(len(shown), 1)
    for n, (key, label) in enumerate(shown):
        scores = [by_category[c][key] for c in categories]
        values = [s["mean"] if s["mean"] is not None else 0.0 for s in scores]
        errors = [[v - s["ci95"][0] if s["mean"] is not None else 0.0
                   for v, s in zip(values, scores, strict=True)],
                  [s["ci95"][1] - v if s["mean"] is not None else 0.0
                   for v, s in zip(values, scores, strict=True)]]
        ax.bar([x + (n - (len(shown) - 1) / 2) * width for x in range(len(categories))],
               values, width, yerr=errors, capsize=3, label=label)
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels([f"{c}\n(n={by_category[c]['questions']})" for c in categories],
                       fontsize="small")
    ax.set_ylim(0, 1)
    ax.set_ylabel("score, mean with 95% CI")
    ax.set_title(title, fontsize="medium")
    if shown:
        ax.legend(fontsize="small")
    return save(fig, out / name)
