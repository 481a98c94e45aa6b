"""Figures that read at full size: numbers legible on their cells, the headline detector shown,
legends that hide nothing and list only what is drawn, axes from zero that name their k, and
counts and points that say what they are."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.collections import PathCollection
from matplotlib.legend import Legend
from matplotlib.patches import Rectangle

from memeval.data.quality_sets import CONFLICT_LABELS
from memeval.experiments.conflict_detection import ConflictFindings
from memeval.reporting.calibration_plots import LABELS, breakdown, trust_against_mqs
from memeval.reporting.conflict_plots import confusion_figure
from memeval.reporting.figures import confusion_matrix, contrast
from memeval.reporting.plots import learning_curve, score_distributions, stored_mqs
from memeval.reporting.retrieval_plots import retrieval_figure
from memeval.results.result import load_result
from memeval.results.run_dir import read_decisions
from memeval.sweep.summary import Sweep, pareto_figure

RUNS = Path(__file__).parent / "data" / "runs"
THREE_PASS = RUNS / "schema1_three_pass"


def _cell_contrasts(ax: plt.Axes) -> list[float]:
    """Each count's contrast against the colour of the cell it is printed on."""
    image = ax.get_images()[0]
    matrix = image.get_array()
    assert matrix is not None
    cells = image.to_rgba(matrix)
    return [contrast(text.get_color(), cells[round(text.get_position()[1]),
                                             round(text.get_position()[0])])
            for text in ax.texts]


def test_every_count_of_a_confusion_matrix_reads_on_its_cell() -> None:
    labels = ["a", "b", "c"]
    counts = {"a": {"a": 30, "b": 0, "c": 14}, "b": {"a": 3, "b": 22, "c": 8},
              "c": {"a": 1, "b": 17, "c": 26}}
    fig, ax = plt.subplots()
    confusion_matrix(ax, counts, labels, "t", "guess")
    contrasts = _cell_contrasts(ax)
    assert len(contrasts) == 9 and min(contrasts) >= 4.5  # WCAG AA for normal text
    assert {t.get_color() for t in ax.texts} == {"black", "white"}  # dark cells get white
    plt.close(fig)


def _learned_table() -> pd.DataFrame:
    """Development pairs the rules and detector both get right, and test pairs only the
    detector does: the figure must show the test split."""
    dev = [("dev", label, label, label) for label in CONFLICT_LABELS]
    test = [("test", label, label, "none") for label in CONFLICT_LABELS for _ in range(3)]
    return pd.DataFrame(dev + test, columns=["split", "label", "learned_predicted",
                                             "memeval_predicted"])


def test_the_conflict_figure_shows_the_learned_detector_beside_the_rules_on_the_test_split(
        ) -> None:
    conflicts = load_result(RUNS / "schema1_conflict_detection").of(ConflictFindings).conflicts
    fig = confusion_figure(conflicts, _learned_table())
    learned, rules = fig.axes[:2]
    assert learned.get_title() == "learned detector (accuracy 1.000)"
    assert rules.get_title() == "word rules (accuracy 0.250)"
    assert fig.get_suptitle() == "Conflict detection on the test split, never trained on (12 pairs)"
    assert [t.get_text() for t in learned.texts][::5] == ["3"] * 4  # the diagonal
    assert min(_cell_contrasts(learned) + _cell_contrasts(rules)) >= 4.5
    plt.close(fig)
    dev = _learned_table().query("split == 'dev'")  # the test skipped: the CV's pairs
    fig = confusion_figure(conflicts, dev)
    assert fig.get_suptitle().endswith("development pairs, out of fold (4 pairs)")
    plt.close(fig)


def test_without_the_learned_detector_the_conflict_figure_shows_each_detector_scored() -> None:
    conflicts = load_result(RUNS / "schema1_conflict_detection").of(ConflictFindings).conflicts
    fig = confusion_figure(conflicts, None)
    assert [ax.get_title().split(" (")[0] for ax in fig.axes] == ["memeval", "compat"]
    assert "hand-labelled pairs (84 pairs)" in fig.get_suptitle()
    plt.close(fig)


def _beside(ax: plt.Axes, legend: Legend | None) -> bool:
    """The legend lies wholly right of the axes, so it covers nothing drawn in them."""
    assert legend is not None
    return bool(legend.get_window_extent().x0 >= ax.get_window_extent().x1)


def test_the_mqs_breakdown_legend_sits_beside_the_bars_and_labels_have_their_own_row() -> None:
    records = pd.read_parquet(RUNS / "schema1_mqs_calibration" / "mqs_records.parquet")
    fig = breakdown(records)
    strip, bars = fig.axes
    fig.canvas.draw()
    assert _beside(bars, bars.get_legend()) and strip.get_legend() is None
    assert [t.get_text() for t in strip.get_yticklabels()] == list(LABELS)
    marks = [c for c in strip.collections if isinstance(c, PathCollection)]
    assert [mark.get_label() for mark in marks] == list(LABELS)
    for row, mark in enumerate(marks):
        offsets = np.asarray(mark.get_offsets())
        assert len(offsets) == (records["label"] == LABELS[row]).sum() > 0
        assert set(offsets[:, 1]) == {row}  # a label is told by its row
        assert np.allclose(np.asarray(mark.get_facecolor())[:, :3], 0)  # black: no term's
    plt.close(fig)


def _legend_has_data(ax: plt.Axes) -> bool:
    """Every legend entry names a drawn collection with at least one point."""
    drawn = {c.get_label(): len(np.asarray(c.get_offsets())) for c in ax.collections
             if isinstance(c, PathCollection)}
    legend = ax.get_legend()
    assert legend is not None
    return all(drawn.get(t.get_text(), 0) > 0 for t in legend.get_texts())


def _offsets(ax: plt.Axes, label: str) -> np.ndarray:
    """How far each of a label's dots lies from the nearest pass tick."""
    (dots,) = [c for c in ax.collections if c.get_label() == label]
    xs = np.asarray(dots.get_offsets())[:, 0]
    return xs - np.round(xs)


def test_stored_mqs_says_once_why_auroc_is_undefined_and_lists_only_drawn_labels() -> None:
    """The committed run's oracle judge stores only substantive memories: no AUROC anywhere;
    the dots sit on their pass's tick, and the x axis keeps its title."""
    result = load_result(THREE_PASS)
    stored = pd.read_parquet(THREE_PASS / "stored_memories.parquet")
    fig, ax = plt.subplots()
    stored_mqs(result, stored, ax)
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["pass 1", "pass 2", "pass 3"]
    assert ax.get_title().endswith("\nAUROC n/a: no low-value memories stored")
    assert ax.get_xlabel().startswith("pass (")
    legend = ax.get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["substantive"]
    assert _legend_has_data(ax)
    offsets = _offsets(ax, "substantive")
    assert abs(offsets.mean()) < 0.03 and np.abs(offsets).max() < 0.25  # centred on the tick
    plt.close(fig)


def test_stored_mqs_names_the_passes_without_auroc_when_others_have_one() -> None:
    result = load_result(THREE_PASS)
    stored = pd.read_parquet(THREE_PASS / "stored_memories.parquet")
    stored.loc[stored.index[stored["pass"] == 2][:3], "label"] = "noise"
    first = result.passes[0]
    assert first.stored_mqs is not None
    scored = replace(first, stored_mqs=replace(
        first.stored_mqs, mqs=replace(first.stored_mqs.mqs, auroc=0.75)))
    fig, ax = plt.subplots()
    stored_mqs(replace(result, passes=(scored, *result.passes[1:])), stored, ax)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["pass 1\nAUROC 0.750", "pass 2",
                                                            "pass 3"]
    assert ax.get_title().endswith("n/a in pass 2: not reported; "
                                   "pass 3: no low-value memories stored")
    assert _legend_has_data(ax)
    noise, substantive = _offsets(ax, "noise"), _offsets(ax, "substantive")
    assert noise.max() < 0 and len(noise) == 3  # beside the substantive dots of pass 2, left
    assert np.abs(substantive).max() < 0.3
    plt.close(fig)


def test_retrieval_bars_start_at_zero_name_their_k_and_hide_no_arm() -> None:
    passes = load_result(RUNS / "schema1_retrieval_replay").passes
    fig = retrieval_figure(passes, 5)
    ndcg, gini = fig.axes
    assert "nDCG@5" in ndcg.get_ylabel()
    arms = len(passes[-1].ranking)
    for ax in (ndcg, gini):
        assert ax.get_ylim()[0] == 0
        bars = sorted((bar.get_x(), bar.get_x() + bar.get_width())
                      for bar in ax.patches if isinstance(bar, Rectangle))
        assert len(bars) == arms * len(passes)
        assert all(end <= start + 1e-9 for (_, end), (start, _) in pairwise(bars))  # no overlap
    legend = gini.get_legend()
    assert legend is not None and len(legend.get_texts()) == arms
    plt.close(fig)


def test_score_distributions_tell_every_label_apart_where_they_overlap() -> None:
    """Shared bins, each label translucent with an opaque outline and its own hatching: noise
    and low_value, which overlap, never read as one colour."""
    decisions = read_decisions(THREE_PASS)
    fig, ax = plt.subplots()
    score_distributions(load_result(THREE_PASS), decisions, ax)
    shapes = [patch for patch in ax.patches if not patch.get_label().startswith("_")]
    assert [patch.get_label().split(" ")[0] for patch in shapes] == ["noise", "low_value",
                                                                     "substantive"]
    assert len({patch.get_hatch() or "" for patch in shapes}) == 3
    assert len({tuple(patch.get_edgecolor()) for patch in shapes}) == 3
    assert all(patch.get_facecolor()[3] <= 0.3 and patch.get_edgecolor()[3] == 1
               for patch in shapes)
    last = decisions[(decisions["pass_no"] == 3) & (decisions["phase"] == "eval")]
    bins = set(np.round(np.histogram_bin_edges(last["score"].dropna(), bins=30), 9))
    assert all(set(np.round(patch.get_path().vertices[:, 0], 9)) <= bins for patch in shapes)
    plt.close(fig)


def _band(ax: plt.Axes, index: int) -> dict[float, tuple[float, float]]:
    """The `index`-th shaded band: its low and high at each pass."""
    vertices = ax.collections[index].get_paths()[0].vertices
    return {float(x): (float(vertices[vertices[:, 0] == x][:, 1].min()),
                       float(vertices[vertices[:, 0] == x][:, 1].max()))
            for x in np.unique(vertices[:, 0])}


def test_the_learning_curve_shades_each_rates_ci_stored_or_bootstrapped() -> None:
    """The committed run stored recall's CI but not the pre-judge rate's: that one is drawn
    from the pass's decisions; without them the legend says it is not available."""
    result = load_result(THREE_PASS)
    fig, ax = plt.subplots()
    learning_curve(result, read_decisions(THREE_PASS), ax)
    recall, prejudge = _band(ax, 0), _band(ax, 1)
    assert recall == {float(p.pass_no): p.substantive_recall_ci95 for p in result.passes}
    for p in result.passes:
        assert p.prejudge_filter_rate_ci95 == (None, None) and p.prejudge_filter_rate is not None
        low, high = prejudge[p.pass_no]
        assert low < p.prejudge_filter_rate < high and high - low < 0.2
    assert "CI" in ax.get_title()
    plt.close(fig)
    fig, ax = plt.subplots()
    learning_curve(result, pd.DataFrame(), ax)
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == [
        "substantive recall (% of substantive)",
        "pre-judge filter rate (% of entries) (95% CI n/a)"]
    plt.close(fig)


def _report(value: float, width: float) -> dict[str, float | list[float]]:
    return {metric: value for metric in ("brier", "ece", "spearman")} | {
        f"{metric}_ci95": [value - width, value + width] for metric in ("brier", "ece", "spearman")}


def test_the_trust_score_against_mqs_shows_each_metric_with_its_ci_on_every_split() -> None:
    trust = {"dev": {"records": 300, "trust_out_of_fold": _report(0.1, 0.02),
                     "mqs": _report(0.3, 0.04)},
             "test": {"records": 100, "trust": _report(0.2, 0.05), "mqs": _report(0.4, 0.06)}}
    fig = trust_against_mqs(trust)
    assert [ax.get_title() for ax in fig.axes] == [
        "Brier (lower is better)", "ECE (lower is better)", "Spearman (higher is better)"]
    for ax in fig.axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["dev, out of fold\n300 records",
                                                                "test\n100 records"]
        bars = sorted(tuple(np.round(segment[:, 1], 9))
                      for c in ax.collections for segment in c.get_segments())
        assert bars == [(0.08, 0.12), (0.15, 0.25), (0.26, 0.34), (0.34, 0.46)]
        assert sorted(t.get_text() for t in ax.texts) == ["0.100", "0.200", "0.300", "0.400"]
    legend = fig.axes[0].get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["trust score",
                                                                                 "MQS"]
    plt.close(fig)
    fig = trust_against_mqs({**trust, "test": None})  # no test split: the dev CV alone
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [
        "dev, out of fold\n300 records"]
    plt.close(fig)


def test_score_distributions_say_what_n_counts() -> None:
    decisions = read_decisions(THREE_PASS)
    fig, ax = plt.subplots()
    score_distributions(load_result(THREE_PASS), decisions, ax)
    last = decisions[(decisions["pass_no"] == 3) & (decisions["phase"] == "eval")]
    legend = ax.get_legend()
    assert legend is not None
    counts = {t.get_text() for t in legend.get_texts()} - {"threshold"}
    assert counts == {f"{label} (n = {n} turns)"
                      for label, n in last[last["score"].notna()]["label"].value_counts().items()}
    assert f"of its {len(last)} turns scored" in ax.get_title() and "turns" in ax.get_ylabel()
    plt.close(fig)


def test_the_pareto_plot_names_its_metrics_and_its_points_by_their_settings() -> None:
    table = pd.DataFrame({
        "run": ["0", "1", "2", "3"], "seed": [0, 1, 0, 1],
        "threshold.target_recall": [0.9, 0.9, 0.99, 0.99],
        "judge_call_saving": [0.6, 0.55, 0.5, 0.5], "substantive_recall": [0.9, 0.92, 0.99, 0.99],
        "pareto": [True, True, True, True], "default": [False, False, True, False]})
    sweep = Sweep(table, ["seed", "threshold.target_recall"], {}, "judge_call_saving",
                  "substantive_recall", ["three_pass"], [])
    fig = pareto_figure(sweep)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "judge-call saving (%), higher is better"
    assert ax.get_ylabel() == "substantive recall (%), higher is better"
    points = sorted(text.get_text() for text in ax.texts)
    assert points == ["seed=0, target_recall=0.9",
                      "seed=0, target_recall=0.99\nseed=1, target_recall=0.99",  # one point
                      "seed=1, target_recall=0.9"]
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_yticklabels() if t.get_text()][-1].endswith("%")
    plt.close(fig)
