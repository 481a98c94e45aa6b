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
from memeval.reporting.calibration_plots import LABELS, breakdown
from memeval.reporting.conflict_plots import confusion_figure
from memeval.reporting.figures import confusion_matrix, contrast
from memeval.reporting.plots import score_distributions, stored_mqs
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


def test_stored_mqs_says_once_why_auroc_is_undefined_and_lists_only_drawn_labels() -> None:
    """The committed run's oracle judge stores only substantive memories: no AUROC anywhere."""
    result = load_result(THREE_PASS)
    stored = pd.read_parquet(THREE_PASS / "stored_memories.parquet")
    fig, ax = plt.subplots()
    stored_mqs(result, stored, ax)
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["pass 1", "pass 2", "pass 3"]
    assert ax.get_xlabel().endswith("n/a: no low-value memories stored")
    legend = ax.get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["substantive"]
    assert _legend_has_data(ax)
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
    assert ax.get_xlabel().endswith("n/a in pass 2: not reported; "
                                    "pass 3: no low-value memories stored")
    assert _legend_has_data(ax)
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
