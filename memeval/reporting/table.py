"""The per-pass table printed at the end of a run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from memeval.results.result import ComponentFailures, LabelQuality, PassMetrics, Separation

REASONS_SHOWN = 3  # distinct failure reasons printed under the table; metrics.json has them all
NO_FAILURES = ComponentFailures(0, {}, 0)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def ci_suffix(bounds: Sequence[float | None] | None) -> str:
    if not bounds or bounds[0] is None or bounds[1] is None:
        return ""
    return f" [{100 * bounds[0]:.0f}–{100 * bounds[1]:.0f}]"


def _other_sources(passes: Sequence[PassMetrics]) -> list[str]:
    """Label sources besides `human` that have substantive rows (e.g. a heuristic labeller)."""
    return sorted({source for p in passes for source, rate in p.recall_by_label_source.items()
                   if source != "human" and rate is not None})


def pass_table(passes: Sequence[PassMetrics]) -> str:
    """One row per pass. Recall is against human labels; rows labelled otherwise get a column of
    their own (agreement with that labeller, not ground truth)."""
    others = _other_sources(passes)
    header = ("pass", "subst. recall [95% CI]", *(f"kept ({s})" for s in others),
              "noise stored", "low filtered", "pre-judge",
              "judge calls", "judge err.", "saved", "prefilter", "length", "content", "judge SKIP",
              "dedup", "stored", "threshold", "rej. store")
    rows = []
    for p in passes:
        counts = p.stage_counts
        threshold = p.content_score_threshold
        judge = p.failures.get("judge")
        rows.append((
            p.label,
            _pct(p.substantive_recall) + ci_suffix(p.substantive_recall_ci95),
            *(_pct(p.recall_by_label_source.get(s)) for s in others),
            str(p.noise_stored), _pct(p.low_value_filtered_rate),
            _pct(p.prejudge_filter_rate) + ci_suffix(p.prejudge_filter_rate_ci95),
            str(p.judge_calls), str(judge.errors if judge else 0),
            _pct(p.judge_call_saving), str(counts["prefilter"]), str(counts["length"]),
            str(counts["content_score"]), str(counts["judge"]), str(counts["dedup"]),
            str(counts["stored"]),
            f"{threshold.last:.3f}" if threshold else
            "skipped" if p.content_score_skipped else "off",
            "—" if p.rejection_store_size is None  # a system may keep no rejection store
            else str(p.rejection_store_size),
        ))
    failures = [block for block in (
        _failures(passes, "system", lambda p: p.entries, "entries"),
        _failures(passes, "judge", lambda p: p.judge_calls, "calls"),
        _failures(passes, "embedding", lambda p: p.entries, "entries")) if block]
    stored = stored_mqs_table(passes)
    models = stored_models_table(passes)
    return (aligned(header, rows) + "".join(f"\n{block}" for block in failures)
            + (f"\n\nMQS of stored memories\n{stored}" if stored else "")
            + (f"\n\nLearned conflicts and trust score of stored memories (fitted on the "
               f"development sets)\n{models}" if models else ""))


def _failures(passes: Sequence[PassMetrics], what: str,
              total: Callable[[PassMetrics], int | None], noun: str) -> str:
    """Failure counts per pass (`what`'s errors of `total`) and the commonest reasons; empty when
    nothing failed."""
    failed = [p.failures.get(what, NO_FAILURES) for p in passes]
    if not any(f.errors for f in failed):
        return ""
    counts = ", ".join(f"pass {p.label}: {f.errors} of {total(p)}"
                       for p, f in zip(passes, failed, strict=True))
    unsent = sum(f.short_circuited for f in failed)
    reasons: Counter[str] = Counter()
    for f in failed:
        reasons.update(f.reasons)
    lines = [f"{what} errors ({noun}): {counts}"
             + (f"; {unsent} not sent, the circuit breaker being open" if unsent else "")]
    lines += [f"  {n}x {reason}" for reason, n in reasons.most_common(REASONS_SHOWN)]
    if len(reasons) > REASONS_SHOWN:
        lines.append(f"  … {len(reasons) - REASONS_SHOWN} more reason(s) in metrics.json")
    return "\n".join(lines)


def threshold_footer(passes: Sequence[PassMetrics], rule: str) -> str:
    """The content-score threshold's rule when the stage set one; otherwise what happened."""
    if not any(p.gated for p in passes) or any(p.content_score_threshold for p in passes):
        return f"content-score threshold: {rule}"
    skipped: Counter[str] = Counter()
    for p in passes:
        skipped.update(p.content_score_skipped)
    if not skipped:
        return ("content-score threshold: none; the content-score stage scored no entry (not in "
                "gate.order, or no entry reached it)")
    why = ", ".join(f"{reason}: {n}" for reason, n in skipped.most_common())
    return (f"content-score threshold: none; the stage was skipped for the whole run and passed "
            f"every entry it saw to the judge unscored ({why})")


def _auroc(separation: Separation) -> str:
    value, bounds = separation.auroc, separation.auroc_ci95
    if value is None:
        return "—"
    return f"{value:.3f}" + (f" [{bounds[0]:.2f}–{bounds[1]:.2f}]" if bounds[0] is not None else "")


def stored_mqs_table(passes: Sequence[PassMetrics]) -> str:
    """Per pass: how well MQS separates stored substantive memories from stored low-value ones;
    empty when no pass scored its stored memories."""
    scored = [(p, p.stored_mqs) for p in passes if p.stored_mqs is not None]
    if not scored:
        return ""
    labels = ("substantive", "low_value", "noise")
    header = ("pass", "stored", "AUROC subst. vs low [95% CI]", "confidence only",
              *(f"mean MQS {label}" for label in labels), "hedged", "conflicted",
              "FILTER/FLAG/PASS subst.", "FILTER/FLAG/PASS low")
    rows = []
    for p, quality in scored:
        by_label = quality.by_label
        every = list(by_label.values())
        total = max(quality.memories, 1)
        actions = {label: _actions(by_label, labels) for label, labels in (
            ("substantive", ("substantive",)), ("low", ("low_value", "noise")))}
        rows.append((
            p.label, str(quality.memories),
            _auroc(quality.mqs), _auroc(quality.confidence_only),
            *(f"{by_label[label].mean_mqs:.1f}" if label in by_label else "—"
              for label in labels),
            _pct(sum(s.hedged_share * s.memories for s in every) / total),
            _pct(sum(s.conflicted_share * s.memories for s in every) / total),
            actions["substantive"], actions["low"],
        ))
    return aligned(header, rows)


def stored_models_table(passes: Sequence[PassMetrics]) -> str:
    """Per pass: the learned detector's conflicts among stored memories and the trust score's
    spread; empty when no pass scored them."""
    scored = [(p, p.stored_models) for p in passes if p.stored_models is not None]
    if not scored:
        return ""
    kinds = sorted({kind for _, q in scored for kind in q.conflicts_by_kind})
    header = ("pass", "stored", "pairs checked", "too long", *kinds, "in a conflict [95% CI]",
              "superseded",
              "trust mean [95% CI]", "trust p10/p50/p90", "AUROC trust subst. vs low")
    rows = []
    for p, quality in scored:
        trust = quality.trust
        mean = trust.get("mean")
        low, high = trust.get("mean_ci95") or (None, None)
        rows.append((
            p.label, str(quality.memories), str(quality.candidate_pairs),
            str(quality.pairs_too_long),
            *(str(quality.conflicts_by_kind.get(kind, 0)) for kind in kinds),
            _pct(quality.in_conflict_share) + ci_suffix(quality.in_conflict_share_ci95),
            str(quality.superseded),
            "—" if mean is None else f"{mean:.1f}" + (
                f" [{low:.1f}–{high:.1f}]" if low is not None and high is not None else ""),
            "/".join("—" if trust.get(q) is None else f"{trust[q]:.0f}"
                     for q in ("p10", "p50", "p90")),
            _auroc(quality.trust_separation)))
    return aligned(header, rows)


def _actions(by_label: Mapping[str, LabelQuality], labels: Sequence[str]) -> str:
    """FILTER/FLAG/PASS counts of the confidence policy over the given labels' memories."""
    return "/".join(str(sum(by_label[label].gate_actions.get(action, 0)
                            for label in labels if label in by_label))
                    for action in ("FILTER", "FLAG", "PASS"))


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, two spaces apart: the plain-text tables every command prints."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)
