"""The per-pass tables printed at the end of a run, every line of them at most WIDTH columns, as
typed blocks: the terminal prints them and the report renders the same blocks, so the two cannot
show different numbers."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from memeval.reporting.outputs import Section
from memeval.results.result import ComponentFailures, LabelQuality, PassMetrics, Separation

REASONS_SHOWN = 3  # distinct failure reasons printed under the table; metrics.json has them all
NO_FAILURES = ComponentFailures(0, {}, 0)
WIDTH = 100  # columns of the narrowest terminal the printed results must fit


@dataclass(frozen=True)
class Table:
    """A titled table of printed cells, its abbreviations explained below it."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    legend: str = ""

    def text(self) -> str:
        return titled(self.title, aligned(self.header, self.rows), self.legend)

    def section(self) -> Section:
        """The table as a report shows it: the cells as printed, the legend above them."""
        import pandas as pd  # loaded for a report only: the terminal prints without it

        return Section(self.title, self.legend,
                       pd.DataFrame(list(self.rows), columns=list(self.header)))


@dataclass(frozen=True)
class Note:
    """Lines without a table, each wrapped at WIDTH columns as printed and whole in a report;
    the title heads them in a report only."""

    title: str
    lines: str

    def text(self) -> str:
        return wrapped(self.lines)

    def section(self) -> Section:
        return Section(self.title, self.lines)


Block = Table | Note


def printed(blocks: Sequence[Block]) -> str:
    """Blocks as the terminal shows them, a blank line between two."""
    return "\n\n".join(block.text() for block in blocks)


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def ci_suffix(bounds: Sequence[float | None] | None) -> str:
    if not bounds or bounds[0] is None or bounds[1] is None:
        return ""
    return f" [{100 * bounds[0]:.0f}–{100 * bounds[1]:.0f}]"


def _other_sources(passes: Sequence[PassMetrics]) -> list[str]:
    """Label sources besides `human` that have substantive rows (e.g. a heuristic labeller)."""
    return sorted({source for p in passes for source, rate in p.recall_by_label_source.items()
                   if source != "human" and rate is not None})


OUTCOMES = ("pass", "recall [95% CI]", "noise", "low filt.", "pre-judge", "judge calls",
            "judge err.", "saved")
OUTCOMES_LEGEND = ("recall: human-labelled substantive entries kept (stored or deduplicated); "
                   "noise: noise entries stored; low filt.: low-value entries filtered; pre-judge: "
                   "entries filtered before the judge; judge calls: entries sent to the judge; "
                   "judge err.: calls that gave no verdict; saved: judge calls saved, of all "
                   "entries; [lo–hi]: 95% CI")
STAGES = ("pass", "prefilter", "length", "content", "judge SKIP", "dedup", "stored", "threshold",
          "rej. store")
STAGES_LEGEND = ("entries ended at each stage: rejected by the prefilter, the length cut, the "
                 "content score or a judge SKIP, deduplicated or stored; threshold: the "
                 "content-score cut at the pass's end; rej. store: entries in the rejection store")


def pass_table(passes: Sequence[PassMetrics]) -> str:
    """The per-pass blocks as printed."""
    return printed(pass_blocks(passes))


def pass_blocks(passes: Sequence[PassMetrics]) -> list[Block]:
    """One row per pass, in two tables narrow enough for a terminal: what the gate achieved, then
    where the entries ended. Recall is against human labels; rows labelled otherwise get a table
    of their own (agreement with that labeller, not ground truth)."""
    outcomes, stages = [], []
    for p in passes:
        counts = p.stage_counts
        threshold = p.content_score_threshold
        judge = p.failures.get("judge")
        outcomes.append((
            p.label,
            pct(p.substantive_recall) + ci_suffix(p.substantive_recall_ci95),
            str(p.noise_stored), pct(p.low_value_filtered_rate),
            pct(p.prejudge_filter_rate) + ci_suffix(p.prejudge_filter_rate_ci95),
            str(p.judge_calls), str(judge.errors if judge else 0), pct(p.judge_call_saving)))
        stages.append((
            p.label, str(counts["prefilter"]), str(counts["length"]),
            str(counts["content_score"]), str(counts["judge"]), str(counts["dedup"]),
            str(counts["stored"]),
            f"{threshold.last:.3f}" if threshold else
            "skipped" if p.content_score_skipped else "off",
            "—" if p.rejection_store_size is None  # a system may keep no rejection store
            else str(p.rejection_store_size)))
    blocks: list[Block] = [
        Table("write gate: outcomes", OUTCOMES, tuple(outcomes), OUTCOMES_LEGEND),
        Table("write gate: where the entries ended", STAGES, tuple(stages), STAGES_LEGEND)]
    others = _other_sources(passes)
    if others:
        blocks.append(Table(
            "substantive entries kept, by other label sources (agreement with that labeller, "
            "not ground truth)", ("pass", *(f"kept ({s})" for s in others)),
            tuple((p.label, *(pct(p.recall_by_label_source.get(s)) for s in others))
                  for p in passes)))
    failures = [block for block in (
        _failures(passes, "system", lambda p: p.entries, "entries"),
        _failures(passes, "judge", lambda p: p.judge_calls, "calls"),
        _failures(passes, "embedding", lambda p: p.entries, "entries")) if block]
    if failures:
        blocks.append(Note("Failures", "\n".join(failures)))
    return [*blocks, *stored_mqs_tables(passes), *stored_models_tables(passes)]


def headline(passes: Sequence[PassMetrics]) -> str:
    """The last gated pass's finding in one sentence, its cells as the outcomes table prints
    them; empty when no pass went through a write gate."""
    gated = [p for p in passes if p.gated]
    if not gated:
        return ""
    last = gated[-1]
    return (f"Pass {last.label} kept "
            f"{pct(last.substantive_recall) + ci_suffix(last.substantive_recall_ci95)} of the "
            f"human-labelled substantive entries, stored {last.noise_stored} noise entries and "
            f"filtered "
            f"{pct(last.prejudge_filter_rate) + ci_suffix(last.prejudge_filter_rate_ci95)} of "
            f"all entries before the judge (95% CIs in brackets).")


def titled(title: str, table: str, legend: str = "") -> str:
    """A table under its title, its abbreviations explained below it."""
    return f"{wrapped(title)}\n{table}" + (f"\n{wrapped(legend)}" if legend else "")


def wrapped(text: str, indent: str = "") -> str:
    """Each line of `text` wrapped at WIDTH columns, continuations indented two more spaces than
    `indent`: a sentence stays readable in a terminal instead of running off its edge. Words are
    never broken, so a path or URL stays whole."""
    return "\n".join(textwrap.fill(line, WIDTH, initial_indent=indent,
                                   subsequent_indent=indent + "  ", break_long_words=False,
                                   break_on_hyphens=False)
                     for line in text.splitlines())


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
    lines = [wrapped(f"{what} errors ({noun}): {counts}"
                     + (f"; {unsent} not sent, the circuit breaker being open" if unsent else ""))]
    lines += [wrapped(f"{n}x {reason}", indent="  ")
              for reason, n in reasons.most_common(REASONS_SHOWN)]
    if len(reasons) > REASONS_SHOWN:
        lines.append(f"  … {len(reasons) - REASONS_SHOWN} more reason(s) in metrics.json")
    return "\n".join(lines)


def threshold_footer(passes: Sequence[PassMetrics], rule: str) -> str:
    """The content-score threshold's rule when the stage set one; otherwise what happened. Wrapped
    at WIDTH columns, as it is printed."""
    return wrapped(f"content-score threshold: {threshold_state(passes, rule)}")


def threshold_state(passes: Sequence[PassMetrics], rule: str) -> str:
    """The threshold's rule, or why the run had none."""
    if not any(p.gated for p in passes) or any(p.content_score_threshold for p in passes):
        return rule
    skipped: Counter[str] = Counter()
    for p in passes:
        skipped.update(p.content_score_skipped)
    if not skipped:
        return ("none; the content-score stage scored no entry (not in gate.order, or no entry "
                "reached it)")
    why = ", ".join(f"{reason}: {n}" for reason, n in skipped.most_common())
    return (f"none; the stage was skipped for the whole run and passed every entry it saw to the "
            f"judge unscored ({why})")


def _auroc(separation: Separation) -> str:
    value, bounds = separation.auroc, separation.auroc_ci95
    if value is None:
        return "—"
    return f"{value:.3f}" + (f" [{bounds[0]:.2f}–{bounds[1]:.2f}]" if bounds[0] is not None else "")


MQS_LEGEND = ("AUROC: how well MQS separates the stored substantive memories from the stored "
              "low-value ones (confidence only: confidence alone); mean …: mean MQS of the "
              "stored memories so labelled (low: low_value); [lo–hi]: 95% CI")
POLICY_LEGEND = ("hedged, conflicted: shares of the stored memories; FILTER/FLAG/PASS: the "
                 "confidence policy's actions on the substantive ones and on the rest (low_value "
                 "and noise)")
CONFLICTS_LEGEND = ("pairs: candidate pairs checked; too long: those with a memory longer than "
                    "the detector's range; each kind: the conflicts of that kind found; in a "
                    "conflict: share of the stored memories; [lo–hi]: 95% CI")


def stored_mqs_tables(passes: Sequence[PassMetrics]) -> list[Table]:
    """Per pass: how well MQS separates stored substantive memories from stored low-value ones,
    then what the confidence policy made of them; none when no pass scored its stored memories."""
    scored = [(p, p.stored_mqs) for p in passes if p.stored_mqs is not None]
    if not scored:
        return []
    labels = ("substantive", "low_value", "noise")
    separation, policy = [], []
    for p, quality in scored:
        by_label = quality.by_label
        every = list(by_label.values())
        total = max(quality.memories, 1)
        separation.append((
            p.label, str(quality.memories),
            _auroc(quality.mqs), _auroc(quality.confidence_only),
            *(f"{by_label[label].mean_mqs:.1f}" if label in by_label else "—"
              for label in labels)))
        policy.append((
            p.label,
            pct(sum(s.hedged_share * s.memories for s in every) / total),
            pct(sum(s.conflicted_share * s.memories for s in every) / total),
            _actions(by_label, ("substantive",)), _actions(by_label, ("low_value", "noise"))))
    return [Table("MQS of stored memories",
                  ("pass", "stored", "AUROC [95% CI]", "confidence only", "mean subst.",
                   "mean low", "mean noise"), tuple(separation), MQS_LEGEND),
            Table("Confidence policy on stored memories",
                  ("pass", "hedged", "conflicted", "FILTER/FLAG/PASS subst.",
                   "FILTER/FLAG/PASS low"), tuple(policy), POLICY_LEGEND)]


def stored_models_tables(passes: Sequence[PassMetrics]) -> list[Table]:
    """Per pass: the learned detector's conflicts among stored memories, then the trust score's
    spread; none when no pass scored them."""
    scored = [(p, p.stored_models) for p in passes if p.stored_models is not None]
    if not scored:
        return []
    kinds = sorted({kind for _, q in scored for kind in q.conflicts_by_kind})
    conflicts, trust_rows = [], []
    for p, quality in scored:
        trust = quality.trust
        mean = trust.get("mean")
        low, high = trust.get("mean_ci95") or (None, None)
        conflicts.append((
            p.label, str(quality.candidate_pairs), str(quality.pairs_too_long),
            *(str(quality.conflicts_by_kind.get(kind, 0)) for kind in kinds),
            pct(quality.in_conflict_share) + ci_suffix(quality.in_conflict_share_ci95),
            str(quality.superseded)))
        trust_rows.append((
            p.label, str(quality.memories),
            "—" if mean is None else f"{mean:.1f}" + (
                f" [{low:.1f}–{high:.1f}]" if low is not None and high is not None else ""),
            "/".join("—" if trust.get(q) is None else f"{trust[q]:.0f}"
                     for q in ("p10", "p50", "p90")),
            _auroc(quality.trust_separation)))
    return [Table("Learned conflicts among stored memories (detector fitted on the development "
                  "sets)", ("pass", "pairs", "too long", *kinds, "in a conflict [95% CI]",
                            "superseded"), tuple(conflicts), CONFLICTS_LEGEND),
            Table("Trust score of stored memories (fitted on the development sets)",
                  ("pass", "stored", "trust mean [95% CI]", "trust p10/p50/p90",
                   "AUROC trust subst. vs low"), tuple(trust_rows))]


def _actions(by_label: Mapping[str, LabelQuality], labels: Sequence[str]) -> str:
    """FILTER/FLAG/PASS counts of the confidence policy over the given labels' memories."""
    return "/".join(str(sum(by_label[label].gate_actions.get(action, 0)
                            for label in labels if label in by_label))
                    for action in ("FILTER", "FLAG", "PASS"))


def short_key(key: str, keys: Sequence[str]) -> str:
    """A setting's dotted key by its last part when no other of `keys` ends the same way."""
    last = key.rpartition(".")[2]
    return last if sum(k.rpartition(".")[2] == last for k in keys) == 1 else key


def clipped(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, its middle cut: a path keeps its root and its end."""
    if len(text) <= limit:
        return text
    tail = (limit - 1) // 2
    return f"{text[:limit - 1 - tail]}…{text[len(text) - tail:]}"


def column_blocks(header: Sequence[str], rows: Sequence[Sequence[str]], keep: int = 1) -> str:
    """`aligned` tables at most WIDTH columns wide: the columns that do not fit go on to the next
    table, each table starting with the first `keep` columns, so every row stays named."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    blocks: list[list[int]] = []
    for column in range(keep, len(header)):
        block = blocks[-1] if blocks else []
        if not block or sum(widths[i] + 2 for i in [*block, column]) - 2 > WIDTH:
            block = list(range(keep))
            blocks.append(block)
        block.append(column)
    return "\n\n".join(aligned([header[i] for i in block], [[r[i] for i in block] for r in rows])
                       for block in blocks or [list(range(len(header)))])


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, two spaces apart: the plain-text tables every command prints."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)
