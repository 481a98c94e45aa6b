"""How a run reports failed services: reasons per pass, the printed table and footer, and the
shares past which a finished run fails."""

from __future__ import annotations

from typing import Any

import pytest

from memeval.backends.embedders.base import EmbeddingError
from memeval.backends.judges.base import NOT_SENT, JudgeError
from memeval.engine.gate.gate import Decision, GateConfig
from memeval.metrics.gate_metrics import pass_metrics, run_failures
from memeval.registry import to_dataclass
from memeval.reporting.table import WIDTH, pass_table, threshold_footer
from memeval.results.result import PassMetrics
from tests.engine.fakes import gate_node
from tests.metrics.test_gate_metrics import d
from tests.metrics.test_table import cells, table_under

REFUSED = ("HTTP 401 Unauthorized from https://api.anthropic.com/v1/messages: check the key in "
           "ANTHROPIC_API_KEY")
DOWN = "ConnectError after 4 attempt(s) from http://127.0.0.1:8080/v1/embeddings: is the server " \
       "running? check embedder.base_url"


def judged(n_ok: int, errors: list[str]) -> list[Decision]:
    rows = [d(f"ok{i}", "substantive", "stored", judge_called=True, judge_skip=False)
            for i in range(n_ok)]
    return rows + [d(f"err{i}", "noise", "stored", judge_called=True, judge_error=reason)
                   for i, reason in enumerate(errors)]


def gate(**changes: Any) -> GateConfig:
    node = gate_node()
    node["stages"]["judge"].update(changes.pop("judge", {}))
    return to_dataclass(GateConfig, {**node, **changes}, "gate")


def summary(decisions: list[Decision], **extra: Any) -> PassMetrics:
    return PassMetrics.from_dict({"pass": 1, "rejection_store_size": 0,
                                  **pass_metrics(decisions, resamples=20, seed=0), **extra})


def test_pass_metrics_count_reasons_and_breaker_short_circuits() -> None:
    rows = judged(2, [REFUSED] * 5 + [NOT_SENT + REFUSED] * 3)
    rows[0].embedding_error = DOWN
    metrics = pass_metrics(rows, resamples=20, seed=0)
    assert metrics["judge_errors"] == 8 and metrics["judge_short_circuited"] == 3
    assert metrics["judge_error_reasons"] == {REFUSED: 5, NOT_SENT + REFUSED: 3}
    assert metrics["embedding_errors"] == 1
    assert metrics["embedding_error_reasons"] == {DOWN: 1}


def test_the_table_shows_error_counts_and_the_first_reasons() -> None:
    reasons = [REFUSED] * 5 + [NOT_SENT + REFUSED] * 3 + ["a", "b", "c"]
    printed = pass_table([summary(judged(1, reasons))])
    assert cells(table_under(printed, "write gate: outcomes"))["judge err."] == "11"
    assert max(len(line) for line in printed.splitlines()) <= WIDTH
    lines = printed.split("\n\n")[2].replace("\n    ", " ").splitlines()  # reasons unwrapped
    assert lines[0] == ("judge errors (calls): pass 1: 11 of 12; 3 not sent, the circuit breaker "
                        "being open")
    assert lines[1] == f"  5x {REFUSED}" and lines[2] == f"  3x {NOT_SENT}{REFUSED}"
    assert len(lines) == 5 and lines[4] == "  … 2 more reason(s) in metrics.json"


def test_a_healthy_run_prints_no_failure_lines() -> None:
    assert len(pass_table([summary(judged(3, []))]).split("\n\n")) == 2  # the two tables


def test_the_footer_gives_the_rule_only_when_a_threshold_was_set() -> None:
    rule = "cut = 0.01 quantile of the judge's acceptances"
    scored = summary(judged(2, []), content_score_threshold={"first": 0.2, "last": 0.3})
    assert threshold_footer([scored], rule) == f"content-score threshold: {rule}"

    skipped = [d("s1", "substantive", "stored", scorer_note="skipped: embedding failed: down"),
               d("s2", "substantive", "stored", scorer_note="skipped: not built yet")]
    footer = threshold_footer([summary(skipped)], rule)
    assert rule not in footer and max(len(line) for line in footer.splitlines()) <= WIDTH
    assert footer.replace("\n  ", " ") == (
        "content-score threshold: none; the stage was skipped for the whole run and passed every "
        "entry it saw to the judge unscored (embedding failed: 1, not built yet: 1)")
    stages = table_under(pass_table([summary(skipped)]), "write gate: where the entries ended")
    assert cells(stages)["threshold"] == "skipped"

    unscored = threshold_footer([summary(judged(2, []))], rule)
    assert rule not in unscored and "scored no entry" in unscored


def test_a_run_fails_past_the_judge_error_share_naming_the_cause() -> None:
    # 1 of 20 calls (5%) is allowed; 2 of 20 is not
    assert run_failures(judged(19, [REFUSED]), gate()) == []
    (failure,) = run_failures(judged(18, [REFUSED, NOT_SENT + REFUSED]), gate())
    assert isinstance(failure, JudgeError)
    assert str(failure) == (
        "judge: 2 of 20 calls failed, 1 not sent once the circuit breaker opened (10%, more than "
        f"gate.stages.judge.max_error_share=0.05): {REFUSED}")
    assert run_failures(judged(0, [REFUSED] * 3), gate(judge={"max_error_share": 1.0})) == []
    without_judge = gate(order=["prefilter", "length"],
                         rejection_store={**gate_node()["rejection_store"], "feed_stages": []})
    assert run_failures(judged(0, [REFUSED] * 3), without_judge) == []


def test_a_run_fails_past_the_embedding_failure_share_counting_entries_once() -> None:
    rows = [d(f"e{i}", "substantive", "stored", embedding_error=DOWN if i < 2 else "")
            for i in range(10)]
    # the same 10 entries in three passes: 2 of 10 entries, not 6 of 30
    (failure,) = run_failures(rows * 3, gate())
    assert isinstance(failure, EmbeddingError)
    assert str(failure).startswith("embedding: 2 of 10 entries failed (20%, more than "
                                   "gate.max_embedding_failure_share=0.05): ConnectError")
    assert run_failures(rows, gate(max_embedding_failure_share=0.2)) == []


@pytest.mark.bad_input
@pytest.mark.parametrize("changes", [{"judge": {"max_error_share": 1.5}},
                                     {"max_embedding_failure_share": -0.1}])
def test_shares_outside_0_1_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be in \\[0, 1\\]"):
        gate(**changes)
