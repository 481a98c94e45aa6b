"""Figures of an `mqs_calibration` run: reliability diagram, per-record MQS breakdown, MAI
confusion matrix, and its headline: the learned trust score against MQS on the same records.
They read the run directory only (metrics.json and its tables)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from memeval.quality.mai import MAI_LABELS
from memeval.reporting.calibration_report import CALIBRATION_ERRORS
from memeval.reporting.figures import confusion_matrix, save
from memeval.results.run_dir import read_table
from memeval.results.sections import Mai, Mqs

COMPONENTS = {"confidence": "tab:blue", "usage": "tab:green", "access": "tab:cyan"}
PENALTIES = {"conflict_penalty": "tab:red", "hedged_penalty": "tab:orange"}
# The hand labels, a row each in a strip above the bars: told apart by position, in black, as
# the bars' colours already mean terms.
LABELS = ("trusted", "questionable", "untrusted")
# The headline's metrics (the errors: lower is better; rank agreement: higher), and its two
# scores, told apart by marker as well as by colour (Okabe and Ito's colour-blind-safe palette).
HEADLINE = {**{metric: (name, "lower is better") for metric, name in CALIBRATION_ERRORS.items()},
            "spearman": ("Spearman", "higher is better")}
SCORES = (("trust score", "#0072B2", "o"), ("MQS", "#E69F00", "s"))


def reliability(mqs: Mqs) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect calibration")
    for report, name, style in ((mqs.configured, "configured constants", "o-"),
                                (mqs.fitted_out_of_fold, "fitted, out of fold", "s--")):
        if report is None:  # too few labelled records to fit
            continue
        curve = report.reliability
        ax.plot([b["predicted"] for b in curve], [b["observed"] for b in curve], style,
                label=f"{name} (ECE {report.ece:.3f})")
    ax.set_xlabel("MQS / 100 (mean per equal-count bin)")
    ax.set_ylabel("share labelled trusted")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("MQS reliability")
    ax.legend(fontsize=8)
    return fig


def breakdown(records: pd.DataFrame) -> plt.Figure:
    """One bar per record, sorted by score: components stacked up, penalties down; above them,
    each record's hand label."""
    ordered = records.sort_values("score").reset_index(drop=True)
    xs = np.arange(len(ordered))
    fig, (strip, ax) = plt.subplots(2, 1, sharex=True, height_ratios=(1, 5),
                                    figsize=(max(8.0, len(ordered) * 0.14), 5.6))
    for row, label in enumerate(LABELS):
        mine = ordered.index[ordered["label"] == label]
        strip.scatter(mine, np.full(len(mine), row), color="black", marker="o", s=10,
                      label=label)
    strip.set_yticks(range(len(LABELS)), LABELS, fontsize=8)
    strip.set_ylim(len(LABELS) - 0.4, -0.6)  # first label on top
    strip.set_ylabel("hand\nlabel", fontsize=8)
    strip.tick_params(bottom=False)
    strip.set_title("MQS per record: components and penalties")
    bottom = np.zeros(len(ordered))
    for column, colour in COMPONENTS.items():
        ax.bar(xs, ordered[column], bottom=bottom, color=colour, label=column, width=0.85)
        bottom += ordered[column].to_numpy()
    below = np.zeros(len(ordered))
    for column, colour in PENALTIES.items():
        ax.bar(xs, -ordered[column], bottom=below, color=colour, label=column, width=0.85)
        below -= ordered[column].to_numpy()
    ax.scatter(xs, ordered["score"], color="black", s=8, zorder=3, label="MQS (clamped)")
    ax.legend(title="MQS and its terms", fontsize=8, title_fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))  # beside the axes: inside, it hides bars
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks([])
    ax.set_xlabel("records, sorted by MQS")
    ax.set_ylabel("points")
    return fig


def confusion(mai: Mai) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    confusion_matrix(ax, mai.confusion, MAI_LABELS, f"MAI confusion (accuracy {mai.accuracy:.3f})",
                     "MAI rubric label", [label.replace("_attributed", "") for label in MAI_LABELS])
    return fig


def _splits(trust: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    """Each split both scores were measured on: its name, the trust score's report, MQS's."""
    dev, test = trust["dev"], trust["test"]
    splits = [(f"dev, out of fold\n{dev['records']} records", dev["trust_out_of_fold"],
               dev["mqs"])]
    if test is not None:
        splits.append((f"test\n{test['records']} records", test["trust"], test["mqs"]))
    return splits


def trust_against_mqs(trust: Mapping[str, Any]) -> plt.Figure:
    """The run's headline: the content-aware trust score beside MQS on the same records, one
    panel per metric, each value with its 95% CI: out of fold on the dev records, then on the
    test split when there is one."""
    splits = _splits(trust)
    fig, axes = plt.subplots(1, len(HEADLINE), figsize=(3.4 * len(HEADLINE), 4.2))
    for ax, (metric, (name, better)) in zip(axes, HEADLINE.items(), strict=True):
        for k, (score, colour, marker) in enumerate(SCORES):
            reports = [(ours, theirs)[k] for _, ours, theirs in splits]
            values = np.array([r[metric] for r in reports], dtype=float)  # None: NaN
            bounds = np.array([r[f"{metric}_ci95"] for r in reports], dtype=float).T
            xs = np.arange(len(splits)) + (k - 0.5) * 0.35
            ax.errorbar(xs, values, yerr=np.abs(bounds - values), fmt=marker, color=colour,
                        capsize=4, label=score)
            for x, value in zip(xs, values, strict=True):
                ax.annotate(f"{value:.3f}", (x, value), xytext=(5, 0), textcoords="offset points",
                            va="center", fontsize=8)
        ax.set_xticks(range(len(splits)), [split[0] for split in splits], fontsize=8)
        ax.set_xlim(-0.6, len(splits) - 0.2)  # room for the last value's number
        if metric in CALIBRATION_ERRORS:
            ax.set_ylim(bottom=0)
        ax.set_title(f"{name} ({better})", fontsize=10)
    axes[0].set_ylabel("value (bars: 95% CI)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Trust score against MQS on the same records")
    return fig


def make_calibration_figures(run_dir: Path, mqs: Mqs | None, mai: Mai | None,
                             trust: Mapping[str, Any] | None = None) -> list[Path]:
    """The figures of the parts the run computed (MQS, MAI or the trust score may have been left
    out, and the reliability diagram needs trust labels)."""
    out = run_dir / "figures"
    out.mkdir(exist_ok=True)
    paths = []
    if mqs is not None and mqs.configured is not None:
        paths.append(save(reliability(mqs), out / "mqs_reliability.png"))
    records = read_table(run_dir, "mqs_records") if mqs is not None else None
    if records is not None and "confidence" in records:  # MQS's terms: the reference engine's
        paths.append(save(breakdown(records), out / "mqs_breakdown.png"))
    if mai is not None:
        paths.append(save(confusion(mai), out / "mai_confusion.png"))
    if trust is not None:
        paths.append(save(trust_against_mqs(trust), out / "trust_vs_mqs.png"))
    return paths
