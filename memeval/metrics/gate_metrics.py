"""Per-pass write-gate metrics: what was stored and dropped, where, and at what judge cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from memeval.backends.embedders.base import EmbeddingError
from memeval.backends.judges.base import NOT_SENT, JudgeError
from memeval.engine.gate.gate import Decision, GateConfig
from memeval.entry import LABELS
from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.separation import separation

PREJUDGE_STAGES = ("prefilter", "length", "content_score")
OUTCOMES = (*PREJUDGE_STAGES, "judge", "noise_check", "dedup", "stored")
ERROR_OUTCOME = "error"  # no decision: the system failed on the entry (`system_error` says why)


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _latency(decisions: Sequence[Decision]) -> dict[str, dict[str, float]]:
    samples: dict[str, list[float]] = {}
    for d in decisions:
        for stage, ms in d.latency_ms.items():
            samples.setdefault(stage, []).append(ms)
    return {stage: {"p50_ms": float(np.percentile(v, 50)), "p95_ms": float(np.percentile(v, 95)),
                    "n": len(v)} for stage, v in sorted(samples.items())}


def pass_metrics(decisions: Sequence[Decision], *, resamples: int, seed: int) -> dict[str, Any]:
    """Ground-truth metrics use human-labelled rows only; stage counts use every row."""
    total = len(decisions)
    stage_counts = Counter(d.outcome for d in decisions)
    human = [d for d in decisions if d.label is not None and d.label_source == "human"]
    per_label: dict[str, dict[str, Any]] = {}
    for label in LABELS:
        rows = [d for d in human if d.label == label]
        kept = sum(d.retained for d in rows)
        per_label[label] = {"n": len(rows), "retained": kept, "filtered": len(rows) - kept,
                            "retained_rate": _rate(kept, len(rows)),
                            "filtered_rate": _rate(len(rows) - kept, len(rows)),
                            "outcomes": dict(Counter(d.outcome for d in rows))}
    substantive = np.array([d.retained for d in human if d.label == "substantive"], dtype=float)
    low, high = bootstrap_ci(substantive, resamples, seed)
    prejudge = sum(stage_counts[s] for s in PREJUDGE_STAGES)
    # per-entry flags, resampled like recall's: a pre-judge rate from 187 turns is a draw too
    filtered = np.array([d.outcome in PREJUDGE_STAGES for d in decisions], dtype=float)
    noise = np.array([d.retained for d in human if d.label == "noise"], dtype=float)
    judge_calls = sum(d.judge_called for d in decisions)
    thresholds = [d.threshold for d in decisions if d.threshold is not None]
    return {
        "entries": total,
        "substantive_recall": float(substantive.mean()) if substantive.size else None,
        "substantive_recall_ci95": [low, high],
        "noise_stored": per_label["noise"]["retained"],
        "noise_stored_rate_ci95": list(bootstrap_ci(noise, resamples, seed)),
        "low_value_filtered_rate": per_label["low_value"]["filtered_rate"],
        "per_label": per_label,
        "stage_counts": {stage: stage_counts.get(stage, 0) for stage in OUTCOMES},
        "prejudge_filter_rate": _rate(prejudge, total),
        "prejudge_filter_rate_ci95": list(bootstrap_ci(filtered, resamples, seed)),
        "judge_calls": judge_calls,
        "judge_calls_judge_only": total,
        "judge_call_saving": _rate(total - judge_calls, total),
        "judge_errors": sum(bool(d.judge_error) for d in decisions),
        "judge_error_reasons": _reasons(d.judge_error for d in decisions),
        "judge_short_circuited": sum(str(d.judge_error).startswith(NOT_SENT) for d in decisions),
        "system_errors": sum(bool(d.system_error) for d in decisions),
        "system_error_reasons": _reasons(d.system_error for d in decisions),
        "system_short_circuited": sum(d.system_error.startswith(NOT_SENT) for d in decisions),
        "embedding_errors": sum(bool(d.embedding_error) for d in decisions),
        "embedding_error_reasons": _reasons(d.embedding_error for d in decisions),
        "audits": sum(d.audited for d in decisions),
        "audits_kept_by_judge": sum(d.audited and d.judge_skip is False for d in decisions),
        "judge_cached": sum(d.judge_cached for d in decisions),
        "judge_cost_usd": float(sum(d.judge_cost_usd for d in decisions)),
        "judge_tokens": {"input": sum(d.judge_tokens_in for d in decisions),
                         "output": sum(d.judge_tokens_out for d in decisions)},
        "content_score_threshold": {"first": thresholds[0], "last": thresholds[-1]}
        if thresholds else None,
        "content_score_separation": _content_separation(human, resamples, seed),
        "degraded": _degraded(decisions),
        "latency": _latency(decisions),
        "by_label_source": {
            str(source): {"n": len(rows), "prejudge_filter_rate": _rate(
                sum(d.outcome in PREJUDGE_STAGES for d in rows), len(rows)),
                "stage_counts": dict(Counter(d.outcome for d in rows)),
                # ground truth for human rows only; for others, agreement with their labeller
                "substantive_retained_rate": _substantive_retained(rows)}
            for source, rows in _group(decisions, lambda d: d.label_source).items()},
    }


def _reasons(reasons: Iterable[str | bool]) -> dict[str, int]:
    """Failure reasons by count, most frequent first ("" = no failure)."""
    return dict(Counter(str(r) for r in reasons if r).most_common())


def _degraded(decisions: Sequence[Decision]) -> dict[str, Any]:
    """Where a stage stood aside (e.g. the embedding server was down): entries the content-score
    gate passed unscored, by reason, and memories stored without a vector (not deduplicated)."""
    skipped = Counter(d.scorer_note.removeprefix("skipped: ").split(":")[0]
                      for d in decisions if d.scorer_note.startswith("skipped: "))
    return {"content_score_skipped": dict(skipped),
            "stored_without_embedding": sum(not d.embedded for d in decisions)}


def _content_separation(human: Sequence[Decision], resamples: int,
                        seed: int) -> dict[str, Any] | None:
    """How well the content score ranks findings above the rest, apart from where its cut lies:
    AUROC over the human-labelled entries it scored (None when it scored none). A scorer that
    only moves its cut changes the pre-judge rate and recall together, not this."""
    scored = [(d.score, d.label) for d in human if d.score is not None]
    if not scored:
        return None
    return separation([score for score, _ in scored], [label for _, label in scored],
                      resamples=resamples, seed=seed)


def _substantive_retained(rows: Sequence[Decision]) -> float | None:
    substantive = [d.retained for d in rows if d.label == "substantive"]
    return _rate(sum(substantive), len(substantive))


def _group(decisions: Sequence[Decision],
           key: Callable[[Decision], object]) -> dict[object, list[Decision]]:
    groups: dict[object, list[Decision]] = {}
    for d in decisions:
        groups.setdefault(key(d), []).append(d)
    return groups


def share_failed(failed: Sequence[str], total: int, limit: float, setting: str,
                  what: str, noun: str) -> str | None:
    """One line when more than `limit` of `total` failed, naming the commonest reason (a breaker
    short-circuit counts under the failure that opened it)."""
    if not total or len(failed) / total <= limit:
        return None
    reasons = Counter(r.removeprefix(NOT_SENT) for r in failed).most_common()
    top, count = reasons[0]
    more = (f" ({count} of them; {len(reasons) - 1} other reason(s) in metrics.json)"
            if len(reasons) > 1 else "")
    unsent = sum(r.startswith(NOT_SENT) for r in failed)
    breaker = f", {unsent} not sent once the circuit breaker opened" if unsent else ""
    return (f"{what}: {len(failed)} of {total} {noun} failed{breaker} ({len(failed) / total:.0%}, "
            f"more than {setting}={limit:g}): {top}{more}")


class SystemFailure(RuntimeError):
    """The memory system under test gave no decision for too many entries, or none at all, or
    answered outside the protocol (an outcome memeval does not know)."""


def check_outcome(decision: Decision, system: str) -> None:
    """Refuse a decision whose outcome is not one of OUTCOMES: left in, it would vanish from the
    stage table and the pre-judge rate, and the run would look fine."""
    if decision.outcome in OUTCOMES or (decision.outcome == ERROR_OUTCOME
                                        and decision.system_error):
        return
    raise SystemFailure(
        f"system '{system}' answered entry '{decision.entry_id}' (pass {decision.pass_no}) "
        f"with outcome {decision.outcome!r}, which is not one of {', '.join(OUTCOMES)} (or "
        f"{ERROR_OUTCOME!r} with a system_error): fix the system's mapping of its answers "
        f"(docs/protocol.md lists the outcomes)")


def run_failures(decisions: Sequence[Decision], gate: GateConfig,
                 max_system_error_share: float = 1.0
                 ) -> list[JudgeError | EmbeddingError | SystemFailure]:
    """Why a finished run must not count as a success: its judge, its embedder or the system
    under test (`system.max_error_share`) failed on more than the configured share of the work
    (every pass and phase together)."""
    failures: list[JudgeError | EmbeddingError | SystemFailure] = []
    if message := share_failed(
            [d.system_error for d in decisions if d.system_error], len(decisions),
            max_system_error_share, "system.max_error_share", "system", "entries"):
        failures.append(SystemFailure(message))
    judge = gate.stage_config("judge")
    called = [d for d in decisions if d.judge_called]
    if judge is not None and (message := share_failed(
            [str(d.judge_error) for d in called if d.judge_error], len(called),
            judge.max_error_share, "gate.stages.judge.max_error_share", "judge", "calls")):
        failures.append(JudgeError(message))
    # an entry is embedded once and replayed in every pass: counted once
    embedded = {d.entry_id: d.embedding_error for d in decisions}
    if message := share_failed(
            [error for error in embedded.values() if error], len(embedded),
            gate.max_embedding_failure_share, "gate.max_embedding_failure_share", "embedding",
            "entries"):
        failures.append(EmbeddingError(message))
    return failures
