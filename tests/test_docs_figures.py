"""Every figure the docs state about a committed artefact (a bundled data set beside its card, the
committed example comparison, the committed leaderboard, the regression thresholds) is read off
the doc and recomputed from the artefact, so a doc that drifts from its data fails here rather
than misleading a reader. Figures of a fresh default run are read off its committed summary,
reports/default_runs.json, which tests/test_acceptance.py holds to fresh runs; other fresh-run
figures are not here: nothing committed holds them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest
import yaml

from tests.bundled_counts import (
    STATISTICS,
    Test,
    adversarial,
    ancestors,
    both,
    clean,
    count,
    created_by,
    creators,
    dev_lines,
    dev_sets,
    experiment_set,
    filled,
    has,
    in_splits,
    json_array,
    labelled_twice,
    lengths,
    memories,
    memory_paths,
    messages,
    not_in,
    response_length,
    retrieved,
    retrieved_total,
    rows,
    same_path,
    session_logs,
    sessions,
    share,
    short,
    split_figure,
    starts,
    tags,
    times,
    total,
    with_tag,
)
from tests.default_runs import committed, in_summary, summary_bound
from tests.doc_claims import NUMBER, ROOT, Claim, agrees, cell, value

EXAMPLE = ROOT / "reports" / "example" / "compare_default_vs_target-recall-0.90.md"
BOARD = ROOT / "reports" / "leaderboard" / "leaderboard.json"
PAIRS = experiment_set("conflict_detection", "pairs")
CONFLICT_TEST = experiment_set("conflict_detection", "test_pairs")
RECORDS = experiment_set("mqs_calibration", "records")
RECORDS_TEST = experiment_set("mqs_calibration", "test_records")
# a Phoenix push: a run per item and experiment. The rules (memeval's, compat) on the pairs,
# and the learned detector beside them on dev and test; memledger's MQS and the fitted score on
# each trust set
CONFLICT_RUNS = total(times(2, count(PAIRS)), times(3, dev_lines("conflict_pairs")),
                      times(3, count(CONFLICT_TEST)))
TRUST_RUNS = times(2, total(count(RECORDS), dev_lines("memory_records"), count(RECORDS_TEST)))


def queries(kind: str) -> Callable[[], float]:
    """The queries of one kind (every query for "")."""
    return count(RETRIEVAL, lambda row: kind in ("", row["kind"]))


def relevant(grade: int | None = None) -> Callable[[str], Callable[[], float]]:
    """Labelled (query, memory) pairs of the queries of one kind, of one grade if given."""
    def of(kind: str) -> Callable[[], float]:
        return lambda: sum(1 for row in rows(RETRIEVAL) if kind in ("", row["kind"])
                           for got in row["relevant"].values() if grade in (None, got))
    return of


ENTIRE = "labeled/claude_code_entire_v1.jsonl"
VSLA = "labeled/claude_code_vsla_v1.jsonl"
RETRIEVAL = "retrieval/queries_v1.jsonl"
BLIND = ("test4", "test5")
LABELS = ("noise", "low_value", "substantive")
CONFLICTS = ("none", "contradiction", "semantic", "temporal")
KINDS = ("command", "config_value", "decision", "dependency", "flag_toggle", "other", "path",
         "port_host_url", "preference", "process", "version")
TRUST = ("trusted", "questionable", "untrusted")
ATTRIBUTION = ("well_attributed", "partially_attributed", "unattributed")
# the cards of the real agent-file pairs: one table, conflict by how the pair was drawn
OUTSIDE_PAIRS = ("agents_md_history_codexbar_v1", "agents_md_history_fastmcp_v1",
                 "agents_md_history_mcp_python_sdk_v1", "agents_md_history_openai_agents_v1",
                 "agents_md_history_prefect_v1", "agents_md_history_pydantic_ai_v1",
                 "claude_md_history_entire_v1", "claude_md_history_mcp_typescript_sdk_v1")
# the later held-out conflict splits: each written in two halves, by id prefix
HALVES = {"memory_pairs_heldout_v2": "jk", "memory_pairs_heldout_v3": "rs",
          "memory_pairs_heldout_v4": "tu", "memory_pairs_heldout_v5": "vw"}


# --- the data cards ----------------------------------------------------------------------------

def card(folder: str, stem: str) -> str:
    return f"data/{folder}/{stem}.md"


def heading(folder: str, stem: str) -> Claim:
    """A card's `## Composition (N …)` heading."""
    return Claim(card(folder, stem), r"^## Composition \(NUM ", count(f"{folder}/{stem}.jsonl"))


def opening(folder: str, stem: str) -> Claim:
    """A card's opening sentence: `N real …` or `N hand-labelled …`."""
    return Claim(card(folder, stem), r"\A# [^\n]*\n\n[^\n\d]*NUM (?:real|hand-labelled) ",
                 count(f"{folder}/{stem}.jsonl"))


def split_table(folder: str, stem: str, splits: tuple[str, ...]) -> list[Claim]:
    """A labelled-turns card's table: sessions, turns and each label's turns, per split."""
    name, doc = f"{folder}/{stem}.jsonl", card(folder, stem)
    claims = []
    for split in (*splits, None):
        row = split or "total"
        claims += [Claim(doc, cell(row, 1), split_figure(name, split, "sessions")),
                   Claim(doc, cell(row, 2), split_figure(name, split, "turns"))]
        claims += [Claim(doc, cell(row, 3 + index), split_figure(name, split, "turns", label))
                   for index, label in enumerate(LABELS)]
    return claims


def outside_pairs(stem: str) -> list[Claim]:
    name, doc = f"conflicts/{stem}.jsonl", card("conflicts", stem)
    return [Claim(doc, r"\A# [^\n]*\n\nNUM pairs of real entries", count(name)),
            Claim(doc, cell("total", 3), count(name)),
            *(Claim(doc, cell(label, 3), count(name, has(conflict=label)))
              for label in CONFLICTS)]


def halves(stem: str) -> list[Claim]:
    name, doc = f"conflicts/{stem}.jsonl", card("conflicts", stem)
    claims = [Claim(doc, cell("total", 3), count(name)),
              *(Claim(doc, cell("total", 1 + index), count(name, starts(prefix)))
                for index, prefix in enumerate(HALVES[stem]))]
    for label in CONFLICTS:
        claims += [Claim(doc, cell(label, 3), count(name, has(conflict=label))),
                   *(Claim(doc, cell(label, 1 + index),
                           count(name, both(has(conflict=label), starts(prefix))))
                     for index, prefix in enumerate(HALVES[stem]))]
    return claims


def kinds(stem: str) -> list[Claim]:
    """A conflict card's table of pairs per kind (rows) and conflict type (columns)."""
    name, doc = f"conflicts/{stem}.jsonl", card("conflicts", stem)
    order = ("contradiction", "temporal", "semantic", "none")
    claims = [Claim(doc, cell(kind, 5), count(name, has(kind=kind))) for kind in KINDS]
    return claims + [Claim(doc, cell(kind, 1 + index), count(name, has(kind=kind, conflict=label)))
                     for kind in KINDS for index, label in enumerate(order)]


def label_column(folder: str, stem: str, field: str, labels: tuple[str, ...],
                 shares: int | None = None, table: str = "") -> list[Claim]:
    """A card's table with each label's count in the first column (and its share in `shares`)."""
    name, doc = f"{folder}/{stem}.jsonl", card(folder, stem)
    claims = [Claim(doc, cell(label, 1, table=table), count(name, has(**{field: label})))
              for label in labels]
    if shares is not None:
        claims += [Claim(doc, cell(label, shares, table=table), share(name, has(**{field: label})))
                   for label in labels]
    return claims


def record_columns(stem: str, first: int) -> list[Claim]:
    """A trust card's columns from `first` on: cited, hedged, has `derived_from`, in a conflict,
    and (where the table has it) used, per label."""
    name, doc = f"mqs/{stem}.jsonl", card("mqs", stem)
    columns: list[Test] = [lambda row: row["citation"] is not None,
                           lambda row: bool(row["hedged"]),
                           lambda row: bool(row["derived_from"]),
                           lambda row: bool(row["conflicts"]),
                           lambda row: row["success_count"] + row["failure_count"] > 0]
    if stem == "memory_records_v1":  # no `used` column
        columns = columns[:4]
    return [Claim(doc, cell(label, first + index, table=r"label \| n \|"),
                  count(name, both(has(label=label), test)))
            for label in TRUST for index, test in enumerate(columns)]


# mai v2's table of surface signals: (row, the scenarios it counts)
SIGNALS: tuple[tuple[str, Test], ...] = (
    ("no memories retrieved", lambda row: not memories(row)),
    ("some retrieved memory has an unknown creator",
     lambda row: any(memory["created_by"] is None for memory in memories(row))),
    ("some retrieved memory has no session",
     lambda row: any(memory["session_id"] is None for memory in memories(row))),
    ("some retrieved memory is hedged", lambda row: any(m["hedged"] for m in memories(row))),
    ("some retrieved memory has confidence < 0.5 or `null`",
     lambda row: any(m["confidence"] is None or m["confidence"] < 0.5 for m in memories(row))),
    (r"every retrieved memory is clean \(",
     lambda row: bool(memories(row)) and all(map(clean, memories(row)))),
    ("has ancestor records", lambda row: bool(row["ancestors"])),
    ("two or more distinct known creators", lambda row: creators(row, known=True) >= 2))


def tag_table(stem: str) -> list[Claim]:
    """A conflict card's tag table: the pairs with each tag the set uses, and their labels."""
    name, doc = f"conflicts/{stem}.jsonl", card("conflicts", stem)
    claims = []
    for tag in sorted(set().union(*map(tags, rows(name)))):
        row = f"`{re.escape(tag)}`"
        claims.append(Claim(doc, cell(row, 1), count(name, with_tag(tag))))
        claims += [Claim(doc, rf"^\| {row} \| \d+ \|[^|\n]*\b{label} NUM",
                         count(name, both(has(conflict=label), with_tag(tag))))
                   for label in CONFLICTS
                   if any(pair["conflict"] == label and tag in tags(pair) for pair in rows(name))]
    return claims


GOLDEN = "mai/attribution_scenarios_golden_style_v1.jsonl"
VSLA_CARD = card("labeled", "claude_code_vsla_v1")
TRACES = "traces/trace_sample_v1.jsonl"
# the trace card's length buckets: (row title, shortest, longest)
BUCKETS = (("< 100", 0, 99), ("100–499", 100, 499), ("500–999", 500, 999),
           ("1,000–4,999", 1000, 4999), ("5,000–9,999", 5000, 9999),
           ("10,000–33,000", 10000, 33000), ("> 33,000", 33001, float("inf")))
# write_gate_v1's categories per label, as its card's table lists them
CATEGORIES = {"noise": ("status", "navigation", "restated_requirements", "narration", "ack",
                        "closing"),
              "low_value": ("generic_explanation", "boilerplate", "generic_advice",
                            "vague_summary", "speculation"),
              "substantive": ("root_cause", "gotcha", "config", "api_behaviour", "file_location",
                              "decision", "convention")}


DATA_CARDS: list[Claim] = [
    *(heading(folder, stem) for folder, stem in (
        ("conflicts", "memory_pairs_heldout_v1"), ("conflicts", "memory_pairs_v1"),
        ("conflicts", "memory_pairs_v2"), ("labeled", "claude_code_vsla_v1"),
        ("labeled", "write_gate_heldout_v1"), ("labeled", "write_gate_v1"),
        ("mai", "attribution_scenarios_golden_style_v1"),
        ("mai", "attribution_scenarios_heldout_v1"), ("mai", "attribution_scenarios_v1"),
        ("mai", "attribution_scenarios_v2"), ("mqs", "memory_records_heldout_v1"),
        ("mqs", "memory_records_v1"), ("mqs", "memory_records_v2"), ("retrieval", "queries_v1"))),
    *(opening(folder, stem) for folder, stem in (
        *(("conflicts", f"memory_pairs_heldout_v{version}") for version in range(1, 6)),
        ("labeled", "claude_code_entire_v1"), ("mqs", "memory_records_heldout_v1"))),
    *(claim for stem in OUTSIDE_PAIRS for claim in outside_pairs(stem)),
    *(claim for stem in HALVES for claim in halves(stem)),
    *label_column("conflicts", "memory_pairs_heldout_v1", "conflict", CONFLICTS, shares=2),
    Claim(card("conflicts", "memory_pairs_heldout_v1"), cell("total", 1),
          count("conflicts/memory_pairs_heldout_v1.jsonl")),
    *kinds("memory_pairs_heldout_v1"),
    *(claim for stem in ("memory_pairs_v1", "memory_pairs_v2", "memory_pairs_heldout_v1")
      for claim in tag_table(stem)),
    *(Claim(card("conflicts", stem), pattern, count(f"conflicts/{stem}.jsonl", test))
      for stem, pattern, test in (
          *((stem, r"newer memory is on side `a` in NUM of", has(conflict="temporal", newer="a"))
            for stem in (*HALVES, "memory_pairs_v2")),
          *((stem, r"newer memory is on side `a` in \d+ of the NUM", has(conflict="temporal"))
            for stem in (*HALVES, "memory_pairs_v2")),
          ("memory_pairs_heldout_v1", r"memory is on side `a` in NUM of",
           has(conflict="temporal", newer="a")),
          ("memory_pairs_heldout_v1", r"memory is on side `a` in \d+ of NUM",
           has(conflict="temporal")),
          ("memory_pairs_v2", r"newer memory on side `a` NUM,",
           has(conflict="temporal", newer="a")),
          ("memory_pairs_v2", r"newer memory on side `a` \d+, on side `b` NUM",
           has(conflict="temporal", newer="b")),
          ("memory_pairs_v2", r"v2 has NUM same-path pairs", same_path),
          *((stem, r"NUM pairs keep both memories in one file", same_path)
            for stem in ("memory_pairs_heldout_v4", "memory_pairs_heldout_v5")),
          ("memory_pairs_heldout_v4", r"one file \(NUM in the `u` half", both(same_path,
                                                                            starts("u"))),
          ("memory_pairs_heldout_v5", r"one file \(NUM in the `v` half", both(same_path,
                                                                            starts("v"))))),
    *label_column("conflicts", "memory_pairs_v2", "conflict", CONFLICTS, shares=2),
    Claim(card("conflicts", "memory_pairs_v2"), cell("total", 1), count(
        "conflicts/memory_pairs_v2.jsonl")),
    *(Claim(card("conflicts", stem), cell(label or "total", column),
            count(f"conflicts/{stem}.jsonl", both(has(conflict=label) if label else has(), test)))
      for stem, column, test in (
          ("memory_pairs_v1", 2, adversarial("complementary", "unrelated")),
          ("memory_pairs_v2", 3, adversarial("complementary", "unrelated")),
          ("memory_pairs_heldout_v1", 3, lambda row: bool(tags(row))),
          ("memory_pairs_heldout_v1", 4,
           adversarial("complementary", "unrelated", "order-reversed")))
      for label in (*CONFLICTS, None)),
    Claim(card("conflicts", "memory_pairs_v2"), r"NUM of the \d+ `none` pairs are hard",
          count("conflicts/memory_pairs_v2.jsonl",
                both(has(conflict="none"), adversarial("complementary", "unrelated")))),
    Claim(card("conflicts", "memory_pairs_v2"), r"\d+ of the NUM `none` pairs are hard",
          count("conflicts/memory_pairs_v2.jsonl", has(conflict="none"))),
    *label_column("conflicts", "memory_pairs_v1", "conflict", CONFLICTS),
    Claim(card("conflicts", "memory_pairs_v1"), cell("total", 1),
          count(PAIRS)),
    Claim(card("conflicts", "memory_pairs_v2"), r"four times larger \(NUM pairs\)",
          count("conflicts/memory_pairs_v2.jsonl")),
    *kinds("memory_pairs_v2"),
    *split_table("labeled", "claude_code_entire_v1",
                 ("learn", "validate", "test1", "test2", "test3", "test4", "test5")),
    Claim(card("labeled", "claude_code_entire_v1"), r"turns from NUM sessions", sessions(ENTIRE)),
    Claim(card("labeled", "claude_code_entire_v1"), r"\(at least 1,150\): NUM\s+sessions",
          sessions(ENTIRE, in_splits("learn", "validate", "test1"))),
    *(Claim(card("labeled", "claude_code_entire_v1"), rf"{pattern} \(NUM more",
            sessions(ENTIRE, has(split=split))) for pattern, split in (
        (r"850\s+turns", "test2"), (r"to `test3`", "test3"), (r"880 turns", "test4"),
        (r"880", "test5"))),
    *(Claim(card("labeled", stem), rf"min / median / max:[^.]*{label} "
            + r"[\d,]+ /\s" * index + "NUM", lengths(f"labeled/{stem}.jsonl", label, pick))
      for stem in ("claude_code_entire_v1", "claude_code_vsla_v1")
      for label in LABELS for index, pick in enumerate(STATISTICS)),
    *(Claim(card("labeled", stem), r"NUM turns \(\d+%\) are under 80",
            count(f"labeled/{stem}.jsonl", short))
      for stem in ("claude_code_entire_v1", "claude_code_vsla_v1")),
    *(Claim(card("labeled", stem), r"turns \(NUM%\) are under 80",
            share(f"labeled/{stem}.jsonl", short))
      for stem in ("claude_code_entire_v1", "claude_code_vsla_v1")),
    *(Claim(VSLA_CARD, pattern, count(VSLA, both(short, has(label=label))))
      for pattern, label in ((r"under 80 characters: NUM noise", "noise"),
                             (r"under 80 characters: \d+ noise and \**NUM", "substantive"))),
    *(Claim(VSLA_CARD, rf"NUM%\s{label}\b", share(VSLA, has(label=label)))
      for label in LABELS),
    Claim(VSLA_CARD, r"NUM substantive turns, \d+ of them",
          count(VSLA, has(label="substantive"))),
    Claim(VSLA_CARD, r"substantive turns, NUM of them in `evaluate`",
          count(VSLA, has(label="substantive", split="evaluate"))),
    *(Claim(VSLA_CARD, pattern, count(VSLA, labelled_twice))
      for pattern in (r"random subset of NUM turns", r"Agreement on the NUM doubly-labelled",
                      r"κ is measured on NUM")),
    Claim(VSLA_CARD, r"the only one for NUM turns",
          count(VSLA, lambda row: not labelled_twice(row))),
    *(Claim(VSLA_CARD, rf"^- `{split}` \(NUM sessions\)",
            sessions(VSLA, has(split=split))) for split in ("learn", "evaluate")),
    *(Claim(card("labeled", "write_gate_v1"), cell(label, 3, part),
            lengths("labeled/write_gate_v1.jsonl", label, pick))
      for label in LABELS for part, pick in enumerate(STATISTICS)),
    *(Claim(card("labeled", "write_gate_heldout_v1"), rf"^\| {label} \| \d+ \| {before}NUM",
            lengths("labeled/write_gate_heldout_v1.jsonl", label, pick))
      for label in LABELS for before, pick in (("", min), ("[\\d,]+–", max))),
    Claim(card("labeled", "claude_code_entire_v1"), r"are under 80 characters, NUM of them",
          count(ENTIRE, both(short, has(label="substantive")))),
    Claim(card("labeled", "claude_code_entire_v1"), r"` \[…\]` \(NUM rows\)",
          count(ENTIRE, lambda row: row["user_prompt"].endswith(" […]"))),
    Claim(card("labeled", "claude_code_entire_v1"), r"random subset of\nNUM of those turns",
          count(ENTIRE, both(labelled_twice, in_splits("learn", "validate", "test1")))),
    Claim(card("labeled", "claude_code_entire_v1"), r"On the NUM doubly-labelled turns",
          count(ENTIRE, both(labelled_twice, in_splits("learn", "validate", "test1")))),
    *(Claim(card("labeled", "claude_code_entire_v1"), rf"On `{split}`'s NUM:",
            count(ENTIRE, both(labelled_twice, has(split=split))))
      for split in ("test2", "test3", "test4", "test5")),
    *split_table("labeled", "claude_code_vsla_v1", ("learn", "evaluate")),
    Claim(VSLA_CARD, r"^## Composition \(\d+ turns, NUM sessions",
          sessions(VSLA)),
    *(claim for stem in ("write_gate_v1", "write_gate_heldout_v1")
      for claim in label_column("labeled", stem, "label", LABELS)),
    *(claim for stem in ("attribution_scenarios_v1", "attribution_scenarios_v2",
                         "attribution_scenarios_heldout_v1",
                         "attribution_scenarios_golden_style_v1")
      for claim in label_column("mai", stem, "ground_truth", ATTRIBUTION,
                                table=r"ground_truth \| n \|")),
    Claim(card("mai", "attribution_scenarios_v2"), r"larger \(NUM scenarios\)",
          count("mai/attribution_scenarios_v2.jsonl")),
    *(Claim(card("mai", stem), rf"Retrieved memories per scenario(?::|[^.]*,) {memories} in NUM",
            count(f"mai/{stem}.jsonl", retrieved(memories)))
      for stem in ("attribution_scenarios_v1", "attribution_scenarios_v2",
                   "attribution_scenarios_heldout_v1") for memories in range(5)),
    *(Claim(card("mai", stem), pattern, ancestors(f"mai/{stem}.jsonl"))
      for stem, pattern in (("attribution_scenarios_v1", r"NUM ancestor records in total"),
                            ("attribution_scenarios_v2", r"NUM ancestor records in total"),
                            ("attribution_scenarios_heldout_v1", r"NUM ancestor records in total"),
                            ("attribution_scenarios_golden_style_v1",
                             r"retrieved memories and NUM ancestor records"))),
    Claim(card("mai", "attribution_scenarios_heldout_v1"),
          r"NUM scenarios retrieve memories from two or more distinct creators",
          count("mai/attribution_scenarios_heldout_v1.jsonl",
                lambda row: creators(row, known=False) >= 2)),
    *(Claim(card("mai", stem), pattern, retrieved_total(f"mai/{stem}.jsonl"))
      for stem, pattern in (("attribution_scenarios_v2", r"Creators of the NUM retrieved"),
                            ("attribution_scenarios_golden_style_v1",
                             r"^- NUM retrieved memories and"))),
    *(Claim(card("mai", "attribution_scenarios_v2"), rf"retrieved memories:[^.]*\s{title} NUM",
            created_by("mai/attribution_scenarios_v2.jsonl", creator))
      for title, creator in (("claude-code", "claude-code"), ("user", "user"),
                             ("ci-bot", "ci-bot"), (r"unknown \(`null`\)", None),
                             ("codex-cli", "codex-cli"),
                             ("claude-code-subagent", "claude-code-subagent"))),
    Claim(card("mai", "attribution_scenarios_golden_style_v1"),
          r"NUM scenarios have at least one ancestor",
          count(GOLDEN, lambda row: bool(row["ancestors"]))),
    *(Claim(card("mai", "attribution_scenarios_v2"), cell(signal, 1 + index),
            count("mai/attribution_scenarios_v2.jsonl", both(has(ground_truth=label), test)))
      for signal, test in SIGNALS for index, label in enumerate(ATTRIBUTION)),
    *(Claim(card("mai", "attribution_scenarios_golden_style_v1"), cell(str(memories), 1),
            count(GOLDEN, retrieved(memories))) for memories in range(5)),
    *(Claim(card("mai", "attribution_scenarios_golden_style_v1"),
            cell(label, 1 + memories, table=r"ground_truth \| 0 \|"),
            count(GOLDEN, both(has(ground_truth=label), retrieved(memories))))
      for label in ATTRIBUTION for memories in range(5)),
    *label_column("mqs", "memory_records_v1", "label", TRUST),
    *(claim for stem in ("memory_records_v2", "memory_records_heldout_v1")
      for claim in label_column("mqs", stem, "label", TRUST, shares=2,
                                table=r"label \| n \|")),
    *(Claim(card("retrieval", "queries_v1"), cell(kind or "total", column), figure(kind))
      for kind in ("paraphrase", "task", "multi", "keyword", "")
      for column, figure in ((1, queries), (3, relevant()), (4, relevant(grade=2)))),
    *(Claim(card("retrieval", "queries_v1"), cell(kind, 2), share(RETRIEVAL, has(kind=kind)))
      for kind in ("paraphrase", "task", "multi", "keyword")),
    *record_columns("memory_records_v1", 2), *record_columns("memory_records_v2", 3),
    *record_columns("memory_records_heldout_v1", 4),
    *(Claim(card("labeled", "write_gate_v1"), rf"^\| {label} \|[^|\n]*\|[^|\n]*\b{category} NUM",
            count("labeled/write_gate_v1.jsonl", has(label=label, category=category)))
      for label, categories in CATEGORIES.items() for category in categories),
    Claim(card("conflicts", "memory_pairs_v1"), r"Memory locations \(NUM memories\)",
          times(2, count(PAIRS))),
    *(Claim(card("conflicts", "memory_pairs_v1"),
            rf"Memory locations [^\n]*(?:\n[^\n]*)?{re.escape(where)}` NUM",
            memory_paths(PAIRS, prefix))
      for where, prefix in (("memory/YYYY-MM-DD.md", "memory/"), ("USER.md", "USER.md"),
                            ("MEMORY.md", "MEMORY.md"), ("AGENTS.md", "AGENTS.md"))),
    Claim(card("traces", "trace_sample_v1"), r"at NUM rows", count(TRACES)),
    Claim(card("traces", "trace_sample_v1"), cell("empty", 1),
          count(TRACES, has(has_empty_response=True))),
    *(Claim(card("traces", "trace_sample_v1"), rf"`{model}` NUM", count(TRACES, has(model=model)))
      for model in ("claude-sonnet-4-20250514", "claude-opus-4-20250514",
                    "claude-3-5-haiku-20241022", "claude-3-7-sonnet-20250219")),
    Claim(card("traces", "trace_sample_v1"), r'`"\[\]"` \(NUM rows\)',
          count(TRACES, has(tools_json="[]"))),
    Claim(card("traces", "trace_sample_v1"), r"in NUM rows a JSON array",
          count(TRACES, json_array)),
    *(Claim(card("traces", "trace_sample_v1"), rf"`{column}` [^\n]*except NUM rows",
            count(TRACES, filled(column))) for column in ("gitdiff", "claude_log")),
    Claim(card("traces", "trace_sample_v1"), r"optional system message \(NUM rows\)",
          count(TRACES, messages(lambda sent: sent[0]["role"] == "system"))),
    Claim(card("traces", "trace_sample_v1"), r"^NUM rows carry tool output as `role: tool`",
          count(TRACES, messages(lambda sent: any(m["role"] == "tool" for m in sent)))),
    *(Claim(card("traces", "trace_sample_v1"), cell(re.escape(bucket), 1),
            count(TRACES, response_length(low, high))) for bucket, low, high in BUCKETS),
]


# --- the docs' figures about the bundled data ---------------------------------------------------

DOCS_ON_DATA: list[Claim] = [
    Claim("README.md", r"the same on NUM real Claude Code turns", count(ENTIRE)),
    Claim("docs/index.md", r"claude_code_entire_v1\.jsonl`, NUM turns\)", count(ENTIRE)),
    *(Claim(doc, r"learning on NUM sessions and evaluating on \d+ others",
            sessions(ENTIRE, not_in(*BLIND))) for doc in ("README.md", "docs/index.md")),
    *(Claim(doc, r"learning on \d+ sessions and evaluating on NUM others",
            sessions(ENTIRE, in_splits(*BLIND))) for doc in ("README.md", "docs/index.md")),
    Claim("docs/index.md", r"`claude_code_entire` \(NUM real labelled turns\)", count(ENTIRE)),
    Claim("docs/index.md", r"`claude_code_labeled` \(NUM more\)", count(VSLA)),
    Claim("docs/datasets.md", r"trace_sample_v1\.jsonl`, see its card\): NUM rows", count(TRACES)),
    *(Claim("docs/datasets.md", rf"^  - NUM {kind}", count(TRACES, test)) for kind, test in (
        ("empty responses", has(has_empty_response=True)), ("JSON-array prompts", json_array),
        ("responses over 32 KiB", response_length(32 * 1024 + 1, float("inf"))))),
    Claim("docs/datasets.md", r"it loads\s+NUM entries \(", count(VSLA)),
    Claim("docs/datasets.md", r"Every one of those NUM turns", count(VSLA)),
    Claim("docs/datasets.md", r"agreement on NUM turns labelled twice",
          count(VSLA, labelled_twice)),
    Claim("docs/datasets.md", r"On the NUM real sessions bundled",
          session_logs),
    *(Claim(doc, r"NUM real Claude Code turns from \d+", count(ENTIRE))
      for doc in ("docs/datasets.md", "docs/results.md")),
    *(Claim(doc, r"real Claude Code turns from NUM\s+sessions", sessions(ENTIRE))
      for doc in ("docs/datasets.md", "docs/results.md")),
    *(Claim(doc, pattern, count(ENTIRE, labelled_twice)) for doc, pattern in (
        ("docs/datasets.md", r"labellers, NUM turns twice"),
        ("docs/results.md", r"0\.89 on NUM turns labelled twice"))),
    Claim("docs/results.md", r"`test4` \+ `test5`\*\* \(NUM turns",
          count(ENTIRE, in_splits(*BLIND))),
    Claim("docs/results.md", r"`test4` \+ `test5`\*\* \([\d,]+ turns, NUM substantive",
          count(ENTIRE, both(in_splits(*BLIND), has(label="substantive")))),
    *(Claim("docs/results.md", rf"`{split}` \(NUM turns", count(ENTIRE, has(split=split)))
      for split in ("test3", "test4", "test5")),
    *(Claim("docs/results.md", rf"`{split}` \([\d,]+ turns, NUM substantive",
            count(ENTIRE, has(split=split, label="substantive")))
      for split in ("test3", "test4", "test5")),
    Claim("docs/results.md", r"blind `test4` \+ `test5`\*\*.*learn on NUM sessions",
          sessions(ENTIRE, not_in(*BLIND))),
    Claim("docs/results.md", r"blind `test4` \+ `test5`\*\*.*evaluate NUM others",
          sessions(ENTIRE, in_splits(*BLIND))),
    Claim("docs/results.md", r"`test3` \(.*learn on NUM sessions",
          sessions(ENTIRE, not_in("test3", *BLIND))),
    Claim("docs/results.md", r"`test3` \(.*evaluate NUM others",
          sessions(ENTIRE, has(split="test3"))),
    Claim("docs/results.md", r"evaluate `test1`,\s+NUM turns", count(ENTIRE, has(split="test1"))),
    Claim("docs/results.md", r"evaluate `test1`,\s+[\d,]+ turns, NUM substantive",
          count(ENTIRE, has(split="test1", label="substantive"))),
    Claim("docs/results.md", r"bundled sessions \(NUM turns", count(VSLA)),
    Claim("docs/results.md", r"bundled sessions \([\d,]+ turns, NUM sessions\)", sessions(VSLA)),
    *(Claim("docs/results.md", rf"the NUM `{split}` sessions", sessions(VSLA, has(split=split)))
      for split in ("learn", "evaluate")),
    *(Claim("docs/results.md", rf"`{split}` sessions\s+\(NUM turns", count(VSLA, has(split=split)))
      for split in ("learn", "evaluate")),
    *(Claim("docs/results.md", rf"`evaluate` sessions \(\d+ turns:[^)]*?NUM\s+{name}\b",
            count(VSLA, has(split="evaluate", label=label)))
      for label, name in (("noise", "noise"), ("low_value", "low-value"),
                          ("substantive", "substantive"))),
    *(Claim("docs/results.md", pattern, count(VSLA, has(split="evaluate"))) for pattern in (
        r"first set \(`claude_code_vsla_v1`, NUM turns\)", r"evaluate \d+ others \(NUM turns\)")),
    Claim("docs/results.md", r"\(48 of NUM", count(VSLA, has(split="evaluate",
                                                           label="substantive"))),
    Claim("docs/results.md", r"learn on NUM sessions, evaluate \d+\b(?! others)",
          sessions(VSLA, has(split="learn"))),
    Claim("docs/results.md", r"learn on \d+ sessions, evaluate NUM \|",
          sessions(VSLA, has(split="evaluate"))),
    Claim("docs/results.md", r"all NUM entries\*\*", count("labeled/write_gate_v1.jsonl")),
    Claim("docs/results.md", r"conflicts \(NUM pairs\)", count(PAIRS)),
    Claim("docs/results.md", r"trust \(NUM records\)", count(RECORDS)),
    Claim("docs/systems.md", r"write gate, pass 3 \(NUM turns\)",
          count("labeled/write_gate_v1.jsonl")),
    Claim("docs/systems.md", r"trust \(NUM records\)", count(RECORDS)),
    Claim("docs/systems.md", r"conflicts \(NUM pairs\)", count(PAIRS)),
    Claim("docs/systems.md", r"search \(NUM queries", count(RETRIEVAL)),
    Claim("docs/gate.md", r"NUM of the \d+ substantive turns in the first real",
          count(VSLA, both(short, has(split="learn", label="substantive")))),
    Claim("docs/gate.md", r"of the NUM substantive turns in the first real",
          count(VSLA, has(split="learn", label="substantive"))),
    Claim("docs/quality.md", r"of the NUM\s+low-value rows of the bundled set",
          count("labeled/write_gate_v1.jsonl", has(label="low_value"))),
    Claim("docs/results.md", r"bundled trace sample \(NUM of \d+ rows non-empty",
          count(TRACES, has(has_empty_response=False))),
    Claim("docs/results.md", r"bundled trace sample \(\d+ of NUM rows non-empty", count(TRACES)),
    Claim("docs/results.md", r"rows non-empty; [^|]*\| \d+ \+ NUM \|",
          count(TRACES, has(has_empty_response=False))),
    Claim("docs/results.md", r"corpus_path=data/claude_code/vsla` \| \d+ \+ NUM \|", count(VSLA)),
    Claim("docs/quality.md", r"none of the NUM substantive ones",
          count("labeled/write_gate_v1.jsonl", has(label="substantive"))),
    Claim("docs/results.md", r"all NUM noise turns included",
          count("labeled/write_gate_v1.jsonl", has(label="noise"))),
    Claim("docs/operations.md", r"`data/claude_code/vsla/` \(NUM sessions\)",
          session_logs),
    Claim("docs/quality.md", r"these NUM records", count(RECORDS)),
    Claim("docs/quality.md", r"on the NUM scenarios \(memledger",
          count("mai/attribution_scenarios_v1.jsonl")),
    *(Claim("docs/quality.md", pattern, dev_lines("memory_records"))
      for pattern in (r"Trust score on NUM dev records", r"fitted on all NUM development records")),
    Claim("docs/quality.md", r"dev records \(5 folds\) and NUM test records",
          count(RECORDS_TEST)),
    *(Claim("docs/quality.md", pattern, dev_lines("conflict_pairs"))
      for pattern in (r"nine authors, NUM pairs", r"CV on NUM development pairs")),
    Claim("docs/quality.md", r"leave-one-file-out over its NUM files",
          lambda: len(dev_sets()["conflict_pairs"])),
    Claim("docs/quality.md", r"pairs: v1 \(NUM\)", count(PAIRS)),
    Claim("docs/quality.md", r"pairs: v1 \(\d+\), v2 \(NUM\)",
          count("conflicts/memory_pairs_v2.jsonl")),
    *(Claim("docs/quality.md", r"held-out splits \(" + r"\d+, " * index + "NUM",
            count(f"conflicts/memory_pairs_heldout_v{index + 1}.jsonl")) for index in range(4)),
    *(Claim("docs/quality.md", pattern, count(CONFLICT_TEST))
      for pattern in (r"null skips it; NUM pairs", r"test\n\s+split NUM pairs")),
    *(Claim("docs/quality.md", pattern, total(count("mai/attribution_scenarios_v1.jsonl"),
                                               count("mai/attribution_scenarios_v2.jsonl")))
      for pattern in (r"the NUM development scenarios \(v1 \+ v2",
                      r"fitted on all NUM development scenarios")),
    Claim("docs/quality.md", r"MAI on NUM development scenarios",
          total(count("mai/attribution_scenarios_v1.jsonl"),
                count("mai/attribution_scenarios_v2.jsonl"))),
    Claim("docs/quality.md", r"the test split \(NUM scenarios",
          count("mai/attribution_scenarios_heldout_v1.jsonl")),
    *(Claim("docs/quality.md", pattern, count("mai/attribution_scenarios_golden_style_v1.jsonl"))
      for pattern in (r"golden-style test split \(NUM scenarios",
                      r"golden_style_v1\.jsonl`, NUM scenarios")),
    Claim("docs/quality.md", r"golden_style_v1\.jsonl`, \d+ scenarios, NUM per label",
          count("mai/attribution_scenarios_golden_style_v1.jsonl",
                has(ground_truth="well_attributed"))),
    Claim("docs/phoenix.md", r"conflict_detection \(NUM pairs", count(
        PAIRS)),
    Claim("docs/phoenix.md", r"conflict_detection \(\d+ pairs; NUM dev",
          dev_lines("conflict_pairs")),
    Claim("docs/phoenix.md", r"conflict_detection \(\d+ pairs; [\d,]+ dev, NUM test",
          count(CONFLICT_TEST)),
    Claim("docs/phoenix.md", r"conflict_detection \([^|]*\| NUM runs", CONFLICT_RUNS),
    Claim("docs/phoenix.md", r"mqs_calibration \([^|]*\| NUM runs", TRUST_RUNS),
    *(Claim("docs/phoenix.md", rf"{run} \([^|]*\| [\d,]+ runs, NUM evaluations",
            times(2, runs)) for run, runs in (
        ("conflict_detection", CONFLICT_RUNS), ("mqs_calibration", TRUST_RUNS))),
    Claim("docs/phoenix.md", r"mqs_calibration \(NUM records",
          count(RECORDS)),
    Claim("docs/phoenix.md", r"mqs_calibration \(\d+ records; NUM dev", dev_lines(
        "memory_records")),
    Claim("docs/phoenix.md", r"mqs_calibration \(\d+ records; [\d,]+ dev, NUM test",
          count(RECORDS_TEST)),
]


# --- the committed example comparison and leaderboard -------------------------------------------


@cache
def example_table() -> dict[str, dict[str, str]]:
    """The example's comparison table, one row per pass: column title → cell."""
    section = EXAMPLE.read_text().partition("## Comparison")[2].partition("\n## ")[0]
    header, _, *body = [[cell.strip() for cell in line.strip("|").split("|")]
                        for line in section.splitlines() if line.startswith("|")]
    return {line[1]: dict(zip(header, line, strict=True)) for line in body}


def example(column: str, index: int = 0, pass_: str = "1") -> Callable[[], float]:
    """The `index`-th figure of the example comparison's cell (pass 1 unless told)."""
    return lambda: value(re.findall(NUMBER, example_table()[pass_][column])[index])


@cache
def board() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(BOARD.read_text())
    return loaded


def measured(system: str, benchmark: str, measure: str) -> str | None:
    """The leaderboard column of `benchmark … / measure` the system has a figure in, if any."""
    keys = [key for key in board()["cells"][system]
            if key.startswith(benchmark) and key.endswith(f" / {measure}")]
    return keys[0] if keys else None


def score(system: str, key: str, scale: float) -> Callable[[], float]:
    return lambda: scale * float(board()["cells"][system][key]["value"])


RECALL = "recall b − a (pp) [95% CI]"
JUDGE = "judge call rate b − a (pp) [95% CI]"


EXAMPLE_CLAIMS: list[Claim] = [
    Claim("docs/operations.md", r"keeps NUM fewer substantive entries", example(
        "kept only by a (entries)")),
    Claim("docs/operations.md", r"\(recall NUM% →", example("recall a (%)")),
    Claim("docs/operations.md", r"→ NUM%, [−-]", example("recall b (%)")),
    Claim("docs/operations.md", r"%, NUM pp \[", example(RECALL)),
    Claim("docs/operations.md", r"pp \[NUM, ", example(RECALL, 1)),
    Claim("docs/operations.md", r"pp \[[^,\]]+, NUM\], McNemar", example(RECALL, 2)),
    Claim("docs/operations.md", r"McNemar p = NUM\)", example("McNemar p")),
    Claim("docs/operations.md", r"to save NUM pp of\s+judge calls", times(-1, example(JUDGE))),
]


# docs/results.md's systems × benchmarks table: its columns, then each row's figures as
# (row, ` / `-separated piece of the cell, leaderboard benchmark and measure, scale)
SYSTEMS = ("reference", "memledger", "mem0", "my-memory", "team-memory")
RESULTS_ROWS = (
    (r"LoCoMo QA \(", 0, "QA (locomo10", "F1", 1),
    (r"LoCoMo QA: search", 0, "QA (locomo10", "search p50 ms", 1),
    (r"LoCoMo retrieval \(", 0, "retrieval (locomo10)", "nDCG@5", 1),
    (r"LoCoMo retrieval: recall", 0, "retrieval (locomo10)", "recall@5", 1),
    (r"LongMemEval retrieval", 0, "retrieval (longmemeval", "nDCG@5", 1),
    (r"write gate, three_pass", 0, "three_pass", "recall", 100),
    (r"write gate, three_pass", 1, "three_pass", "noise stored", 1),
    (r"write gate, three_pass", 2, "three_pass", "pre-judge", 100),
    (r"conflicts \(", 0, "conflicts", "precision", 1),
    (r"conflicts \(", 1, "conflicts", "recall", 1),
    (r"trust \(", 0, "trust", "Spearman", 1), (r"trust \(", 1, "trust", "Brier", 1))


LEADERBOARD_CLAIMS: list[Claim] = [
    Claim("docs/results.md", cell(row, 1 + column, part), score(system, key, scale))
    for row, part, benchmark, measure, scale in RESULTS_ROWS
    for column, system in enumerate(SYSTEMS)
    if (key := measured(system, benchmark, measure))]


# --- the bundled default runs, by their committed summary ---------------------------------------

THREE_PASS, HOLDOUT = "+experiment=three_pass", "+experiment=three_pass_holdout"
SEED_2 = f"{HOLDOUT} seed=2"
MEMORYD = f"{HOLDOUT} scorer=memoryd"
CALIBRATED = f"{MEMORYD} threshold=judge_quantile"
RESULTS, PASSES = "docs/results.md", range(3)
THREE_PASS_TABLE = r"pass \| substantive recall \[95% CI\] \| noise stored \| low-value"
SEEDS_TABLE = r"seed \| recall, passes"
ABLATIONS_TABLE = r"configuration \| substantive recall \| noise stored \| pre-judge"


def ci(pattern: str, side: int) -> str:
    """`pattern` (a cell, NUM its figure) moved to that figure's CI bound `[low–high]`."""
    return pattern.replace("NUM", r"[\d.]+% \[NUM" if side == 0 else r"[\d.]+% \[\d+–NUM")


def per_pass(doc: str, row: str, column: int, run: str, key: str, table: str = "") -> list[Claim]:
    """A cell of `figure / figure / figure`, one per pass."""
    return [Claim(doc, cell(row, column, index, table), in_summary(run, key, index, 100))
            for index in PASSES]


def trust(index: int, pick: Callable[[dict[str, Any]], float]) -> Callable[[], float]:
    """A figure of the trust score of what three_pass stored in pass `index`."""
    return lambda: pick(committed()[THREE_PASS]["passes"][index]["trust"])


def audits(pick: Callable[..., int]) -> Callable[[], float]:
    return lambda: pick(p["audits"] for p in committed()[THREE_PASS]["passes"])


DEFAULT_RUN_CLAIMS: list[Claim] = [
    # the first section's table and prose
    *per_pass(RESULTS, r"bundled \(`write_gate_v1`\), three_pass", 3, THREE_PASS, "recall"),
    *per_pass(RESULTS, r"bundled \(`write_gate_v1`\), three_pass", 5, THREE_PASS, "prejudge"),
    Claim(RESULTS, cell(r"bundled \(`write_gate_v1`\), three_pass", 4), in_summary(
        THREE_PASS, "noise_stored")),
    *per_pass(RESULTS, r"bundled, holdout, seed 0", 3, HOLDOUT, "recall"),
    *per_pass(RESULTS, r"bundled, holdout, seed 0", 5, HOLDOUT, "prejudge"),
    *(Claim(RESULTS, cell(r"bundled, holdout, worst of seeds", 3), in_summary(SEED_2, "recall",
                                                                              index, 100))
      for index in PASSES),
    Claim(RESULTS, cell(r"bundled, holdout, worst of seeds", 5), in_summary(SEED_2, "prejudge",
                                                                          scale=100)),
    *(Claim(RESULTS, rf"^\| bundled, holdout, seed 0 \|[^|\n]*\| {before}NUM", in_summary(
        HOLDOUT, key)) for before, key in (("learn ", "learn"), (r"learn \d+, evaluate ", "eval"))),
    Claim(RESULTS, r"holdout \(seed 0\) it keeps NUM%", in_summary(HOLDOUT, "recall", scale=100)),
    Claim(RESULTS, r"holdout \(seed 0\) it keeps [\d.]+% and\s+filters NUM%",
          in_summary(HOLDOUT, "prejudge", scale=100)),
    *(Claim(RESULTS, pattern, in_summary(SEED_2, "recall", scale=100)) for pattern in (
        r"never resembled \(NUM%", r"worst pass ≥ 97%: \*\*not met\*\* \(seed 2: NUM%")),
    # the bundled sets' tables
    *(claim for index in PASSES for claim in (
        Claim(RESULTS, cell(str(index + 1), column, table=THREE_PASS_TABLE),
              in_summary(THREE_PASS, key, index, scale))
        for column, key, scale in ((1, "recall", 100), (2, "noise_stored", 1),
                                   (4, "prejudge", 100), (5, "judge_calls", 1),
                                   (6, "content_score", 1), (7, "audits", 1)))),
    *(Claim(RESULTS, ci(cell(str(index + 1), column, table=THREE_PASS_TABLE), side),
            summary_bound(THREE_PASS, key, side, index, 100))
      for index in PASSES for column, key in ((1, "recall_ci95"), (4, "prejudge_ci95"))
      for side in (0, 1)),
    *(claim for seed in range(5) for claim in (
        *per_pass(RESULTS, rf"{seed}\b(?: \(default\))?", 1,
                  HOLDOUT if seed == 0 else f"{HOLDOUT} seed={seed}", "recall", SEEDS_TABLE),
        Claim(RESULTS, cell(rf"{seed}\b(?: \(default\))?", 3, table=SEEDS_TABLE),
              in_summary(HOLDOUT if seed == 0 else f"{HOLDOUT} seed={seed}", "prejudge",
                       scale=100)),
        Claim(RESULTS, cell(rf"{seed}\b(?: \(default\))?", 4, table=SEEDS_TABLE),
              in_summary(HOLDOUT if seed == 0 else f"{HOLDOUT} seed={seed}", "judge_calls")))),
    *(Claim(RESULTS, cell(row, column, table=ABLATIONS_TABLE), in_summary(run, key, scale=100))
      for row, run in ((r"logistic` \(default\)", HOLDOUT), (r"memoryd` \(faithful", MEMORYD),
                       (r"memoryd` with its cut calibrated", CALIBRATED))
      for column, key in ((1, "recall"), (3, "prejudge"))),
    Claim(RESULTS, r"three-pass curve \(NUM%", in_summary(THREE_PASS, "prejudge", 0, 100)),
    Claim(RESULTS, r"three-pass curve \([\d.]+% → NUM%", in_summary(THREE_PASS, "prejudge",
                                                                   scale=100)),
    Claim(RESULTS, r"worth \d+ points of filtering \(NUM%", in_summary(HOLDOUT, "prejudge",
                                                                      scale=100)),
    Claim(RESULTS, r"\(NUM–\d+ calls a pass in the three-pass run", audits(min)),
    Claim(RESULTS, r"\(\d+–NUM calls a pass in the three-pass run", audits(max)),
    Claim(RESULTS, r"where a fresh `three_pass` run filters NUM%", in_summary(
        THREE_PASS, "prejudge", scale=100)),
    # the run's closing sentence, the memoryd example, the served reference, the rejection store
    Claim("docs/index.md", r"found: Pass 3 kept NUM%", in_summary(THREE_PASS, "recall", scale=100)),
    *(Claim("docs/index.md", ci(r"found: Pass 3 kept NUM", side), summary_bound(
        THREE_PASS, "recall_ci95", side, scale=100)) for side in (0, 1)),
    Claim("docs/index.md", r"pass 3 keeps NUM% of\s+them", in_summary(MEMORYD, "recall",
                                                                    scale=100)),
    Claim("docs/index.md", r"while filtering NUM% before the judge", in_summary(
        MEMORYD, "prejudge", scale=100)),
    Claim("docs/index.md", r"it then keeps NUM% but filters nothing", in_summary(
        CALIBRATED, "recall", scale=100)),
    *(Claim("docs/systems.md", r"\(judge calls " + r"\d+ / " * index + "NUM",
            in_summary(THREE_PASS, "judge_calls", index)) for index in PASSES),
    *(Claim("docs/systems.md", r"pre-judge " + r"[\d.]+ /\s" * index + "NUM",
            in_summary(THREE_PASS, "prejudge", index, 100)) for index in PASSES),
    Claim("docs/systems.md", r"54\.5%, recall NUM% in each pass", in_summary(THREE_PASS, "recall",
                                                                          scale=100)),
    *(Claim("docs/systems.md", cell(r"write gate, pass 3", 1, part), in_summary(THREE_PASS, key,
                                                                              scale=scale))
      for part, key, scale in ((0, "recall", 100), (1, "noise_stored", 1),
                               (2, "judge_calls", 1))),
    Claim("docs/gate.md", r"against NUM% in every pass at 4,000", in_summary(HOLDOUT, "recall",
                                                                          scale=100)),
    # the trust score of the stored memories, as the run prints it
    *(Claim("docs/quality.md", rf"^{index + 1}\s+111\s+{before}NUM", trust(index, pick))
      for index in (0, 2) for before, pick in (
          ("", lambda t: t["mean"]), (r"[\d.]+ \[", lambda t: t["mean_ci95"][0]),
          (r"[\d.]+ \[[\d.]+–", lambda t: t["mean_ci95"][1]),
          (r"[\d.]+ \[[\d.–]+\]\s+", lambda t: t["p10"]),
          (r"[\d.]+ \[[\d.–]+\]\s+\d+/", lambda t: t["p50"]),
          (r"[\d.]+ \[[\d.–]+\]\s+\d+/\d+/", lambda t: t["p90"]))),
]


# --- the regression thresholds, as operations.md derives them -----------------------------------

@cache
def prejudge_check() -> dict[str, Any]:
    checks = yaml.safe_load((ROOT / "memeval" / "conf" / "regression" / "regression.yaml")
                            .read_text())["checks"]
    found: dict[str, Any] = next(c for c in checks if c["run"] == "write_gate"
                                 and c["metric"] == "passes.-1.prejudge_filter_rate")
    return found


THRESHOLD_CLAIMS: list[Claim] = [
    Claim("docs/operations.md", r"pre-judge rate between NUM%",
          lambda: 100 * min(prejudge_check()["measured"]["values"])),
    Claim("docs/operations.md", r"pre-judge rate between [\d.]+% and NUM%",
          lambda: 100 * max(prejudge_check()["measured"]["values"])),
    Claim("docs/operations.md", r"\(sd NUM\), so its threshold",
          lambda: prejudge_check()["measured"]["sd"]),
    Claim("docs/operations.md", r"so its threshold is NUM%",
          lambda: 100 * prejudge_check()["threshold"]),
]


CLAIMS = [*DATA_CARDS, *DOCS_ON_DATA, *EXAMPLE_CLAIMS, *LEADERBOARD_CLAIMS, *DEFAULT_RUN_CLAIMS,
          *THRESHOLD_CLAIMS]


@pytest.mark.parametrize("doc", sorted({claim.doc for claim in CLAIMS}))
def test_the_doc_figures_are_the_artefacts(doc: str) -> None:
    """One test per doc, naming every claim of it that is gone or disagrees."""
    wrong = []
    for claim in (claim for claim in CLAIMS if claim.doc == doc):
        figures, truth = claim.figures(), claim.truth()
        if not figures:
            wrong.append(f"/{claim.pattern}/ is no longer stated: update the claim")
        wrong += [f"{said!r}: the artefact says {truth:g}"
                  for said, figure in figures.items() if not agrees(figure, truth)]
    assert not wrong, "\n".join(wrong)


def test_a_drifted_figure_fails() -> None:
    """The comparison catches a figure off by one in its last digit, and no rounding."""
    assert agrees("92.0", 91.96) and agrees("6,219", 6219) and agrees("−7.1", -7.14)
    assert not agrees("90.2", 92.0) and not agrees("450", 1273) and not agrees("0.002", 0.008)
    assert re.findall(cell("total", 3).replace("NUM", NUMBER), "| **total** | 1 | 2 | **50** |",
                      re.MULTILINE) == ["50"]
