"""matplotlib figures of a run directory: the experiment's own (declared with its outputs), and the
write-gate replays' set: funnel, learning curve, score distributions, rejection store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.ticker import MaxNLocator, PercentFormatter

from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.gate_metrics import OUTCOMES, PREJUDGE_STAGES
from memeval.reporting.figures import save
from memeval.reporting.outputs import outputs_of
from memeval.results.result import CI, PassMetrics, RunResult
from memeval.results.run import Run

# Okabe and Ito's colour-blind-safe palette; each label is hatched apart too, so two labels never
# read as one colour where they overlap or to a reader who cannot tell the hues apart.
LABEL_COLOURS = {"noise": "#D55E00", "low_value": "#0072B2", "substantive": "#009E73"}
LABEL_HATCHES = {"noise": "//", "low_value": "\\\\", "substantive": ""}
UNLABELLED = {"None": "unlabelled"}  # the rejection store counts a text without a label as "None"
SCORE_UNITS = {"logistic": "logit", "knn_margin": "top-k cosine to accepted − to rejected",
               "memoryd": "quality / (quality + noise) similarity, 0–1"}
"""What each content scorer's score is, for the axis it is plotted on."""


def funnel(result: RunResult, _: pd.DataFrame, ax: plt.Axes) -> None:
    passes = result.passes
    width = 0.8 / max(len(passes), 1)
    for i, p in enumerate(passes):
        counts = [p.stage_counts[s] for s in OUTCOMES]
        xs = [x + i * width for x in range(len(OUTCOMES))]
        ax.bar(xs, counts, width=width, label=f"pass {p.pass_no}")
    ax.set_xticks([x + width * (len(passes) - 1) / 2 for x in range(len(OUTCOMES))])
    ax.set_xticklabels(OUTCOMES, rotation=30, ha="right")
    ax.set_xlabel("gate stage the entry stopped at (stored: kept)")
    ax.set_ylabel("entries ending at stage (count)")
    ax.set_title("Where entries stop, per pass")
    ax.legend()


def _recall_flags(rows: pd.DataFrame) -> np.ndarray:
    """What substantive recall is the mean of: each human-labelled substantive entry, kept."""
    return rows.loc[(rows["label"] == "substantive") & (rows["label_source"] == "human"),
                    "retained"].to_numpy(dtype=float)


def _prejudge_flags(rows: pd.DataFrame) -> np.ndarray:
    """What the pre-judge filter rate is the mean of: each entry, stopped before the judge."""
    return rows["outcome"].isin(PREJUDGE_STAGES).to_numpy(dtype=float)


class Curve(NamedTuple):
    """A rate the learning curve draws: its name and line style, its value and 95% CI as a pass
    holds them, and the per-entry flags it is the mean of (to bootstrap the CI of a run whose
    metrics hold none)."""

    name: str
    style: str
    value: Callable[[PassMetrics], float | None]
    ci: Callable[[PassMetrics], CI]
    flags: Callable[[pd.DataFrame], np.ndarray]


CURVES = (Curve("substantive recall (% of substantive)", "o-", lambda p: p.substantive_recall,
                lambda p: p.substantive_recall_ci95, _recall_flags),
          Curve("pre-judge filter rate (% of entries)", "s--", lambda p: p.prejudge_filter_rate,
                lambda p: p.prejudge_filter_rate_ci95, _prejudge_flags))
RESAMPLES = 2000  # for a CI bootstrapped here, from the decisions of a run that stored none


def _interval(p: PassMetrics, curve: Curve, decisions: pd.DataFrame, arm: str,
              seed: int) -> tuple[float, float]:
    """The pass's 95% CI as its metrics hold it; else bootstrapped from its measured decisions
    as the run does (same flags, seed); nan where neither is there."""
    low, high = curve.ci(p)
    if low is not None and high is not None:
        return float(low), float(high)
    if decisions.empty:
        return float("nan"), float("nan")
    rows = decisions[(decisions["pass_no"] == p.pass_no) & (decisions["phase"] == "eval")]
    if "arm" in rows:
        rows = rows[rows["arm"].fillna("main") == arm]
    return bootstrap_ci(curve.flags(rows), RESAMPLES, seed + p.pass_no)


def learning_curve(result: RunResult, decisions: pd.DataFrame, ax: plt.Axes) -> None:
    """Each rate per pass with its 95% CI shaded; a pass without one is named in the legend."""
    for arm, passes in result.by_arm().items():
        xs = [p.pass_no for p in passes]
        suffix = "" if arm == "main" else f" ({arm})"
        for curve in CURVES:
            ys = np.array([curve.value(p) for p in passes], dtype=float)  # None: NaN
            low, high = np.array([_interval(p, curve, decisions, arm, result.seed or 0)
                                  for p in passes]).T
            missing = [str(x) for x, bound in zip(xs, low, strict=True) if np.isnan(bound)]
            note = "" if not missing else (" (95% CI n/a)" if len(missing) == len(xs) else
                                           f" (95% CI n/a: pass {', '.join(missing)})")
            line, = ax.plot(xs, ys, curve.style, label=curve.name + suffix + note)
            ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel("pass (replay of the dataset, 1 = first)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("rate (%)")
    ax.yaxis.set_major_formatter(PercentFormatter(xmax=1))
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Learning over passes (shaded: 95% CI)")
    ax.legend(fontsize=8)


def score_distributions(result: RunResult, decisions: pd.DataFrame, ax: plt.Axes) -> None:
    """The last pass's content scores per label on shared bins: each label translucent, outlined
    in its colour and hatched its own way, so overlapping labels all stay visible."""
    scored = decisions[decisions["score"].notna() & (decisions["phase"] == "eval")]
    if scored.empty:
        ax.text(0.5, 0.5, "content scorer never active", ha="center", transform=ax.transAxes)
        return
    last_pass = int(scored["pass_no"].max())
    last = scored[scored["pass_no"] == last_pass]
    edges = np.histogram_bin_edges(last["score"], bins=30)
    for label, colour in LABEL_COLOURS.items():
        values = last[last["label"] == label]["score"]
        if not values.empty:
            ax.hist(values, bins=edges.tolist(), histtype="stepfilled",
                    facecolor=to_rgba(colour, 0.25), edgecolor=colour, linewidth=1.5,
                    hatch=LABEL_HATCHES[label], label=f"{label} (n = {len(values)} turns)")
    threshold = last["threshold"].dropna()
    if not threshold.empty:
        ax.axvline(float(threshold.iloc[-1]), color="black", linestyle="--", label="threshold")
    scorer = result.scorer.name if result.scorer else ""
    ax.set_xlabel(f"content score ({SCORE_UNITS.get(scorer, 'scorer units')}; threshold dashed)")
    ax.set_ylabel("turns (count)")
    turns = int(((decisions["pass_no"] == last_pass) & (decisions["phase"] == "eval")).sum())
    ax.set_title(f"Content scores per label, pass {last_pass}: {len(last)} of its {turns} turns "
                 "scored (the rest stopped earlier)")
    ax.legend(fontsize=8)


def rejection_store(result: RunResult, _: pd.DataFrame, ax: plt.Axes) -> None:
    """What the noise prototypes learn from: the store's make-up by source label, per pass. The
    three labels are always in the legend (no substantive text is the healthy state); any other
    source, such as unlabelled rows, only when the store holds some."""
    passes = [(f"{'' if arm == 'main' else arm + ' '}pass {p.pass_no}", p)
              for arm, of_arm in result.by_arm().items() for p in of_arm]
    others = sorted({label for _, p in passes for label, n in p.rejection_store_by_label.items()
                     if n and label not in LABEL_COLOURS})
    ys, left = np.arange(len(passes)), np.zeros(len(passes))
    for label in [*LABEL_COLOURS, *others]:
        counts = np.array([p.rejection_store_by_label.get(label, 0) for _, p in passes],
                          dtype=float)
        ax.barh(ys, counts, left=left, color=LABEL_COLOURS.get(label, "grey"),
                label=UNLABELLED.get(label, label))
        left += counts
    for y, total, (_name, p) in zip(ys, left, passes, strict=True):
        kept = p.rejection_store_size is not None  # a system may keep no rejection store
        ax.text(float(total), float(y), f" {total:.0f}" if kept else " no rejection store",
                va="center", fontsize=10)
    ax.set_xlim(0, max(left.max(initial=0), 1) * 1.1)  # room for the totals
    ax.set_yticks(ys, [name for name, _ in passes], fontsize=10)
    ax.invert_yaxis()  # first pass on top
    ax.set_xlabel("texts in rejection store (count)")
    ax.set_title("Rejection store by source label (end of pass)")
    ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.01, 0.5))


def _no_auroc(labels: pd.Series) -> str:
    """Why a pass reports no AUROC of its stored memories' MQS."""
    if not labels.isin(["low_value", "noise"]).any():
        return "no low-value memories stored"
    if not (labels == "substantive").any():
        return "no substantive memories stored"
    return "not reported"


def stored_mqs(result: RunResult, stored: pd.DataFrame, ax: plt.Axes) -> None:
    """MQS of each pass's stored memories by label, one jittered dot per memory by its pass's
    tick (the labels a pass stored side by side, centred on it), with the AUROC the pass
    reports: does the score put what is worth keeping on top? Where it has none, the title says
    why, once."""
    groups = {**LABEL_COLOURS, "unlabelled": "grey"}
    kinds = stored["label"].fillna("unlabelled").to_numpy()
    passes, xs = stored["pass"].to_numpy(), stored["pass"].to_numpy(dtype=float)
    jitter = np.random.default_rng(0)
    for t in np.unique(passes):
        present = [g for g in groups if ((passes == t) & (kinds == g)).any()]
        slot = 0.6 / len(present)
        for i, group in enumerate(present):
            mine = (passes == t) & (kinds == group)
            xs[mine] += (i - (len(present) - 1) / 2 + jitter.uniform(-0.4, 0.4, mine.sum())) * slot
    for group, colour in groups.items():
        mine = kinds == group
        if mine.any():  # a legend entry for it would show nothing
            ax.scatter(xs[mine], stored["score"].to_numpy()[mine], s=9, color=colour,
                       alpha=0.3 if group == "unlabelled" else 0.6, label=group)
    aurocs = {p.pass_no: p.stored_mqs.mqs.auroc if p.stored_mqs else None
              for p in result.passes}
    ticks = sorted(stored["pass"].unique())
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"pass {t}" + ("" if aurocs.get(t) is None else
                                        f"\nAUROC {aurocs[t]:.3f}") for t in ticks])
    ax.set_xlim(min(ticks, default=1) - 0.5, max(ticks, default=1) + 0.5)
    ax.set_xlabel("pass (replay of the dataset; AUROC: MQS, substantive vs low-value)")
    missing: dict[str, list[str]] = {}  # why, and the passes it applies to
    for t in ticks:
        if aurocs.get(t) is None:
            missing.setdefault(_no_auroc(stored[stored["pass"] == t]["label"]), []).append(str(t))
    title = "MQS of stored memories, by label"
    if missing:
        everywhere = [str(t) for t in ticks] in missing.values()  # one reason, every pass
        reasons = (f": {next(iter(missing))}" if everywhere else " in " + "; ".join(
            f"pass {', '.join(of)}: {why}" for why, of in missing.items()))
        title += f"\nAUROC n/a{reasons}"
    ax.set_title(title)
    ax.set_ylabel("MQS (0–100)")
    ax.set_ylim(-2, 102)
    ax.legend(fontsize=8)


FIGURES: dict[str, Callable[[RunResult, pd.DataFrame, plt.Axes], None]] = {
    "funnel": funnel, "learning_curve": learning_curve,
    "score_distributions": score_distributions, "rejection_store": rejection_store,
}


def make_figures(run_dir: str | Path) -> list[Path]:
    """Render the run's figures, those its experiment declared, into RUN_DIR/figures/; returns
    the files written."""
    run = Run.load(run_dir)
    return outputs_of(run.experiment).figures(run)


def make_gate_figures(run: Run) -> list[Path]:
    """The write-gate replays' figures (funnel, learning curve, scores, rejection store)."""
    out = run.path / "figures"
    out.mkdir(exist_ok=True)
    written = []
    for name, draw in FIGURES.items():
        fig, ax = plt.subplots(figsize=(8, 4.5))
        draw(run.result, run.decisions, ax)
        written.append(save(fig, out / f"{name}.png"))
    if (run.path / "stored_memories.parquet").is_file() and not (
            table := run.table("stored_memories")).empty:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        stored_mqs(run.result, table, ax)
        written.append(save(fig, out / "stored_mqs.png"))
    return written
