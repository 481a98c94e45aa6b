"""Ranking metrics by hand, and the retrieval replay end to end on the bundled sets."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.data.quality_sets import load_queries
from memeval.metrics.ranking import ndcg_at_k, rank_agreement, recall_at_k
from memeval.results.run_dir import read_table
from memeval.runner import run_experiment


def test_ndcg_by_hand() -> None:
    grades = {"a": 2, "b": 1}
    assert ndcg_at_k(["a", "b", "x"], grades, 3) == pytest.approx(1.0)
    swapped = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    assert ndcg_at_k(["b", "a"], grades, 3) == pytest.approx(swapped)
    assert ndcg_at_k(["x", "y"], grades, 2) == 0.0
    assert ndcg_at_k(["x", "a"], grades, 1) == 0.0  # cut at k


def test_recall_and_rank_agreement() -> None:
    assert recall_at_k(["a", "x", "b"], {"a", "b", "c"}, 2) == pytest.approx(1 / 3)
    assert rank_agreement({"a": 3, "b": 2, "c": 1}, {"a": 30, "b": 20, "c": 10}) == 1.0
    assert rank_agreement({"a": 3, "b": 2, "c": 1}, {"a": 1, "b": 2, "c": 3}) == -1.0
    assert rank_agreement({"a": 1}, {"a": 1}) is None


def test_the_query_set_points_at_substantive_entries() -> None:
    from memeval.data.labeled_jsonl import load_labeled_jsonl
    from memeval.paths import data_path

    queries, report = load_queries(data_path("retrieval/queries_v1.jsonl"))
    labels = {e.id: e.label for e in load_labeled_jsonl(data_path("labeled/write_gate_v1.jsonl"))
              .entries}
    assert len(queries) >= 60 and report.skipped == 0
    assert all(labels[e] == "substantive" for q in queries for e in q.relevant)
    assert all(2 in q.relevant.values() for q in queries)


def test_the_replay_compares_arms_on_held_out_queries(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=retrieval_replay", "experiment.store_passes=1",
                      "experiment.passes=2", "bootstrap=50", "plots=true")
    metrics = run_experiment(cfg, tmp_path / "run")
    retrieval = metrics["retrieval"]
    rows = read_table(tmp_path / "run", "retrieval_queries")
    evaluated = retrieval["queries"]["evaluation"]
    assert len(rows) == 2 * 2 * evaluated  # passes × arms × held-out queries
    assert retrieval["queries"]["usage"] + evaluated == retrieval["queries"]["labelled"]
    for p in metrics["passes"]:
        for arm in ("off", "on"):
            mine = rows[(rows["pass"] == p["pass"]) & (rows["arm"] == arm)]
            assert p[arm]["ndcg"] == pytest.approx(mine["ndcg"].mean())
            low, high = p[arm]["ndcg_ci95"]
            assert low <= p[arm]["ndcg"] <= high
        on = rows[(rows["pass"] == p["pass"]) & (rows["arm"] == "on")]["ndcg"].to_numpy()
        off = rows[(rows["pass"] == p["pass"]) & (rows["arm"] == "off")]["ndcg"].to_numpy()
        assert p["ndcg_on_minus_off"] == pytest.approx((on - off).mean())
        assert 0.0 <= p["on"]["gini_recall"] <= 1.0 and p["on"]["edges"] >= 0
    assert metrics["passes"][1]["on"]["rank_tau_vs_previous"] is not None
    assert rows["top_mqs"].notna().all()
    assert (tmp_path / "run" / "figures" / "retrieval.png").is_file()


def test_without_the_graph_both_arms_rank_alike(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=retrieval_replay", "experiment.store_passes=1",
                      "experiment.passes=1", "experiment.graph_weight=0", "bootstrap=20")
    metrics = run_experiment(cfg, tmp_path / "run")
    assert metrics["passes"][0]["ndcg_on_minus_off"] == 0.0
