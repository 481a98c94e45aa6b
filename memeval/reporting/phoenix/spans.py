"""A run's gate decisions as OpenInference spans: one trace per entry per pass, a child per stage.

Spans are plain dicts (the `spans.jsonl` a run directory keeps), built from `decisions.parquet`
alone, so any run directory can be pushed later. Ids are derived from the run id and the entry,
never random: pushing the same run twice sends the same spans, which Phoenix stores once.

Attribute names (all documented in docs/phoenix.md; each one Phoenix's span filter accepts, so
never a Python keyword such as `pass` as a part):
    openinference.span.kind      CHAIN (entry, pass summary), GUARDRAIL (filters), LLM (judge)
    session.id                   the run's, so Phoenix's Sessions tab lists each run apart
    input.value / output.value   the gated text (redacted, truncated) / the outcome
    memeval.run_id, .experiment, .arm, .pass_no, .phase, .entry_id, .label, .label_source,
    memeval.stage, .decision, .score, .threshold, .outcome, .retained, .embedder
    llm.model_name, llm.provider, llm.token_count.{prompt,completion,total} (what Phoenix prices
    a judge call from), memeval.judge.{cost_usd,cached,skip,error}
    memeval.metrics.*            a pass's headline metrics on its summary span, rounded
    RETRIEVER `search` spans (retrieval replays): retrieval.documents.N.document.{id,score,
    content},
    memeval.query_id, .kind, .ndcg, .recall, memeval.mqs.top.{score,confidence,usage,access,
    conflict_penalty,hedged_penalty}: the top result's MQS, to chart trust over passes
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

FILTER_STAGES = ("prefilter", "length", "content_score")
WRITE_OUTCOMES = ("stored", "dedup", "noise_check")
SPAN_KINDS = {"judge": "LLM", "write": "CHAIN", **{s: "GUARDRAIL" for s in FILTER_STAGES}}
# metrics.json's name of a pass metric -> its short name on the summary span
PASS_METRICS = {"substantive_recall": "recall", "noise_stored": "noise_stored",
                "low_value_filtered_rate": "low_filtered", "prejudge_filter_rate": "prejudge",
                "judge_calls": "judge_calls", "judge_call_saving": "judge_saving",
                "entries": "entries"}
DIGITS = 3  # what the terminal shows of a rate (57.6%) or a figure (0.576)


@dataclass(frozen=True)
class RunInfo:
    """What every span of one run carries, read from its metrics.json and config.yaml."""

    run_id: str
    experiment: str
    stage_order: tuple[str, ...]
    embedder: str
    judge_model: str
    text_chars: int = 2000
    judge_provider: str | None = None  # OpenInference's llm.provider, e.g. anthropic

    @property
    def session(self) -> str:
        """Phoenix's session of every span of the run: one per run, named so a user knows it."""
        return f"{self.experiment} run {self.run_id[:8]}"


def span_name(kind: str, arm: str, pass_no: int) -> str:
    """A root span's name says what it is, and for which arm and pass: `gate p2`,
    `search sip0001 p3`."""
    return " ".join([kind, *([] if arm == "main" else [arm]), f"p{pass_no}"])


def hex_id(length: int, *parts: object) -> str:
    """A stable id: OTLP trace ids are 32 hex digits, span ids 16 (never all zeros)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:length]
    return digest if digest.strip("0") else "1".rjust(length, "0")


def _clean(value: Any) -> Any:
    """pandas NaN/None and numpy scalars as plain JSON values (None is dropped later)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _attributes(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in ((k, _clean(v)) for k, v in values.items()) if v is not None}


def stage_verdicts(row: Mapping[str, Any], order: Sequence[str]) -> list[tuple[str, str]]:
    """(stage, decision) for each stage the entry reached: stages before the deciding one
    passed; the deciding stage rejected; a written entry's `write` says what the store did."""
    outcome = str(row["outcome"])
    verdicts: list[tuple[str, str]] = []
    for stage in order:
        if stage == outcome:
            return [*verdicts, (stage, "reject")]
        audited = stage == "content_score" and bool(row.get("audited"))
        verdicts.append((stage, "audit" if audited else "pass"))
    return [*verdicts, ("write", outcome)] if outcome in WRITE_OUTCOMES else verdicts


def trace_ids(run: RunInfo, row: Mapping[str, Any]) -> tuple[str, str]:
    """(trace id, root span id) of one entry's pass through the gate."""
    key = (run.run_id, row["arm"], row["pass_no"], row["phase"], row["entry_id"])
    return hex_id(32, *key), hex_id(16, *key, "root")


def entry_spans(run: RunInfo, row: Mapping[str, Any],
                text: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The root span and one child per stage, timed from the decision's start and latencies."""
    trace_id, root_id = trace_ids(run, row)
    start = int(float(row.get("started_at") or 0.0) * 1e9)
    common = _attributes(**{"session.id": run.session,
                            "memeval.run_id": run.run_id, "memeval.experiment": run.experiment,
                            "memeval.arm": row["arm"], "memeval.pass_no": int(row["pass_no"]),
                            "memeval.phase": row["phase"], "memeval.entry_id": row["entry_id"]})
    children, cursor = [], start
    for stage, verdict in stage_verdicts(row, run.stage_order):
        elapsed = int(float(_clean(row.get(f"latency_{stage}_ms")) or 0.0) * 1e6)
        extra = _stage_attributes(run, row, stage)
        children.append({
            "trace_id": trace_id, "span_id": hex_id(16, trace_id, stage), "parent_id": root_id,
            "name": f"gate.{stage}", "start_ns": cursor, "end_ns": cursor + elapsed,
            "status": "ERROR" if stage == "judge" and row.get("judge_error") else "OK",
            "attributes": {**common, "openinference.span.kind": SPAN_KINDS.get(stage, "CHAIN"),
                           "memeval.stage": stage, "memeval.decision": verdict, **extra}})
        cursor += elapsed
    texts = text or {}
    root = {
        "trace_id": trace_id, "span_id": root_id, "parent_id": None,
        "name": span_name("gate", str(row["arm"]), int(row["pass_no"])),
        "start_ns": start, "end_ns": cursor, "status": "OK",
        "attributes": {**common, "openinference.span.kind": "CHAIN", **_attributes(**{
            "input.value": str(texts.get("assistant_response") or "")[: run.text_chars] or None,
            "memeval.user_prompt": str(texts.get("user_prompt") or "")[: run.text_chars] or None,
            "output.value": _verdict(row), "memeval.outcome": row["outcome"],
            "memeval.correct": _correct(row),
            "memeval.retained": bool(row["retained"]), "memeval.label": row.get("label"),
            "memeval.label_source": row.get("label_source"), "memeval.embedder": run.embedder,
            "memeval.asst_len": row.get("asst_len")})}}
    return [root, *children]


def _correct(row: Mapping[str, Any]) -> bool | None:
    """Whether the gate did right by the entry's label: kept what is substantive, dropped
    noise; None for a low-value or unlabelled entry, where either is defensible."""
    label = row.get("label")
    if label not in ("substantive", "noise"):
        return None
    return bool(row["retained"]) == (label == "substantive")


def _verdict(row: Mapping[str, Any]) -> str:
    """The trace row's output, read at a glance: the outcome, the label and whether the gate
    did right by it (`prefilter: dropped a noise entry, correct`)."""
    kept = "kept" if row["retained"] else "dropped"
    label = row.get("label") or "unlabelled"
    correct = _correct(row)
    judged = "" if correct is None else (", correct" if correct else ", WRONG")
    return f"{row['outcome']}: {kept} a {label} entry{judged}"


def _stage_attributes(run: RunInfo, row: Mapping[str, Any], stage: str) -> dict[str, Any]:
    if stage == "content_score":
        return _attributes(**{"memeval.score": row.get("score"),
                              "memeval.threshold": row.get("threshold"),
                              "memeval.embedder": run.embedder})
    if stage == "judge":
        return _attributes(**{
            "llm.model_name": run.judge_model, "llm.provider": run.judge_provider,
            **_tokens(row),
            "memeval.judge.cost_usd": float(row.get("judge_cost_usd") or 0.0),
            "memeval.judge.cached": bool(row.get("judge_cached")),
            "memeval.judge.skip": row.get("judge_skip"),
            "memeval.judge.error": bool(row.get("judge_error"))})
    return {}


def _tokens(row: Mapping[str, Any]) -> dict[str, int]:
    """The tokens a judge call spent, from which Phoenix computes its cost (model prices by
    `llm.model_name`). A cached verdict made no call and spent nothing: it carries none, so
    Phoenix's cost agrees with memeval's."""
    if row.get("judge_cached"):
        return {}
    prompt, completion = int(row.get("judge_tokens_in") or 0), int(
        row.get("judge_tokens_out") or 0)
    return {"llm.token_count.prompt": prompt, "llm.token_count.completion": completion,
            "llm.token_count.total": prompt + completion}


def pass_summary_span(run: RunInfo, arm: str, metrics: Mapping[str, Any],
                      start_ns: int, end_ns: int) -> dict[str, Any]:
    """One span per evaluated pass carrying its headline metrics, rounded as the terminal shows
    them, where the trace list shows them beside the entries: its input says which pass of
    which run, its output the metrics in words."""
    pass_no = int(metrics["pass"])
    trace_id = hex_id(32, run.run_id, arm, pass_no, "summary")
    values = {short: _rounded(metrics.get(name)) for name, short in PASS_METRICS.items()}
    told = ", ".join(f"{short} {100 * value:.1f}%" if isinstance(value, float) else
                     f"{short} {value}" for short, value in values.items() if value is not None)
    return {"trace_id": trace_id, "span_id": hex_id(16, trace_id, "root"), "parent_id": None,
            "name": span_name("summary", arm, pass_no), "start_ns": start_ns, "end_ns": end_ns,
            "status": "OK", "attributes": {
                "openinference.span.kind": "CHAIN", "session.id": run.session,
                "memeval.run_id": run.run_id, "memeval.experiment": run.experiment,
                "memeval.arm": arm, "memeval.pass_no": pass_no,
                "input.value": f"{run.experiment}, {arm} arm, pass {pass_no}",
                "output.value": told,
                **_attributes(**{f"memeval.metrics.{short}": value
                                 for short, value in values.items()})}}


def _rounded(value: Any) -> Any:
    return round(float(value), DIGITS) if isinstance(value, float) else _clean(value)


def _rows(decisions: pd.DataFrame) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], decisions.to_dict("records"))


def decision_spans(run: RunInfo, decisions: pd.DataFrame,
                   texts: Mapping[str, Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """The traces of these decisions (a decisions.parquet frame), entry by entry."""
    yield from _traces(run, _rows(decisions), texts)


def _traces(run: RunInfo, rows: list[dict[str, Any]],
            texts: Mapping[str, Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    for row in rows:
        yield from entry_spans(run, row, texts.get(str(row["entry_id"])))


def run_spans(run: RunInfo, decisions: pd.DataFrame, texts: Mapping[str, Mapping[str, Any]],
              passes_by_arm: Mapping[str, Sequence[Mapping[str, Any]]]) -> Iterator[dict[str, Any]]:
    """Every span of a run: entries' traces, then one summary span per evaluated pass."""
    rows = _rows(decisions)  # converted once, for the traces and the summaries
    yield from _traces(run, rows, texts)
    for arm, passes in passes_by_arm.items():
        for metrics in passes:
            mine = [r for r in rows if r["arm"] == arm and int(r["pass_no"]) == metrics["pass"]
                    and r["phase"] == "eval"]
            starts = [int(float(r.get("started_at") or 0) * 1e9) for r in mine] or [0]
            yield pass_summary_span(run, arm, metrics, min(starts), max(starts))


def search_spans(run: RunInfo, searches: pd.DataFrame,
                 texts: Mapping[str, Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """One RETRIEVER trace per measured search, carrying the served memories and the top
    result's MQS with its breakdown (the retrieval replay's `retrieval_queries` table). A
    document's content is the memory's (redacted) text as the table holds it, or in runs that
    predate that column the text of the entry it was written from, so Phoenix shows what was
    retrieved, not an id alone; its metadata holds the labelled relevance grade (0 when not
    relevant), which the push sends as the document's `relevance` evaluation, from which
    Phoenix computes its retrieval metrics (nDCG, precision, hit)."""
    for row in _rows(searches):
        trace_id, span_id = search_ids(run.run_id, str(row["arm"]), int(row["pass"]),
                                       str(row["query_id"]))
        documents: dict[str, Any] = {}
        served_texts, grades = row.get("served_texts"), row.get("served_grades")
        for rank, (memory, entry, score) in enumerate(zip(
                row["served_memories"], row["served"], row["cosines"], strict=True)):
            prefix = f"retrieval.documents.{rank}.document"
            content = str(served_texts[rank] if served_texts is not None else
                          (texts.get(str(entry)) or {}).get("assistant_response") or "")
            content = content[: run.text_chars]
            documents |= _attributes(**{
                f"{prefix}.id": str(memory), f"{prefix}.score": float(score),
                f"{prefix}.content": content or None,
                f"{prefix}.metadata": None if grades is None else
                json.dumps({"relevance": int(grades[rank])})})
        mqs = {f"memeval.mqs.top.{term.removeprefix('top_mqs_')}": row.get(term)
               for term in row if str(term).startswith("top_mqs_")}
        start = int(float(row["searched_at"]) * 1e9)
        yield {"trace_id": trace_id, "span_id": span_id, "parent_id": None,
               "name": span_name("search", str(row["arm"]), int(row["pass"])),
               "start_ns": start, "end_ns": start, "status": "OK",
               "attributes": {"openinference.span.kind": "RETRIEVER", **documents,
                              **_attributes(**{
                                  "session.id": run.session, "memeval.run_id": run.run_id,
                                  "memeval.experiment": run.experiment,
                                  "memeval.arm": row["arm"], "memeval.pass_no": int(row["pass"]),
                                  "memeval.query_id": row["query_id"],
                                  "memeval.kind": row.get("kind"),
                                  "input.value": str(row.get("query") or "")[: run.text_chars],
                                  "output.value": f"ndcg {row['ndcg']:.3f}, recall "
                                                  f"{row['recall']:.3f}: "
                                                  + ", ".join(map(str, row["served_memories"])),
                                  "memeval.ndcg": row["ndcg"], "memeval.recall": row["recall"],
                                  "memeval.mqs.top.score": row.get("top_mqs"), **mqs})}}


def search_ids(run_id: str, arm: str, pass_no: int, query_id: str) -> tuple[str, str]:
    """(trace id, span id) of one measured search, which its experiment run links to."""
    key = (run_id, arm, pass_no, query_id, "search")
    return hex_id(32, *key), hex_id(16, *key)
