"""Per-pass metrics from hand-built decisions: every number below is counted by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest

from memeval.engine.gate.gate import Decision
from memeval.metrics.gate_metrics import OUTCOMES, pass_metrics


def d(entry_id: str, label: str | None, outcome: str, *, source: str | None = "human",
      **fields: Any) -> Decision:
    retained = outcome in ("stored", "dedup")
    return Decision(1, "eval", entry_id, label, source, 100, outcome, retained, **fields)


def decisions() -> list[Decision]:
    return [
        d("s1", "substantive", "stored", judge_called=True, judge_skip=False, threshold=0.25,
          score=0.5, judge_cost_usd=0.01, judge_tokens_in=100, judge_tokens_out=5,
          latency_ms={"judge": 10.0, "write": 1.0}),
        d("s2", "substantive", "dedup", judge_called=True, judge_skip=False, judge_cached=True,
          latency_ms={"judge": 30.0}),
        d("s3", "substantive", "content_score", score=0.1, threshold=0.3),
        d("s4", "substantive", "judge", judge_called=True, judge_skip=True,
          judge_cost_usd=0.02, judge_tokens_in=200, judge_tokens_out=1),
        d("n1", "noise", "prefilter"),
        d("n2", "noise", "length"),
        d("n3", "noise", "stored", judge_called=True, judge_error=True),
        d("l1", "low_value", "judge", judge_called=True, judge_skip=True),
        d("l2", "low_value", "stored", judge_called=True, judge_skip=False, audited=True),
        d("l3", "low_value", "content_score", audited=False),
        # not ground truth: an LLM-assigned label and an unlabelled row
        d("x1", "substantive", "content_score", source="llm"),
        d("x2", "noise", "stored", source="llm", judge_called=True, judge_skip=False),
        d("u1", None, "noise_check", source=None, judge_called=True, judge_skip=False),
    ]


@pytest.fixture(scope="module")
def metrics() -> dict[str, Any]:
    return pass_metrics(decisions(), resamples=500, seed=0)


def test_recall_uses_human_labels_only(metrics: dict[str, Any]) -> None:
    assert metrics["entries"] == 13
    assert metrics["substantive_recall"] == pytest.approx(2 / 4)  # s1, s2 of s1–s4; x1 ignored
    substantive = metrics["per_label"]["substantive"]
    assert (substantive["n"], substantive["retained"], substantive["filtered"]) == (4, 2, 2)
    assert substantive["outcomes"] == {"stored": 1, "dedup": 1, "content_score": 1, "judge": 1}


def test_noise_stored_and_low_value_filtered(metrics: dict[str, Any]) -> None:
    assert metrics["noise_stored"] == 1  # n3 only: x2 is not human-labelled
    assert metrics["per_label"]["noise"]["n"] == 3
    assert metrics["low_value_filtered_rate"] == pytest.approx(2 / 3)
    assert metrics["per_label"]["low_value"]["retained_rate"] == pytest.approx(1 / 3)


def test_stage_counts_use_every_row(metrics: dict[str, Any]) -> None:
    assert metrics["stage_counts"] == {
        "prefilter": 1, "length": 1, "content_score": 3, "judge": 2, "noise_check": 1,
        "dedup": 1, "stored": 4,
    }
    assert list(metrics["stage_counts"]) == list(OUTCOMES)
    assert sum(metrics["stage_counts"].values()) == 13


def test_prejudge_rate_and_judge_saving(metrics: dict[str, Any]) -> None:
    assert metrics["prejudge_filter_rate"] == pytest.approx(5 / 13)  # n1, n2, s3, l3, x1
    assert metrics["judge_calls"] == 8
    assert metrics["judge_calls_judge_only"] == 13
    assert metrics["judge_call_saving"] == pytest.approx(5 / 13)


def test_judge_accounting(metrics: dict[str, Any]) -> None:
    assert metrics["judge_errors"] == 1
    assert metrics["audits"] == 1
    assert metrics["audits_kept_by_judge"] == 1
    assert metrics["judge_cached"] == 1
    assert metrics["judge_cost_usd"] == pytest.approx(0.03)
    assert metrics["judge_tokens"] == {"input": 300, "output": 6}
    assert metrics["content_score_threshold"] == {"first": 0.25, "last": 0.3}


def test_latency_percentiles(metrics: dict[str, Any]) -> None:
    assert metrics["latency"]["judge"] == {"p50_ms": 20.0, "p95_ms": pytest.approx(29.0), "n": 2}
    assert metrics["latency"]["write"]["n"] == 1


def test_recall_ci_contains_the_mean_and_is_seeded() -> None:
    rows = [d(f"s{i}", "substantive", "stored" if i % 4 else "judge") for i in range(80)]
    first = pass_metrics(rows, resamples=500, seed=1)
    low, high = first["substantive_recall_ci95"]
    assert first["substantive_recall"] == pytest.approx(0.75)
    assert low < 0.75 < high
    assert pass_metrics(rows, resamples=500, seed=1)["substantive_recall_ci95"] == [low, high]
    assert pass_metrics(rows, resamples=500, seed=2)["substantive_recall_ci95"] != [low, high]


def test_non_human_rows_never_change_ground_truth() -> None:
    base = pass_metrics(decisions(), resamples=200, seed=0)
    extra = [*decisions(), *(d(f"y{i}", "substantive", "judge", source="classifier")
                             for i in range(20))]
    more = pass_metrics(extra, resamples=200, seed=0)
    for key in ("substantive_recall", "substantive_recall_ci95", "noise_stored",
                "low_value_filtered_rate", "per_label"):
        assert more[key] == base[key], key
    assert more["stage_counts"]["judge"] == base["stage_counts"]["judge"] + 20


def test_retention_of_substantive_rows_per_label_source(metrics: dict[str, Any]) -> None:
    by_source = metrics["by_label_source"]
    assert by_source["human"]["substantive_retained_rate"] == pytest.approx(2 / 4)
    assert by_source["llm"]["substantive_retained_rate"] == 0.0  # x1 filtered by content score
    assert by_source["None"]["substantive_retained_rate"] is None  # no substantive row
    assert by_source["llm"]["n"] == 2 and by_source["llm"]["stage_counts"] == {
        "content_score": 1, "stored": 1}


def test_empty_pass() -> None:
    metrics = pass_metrics([], resamples=100, seed=0)
    assert metrics["entries"] == 0
    assert metrics["substantive_recall"] is None
    assert all(math.isnan(v) for v in metrics["substantive_recall_ci95"])
    assert metrics["prejudge_filter_rate"] is None and metrics["judge_call_saving"] is None
    assert metrics["content_score_threshold"] is None
    assert metrics["per_label"]["noise"]["retained_rate"] is None


def test_content_score_separation_ranks_the_scored_human_rows() -> None:
    rows = [d("s1", "substantive", "stored", score=0.9),
            d("s2", "substantive", "stored", score=0.2),
            d("l1", "low_value", "judge", score=0.5), d("n1", "noise", "content_score", score=0.1),
            d("x1", "noise", "content_score", source="llm", score=0.95),  # not ground truth
            d("n2", "noise", "prefilter")]  # never scored
    found = pass_metrics(rows, resamples=200, seed=0)["content_score_separation"]
    # findings above the rest in 3 of the 4 (finding, other) pairs: 0.9 > 0.5, 0.1; 0.2 > 0.1
    assert found["auroc"] == pytest.approx(3 / 4)
    assert (found["substantive"], found["low_value"]) == (2, 2)


def test_content_score_separation_needs_both_classes_scored(metrics: dict[str, Any]) -> None:
    found = metrics["content_score_separation"]  # s1 and s3 scored: findings only
    assert found["auroc"] is None and found["substantive"] == 2 and found["low_value"] == 0
    unscored = pass_metrics([d("n1", "noise", "prefilter")], resamples=10, seed=0)
    assert unscored["content_score_separation"] is None
