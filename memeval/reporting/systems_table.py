"""The printed summary of a `compare_systems` run, and its report: one table per capability, a row
per system, the paired difference with the first system beside it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from memeval.reporting.outputs import NUMBER
from memeval.reporting.table import Block, Note, Table, ci_suffix, pct, printed, wrapped
from memeval.results.sections import (
    Comparison,
    ConflictTable,
    GateRanking,
    Paired,
    SearchTable,
    TrustTable,
    WriteGateTable,
)


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _delta(entry: Paired | None, points: bool = False) -> str:
    """second − first [95% CI], or blank for the first system itself."""
    if entry is None or entry.delta is None:
        return ""
    scale, unit = (100.0, " pt") if points else (1.0, "")
    low, high = entry.delta_ci95
    assert low is not None and high is not None
    return f"{scale * entry.delta:+.3g}{unit} [{scale * low:+.3g}, {scale * high:+.3g}]"


WRITE_GATE_LEGEND = ("recall: human-labelled substantive entries kept; noise: noise entries "
                     "stored; pre-judge: entries filtered before the judge; saved: judge calls "
                     "saved, of all entries")


PAIRED_LEGEND = ("McNemar p, recall: on the substantive entries the recall Δ is measured on; "
                 "keep/drop: on every entry's decision, noise included")


def _write_gate(table: WriteGateTable) -> list[Block]:
    """The systems' figures, then each one's recall against the first's: one table would not fit
    a terminal."""
    header = ("system", "recall [95% CI]", "noise", "pre-judge", "judge calls", "saved")
    rows = [(name, pct(p.substantive_recall) + ci_suffix(p.substantive_recall_ci95),
             str(p.noise_stored), pct(p.prejudge_filter_rate), str(p.judge_calls),
             pct(p.judge_call_saving)) for name, p in table.systems.items()]
    paired = []
    for name in table.systems:
        entry = table.paired.get(name)
        paired.append((name, _delta(entry.recall if entry else None, points=True),
                       _num(entry.mcnemar_p if entry else None),
                       _num(entry.decisions_mcnemar_p if entry else None)))
    splits = f"splits {'+'.join(table.splits)}, " if table.splits else ""
    title = f"write gate ({splits}pass {table.pass_no})"
    return [Table(title, header, tuple(rows), WRITE_GATE_LEGEND),
            Table(f"{title}, against the first system",
                  ("system", "recall Δ [95% CI]", "McNemar p, recall", "McNemar p, keep/drop"),
                  tuple(paired), PAIRED_LEGEND),
            *(_ranking(table.ranking, title) if table.ranking else [])]


RANKING_LEGEND = ("cost: the weights times missed (substantive entries dropped), noise (noise "
                  "entries stored) and judged (entries sent to the judge), lower is better; same "
                  "rank: share of bootstrap resamples of the entries in which the system holds "
                  "its rank")


def _ranking(ranking: GateRanking, title: str) -> list[Block]:
    """The systems cheapest first, then how far apart each two neighbours are."""
    w = ranking.weights
    weights = f"{w['missed']:g}·missed + {w['noise']:g}·noise + {w['judged']:g}·judged"
    rows = [(str(r.rank), name, NUMBER.shown(r.cost, r.cost_ci95), pct(r.missed), pct(r.noise),
             pct(r.judged), pct(r.keeps_rank)) for name, r in ranking.systems.items()]
    apart = [(f"{n.worse} − {n.better}", NUMBER.difference(n.delta, n.delta_ci95),
              "yes" if n.separated else "no") for n in ranking.neighbours]
    blocks: list[Block] = [Table(
        f"{title}, ranked by cost = {weights}",
        ("rank", "system", "cost [95% CI]", "missed", "noise", "judged", "same rank"),
        tuple(rows), RANKING_LEGEND)]
    if apart:
        blocks.append(Table(f"{title}, ranking neighbours (paired over the same resamples)",
                            ("pair", "cost Δ [95% CI]", "CI excludes 0"), tuple(apart)))
    return blocks


def _trust(table: TrustTable) -> list[Block]:
    header = ("system", "Spearman", "Kendall", "Brier", "ECE", "Brier Δ vs first [95% CI]")
    rows = [(name, _num(r.spearman), _num(r.kendall), _num(r.brier), _num(r.ece),
             _delta(table.brier_vs_first[name]))
            for name, r in table.systems.items()]
    return [Table(f"trust ({table.records} labelled records)", header, tuple(rows))]


def _conflicts(table: ConflictTable) -> list[Block]:
    types = ("contradiction", "temporal", "semantic")
    header = ("system", "any P", "any R", *(f"{t[:6]}. R" for t in types),
              "correct Δ vs first [95% CI]")
    rows = []
    for name, r in table.systems.items():
        typed = [pct(r.recall_by_type[t]) if r.typed else "untyped" for t in types]
        rows.append((name, pct(r.precision), pct(r.recall), *typed,
                     _delta(table.correct_vs_first[name], points=True)))
    return [Table(f"conflicts ({table.pairs} labelled pairs)", header, tuple(rows))]


def _search(table: SearchTable) -> list[Block]:
    k = table.k
    header = ("system", f"nDCG@{k}", f"recall@{k}", "nDCG Δ vs first [95% CI]")
    rows = [(name, _num(entry.mean), _num(table.recall_vs_first[name].mean),
             _delta(entry)) for name, entry in table.ndcg_vs_first.items()]
    return [Table(f"search ({table.queries} queries over {table.memories} memories)", header,
                  tuple(rows))]


SECTIONS: dict[str, Callable[[Any], list[Block]]] = {
    "write_gate": _write_gate, "trust": _trust, "conflicts": _conflicts, "search": _search}


def systems_summary(tables: Mapping[str, Any], skipped: Mapping[str, Mapping[str, str]],
                    notes: Mapping[str, Mapping[str, Any]]) -> str:
    """The blocks as printed."""
    return printed(systems_blocks(Comparison.from_dict(tables), skipped, notes))


def systems_blocks(compared: Comparison, skipped: Mapping[str, Mapping[str, str]],
                   notes: Mapping[str, Mapping[str, Any]]) -> list[Block]:
    """The tables (metrics.json's `compare` section), what was left out and why, then each
    system's notes (e.g. a fallback in use), which a reader of the figures must know."""
    blocks = [block for what, table in compared.tables() for block in SECTIONS[what](table)]
    left_out = [f"{what}: {name} {why}" for what, names in skipped.items()
                for name, why in names.items()]
    if left_out:
        blocks.append(Note("Not measured", "not measured: " + "; ".join(left_out)))
    noted = [f"{name}, {key}: {value}" for name, said in notes.items()
             for key, value in said.items()]
    if noted:
        blocks.append(Note("Notes", "notes\n" + "\n".join(wrapped(line, indent="  ")
                                                          for line in noted)))
    return blocks
