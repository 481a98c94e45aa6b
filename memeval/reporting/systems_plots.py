"""Figures of a `compare_systems` run: one per capability, one point or bar per system."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from memeval.reporting.figures import save
from memeval.results.sections import (
    Comparison,
    ConflictTable,
    SearchTable,
    TrustTable,
    WriteGateTable,
)


def _write_gate(ax: plt.Axes, table: WriteGateTable) -> None:
    """Recall against judge calls saved: up and right is better."""
    for name, p in table.systems.items():
        saving, recall = p.judge_call_saving, p.substantive_recall
        if saving is None or recall is None:
            continue
        ax.scatter([100 * saving], [100 * recall], s=40)
        ax.annotate(name, (100 * saving, 100 * recall), textcoords="offset points",
                    xytext=(5, 4), fontsize=9)
    ax.set_xlabel("judge calls saved (%)")
    ax.set_ylabel("substantive recall (%)")
    ax.set_title(f"write gate, pass {table.pass_no}")


def _bars(ax: plt.Axes, values: dict[str, float | None], ylabel: str, title: str) -> None:
    names = list(values)
    ax.bar(names, [v or 0.0 for v in values.values()], color="tab:blue")
    for i, v in enumerate(values.values()):
        ax.text(i, v or 0.0, "—" if v is None else f"{v:.3f}", ha="center", va="bottom")
    ax.set_ylabel(ylabel)
    ax.set_title(title)


def _trust(ax: plt.Axes, table: TrustTable) -> None:
    _bars(ax, {n: r.spearman for n, r in table.systems.items()},
          "Spearman with the trust label", f"trust, {table.records} records")


def _conflicts(ax: plt.Axes, table: ConflictTable) -> None:
    _bars(ax, {n: r.recall for n, r in table.systems.items()},
          "recall of any conflict", f"conflicts, {table.pairs} pairs")


def _search(ax: plt.Axes, table: SearchTable) -> None:
    _bars(ax, {n: e.mean for n, e in table.ndcg_vs_first.items()},
          f"nDCG@{table.k}", f"search, {table.queries} queries")


DRAW: dict[str, Callable[[plt.Axes, Any], None]] = {
    "write_gate": _write_gate, "trust": _trust, "conflicts": _conflicts, "search": _search}


def make_systems_figures(run_dir: Path, compared: Comparison | None) -> list[Path]:
    """A figure per capability compared."""
    out = run_dir / "figures"
    out.mkdir(exist_ok=True)
    written = []
    for what, table in compared.tables() if compared else ():
        fig, ax = plt.subplots(figsize=(6, 4.2))
        DRAW[what](ax, table)
        written.append(save(fig, out / f"systems_{what}.png"))
    return written
