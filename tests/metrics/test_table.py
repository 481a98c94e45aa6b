"""The per-pass tables: recall on human labels, other label sources in a table of their own."""

from __future__ import annotations

import itertools

from memeval.metrics.gate_metrics import pass_metrics
from memeval.reporting.table import pass_table
from memeval.results.result import PassMetrics
from tests.metrics.test_gate_metrics import d


def table_pass(*sources: str) -> PassMetrics:
    rows = [d("h1", "substantive", "stored"), d("h2", "substantive", "content_score")]
    for source in sources:
        rows += [d(f"{source}-{i}", "substantive", outcome, source=source)
                 for i, outcome in enumerate(["stored", "stored", "dedup", "judge"])]
    return PassMetrics.from_dict({"pass": 1, "rejection_store_size": 7,
                                  **pass_metrics(rows, resamples=50, seed=0)})


def cells(table: str) -> dict[str, str]:
    header, row = table.splitlines()
    starts = [i for i, c in enumerate(header) if c != " " and (i == 0 or header[i - 2:i] == "  ")]
    bounds = [*starts, len(max(header, row, key=len)) + 1]
    return {header[a:b].strip(): row[a:b].strip() for a, b in itertools.pairwise(bounds)}


def table_under(printed: str, title: str) -> str:
    """The header and first row of the table printed under the line starting with `title`."""
    lines = printed.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(title))
    return "\n".join(lines[at + 1:at + 3])


def test_human_only_runs_have_no_labeller_column() -> None:
    printed = pass_table([table_pass()])
    assert cells(table_under(printed, "write gate: outcomes"))["recall [95% CI]"].startswith(
        "50.0%")
    assert "substantive entries kept, by other label sources" not in printed


def test_each_other_label_source_gets_its_own_column() -> None:
    printed = pass_table([table_pass("heuristic-v1", "judge")])
    outcomes = cells(table_under(printed, "write gate: outcomes"))
    assert outcomes["recall [95% CI]"].startswith("50.0%")  # still human rows only
    kept = cells(table_under(printed, "substantive entries kept, by other label sources"))
    assert kept["kept (heuristic-v1)"] == "75.0%" and kept["kept (judge)"] == "75.0%"
    assert cells(table_under(printed, "write gate: where the entries ended"))["rej. store"] == "7"
