"""The runs table as one self-contained HTML page (no external resources): a table per
experiment, each row linked to its run's report, naming its system, embedder and what it read,
its headline figures with their 95% CIs, and the settings that set it apart folded into one
cell, so the figures fit a 1280-pixel window. A click on a header sorts by that column (a few
lines of inline script)."""

from __future__ import annotations

import html
import os
import time
from collections.abc import Sequence
from pathlib import Path

from memeval.reporting.report import STYLE
from memeval.reporting.runs_table import NONE, RunRow, RunsTable
from memeval.reporting.runs_text import LEGEND, setting_headers
from memeval.utils.redact import redact

DIFFERS = "differs"  # the class of a differing setting's header and cells
PAGE_STYLE = (STYLE + "body{max-width:none;margin:1em}"
              "th{cursor:pointer;text-align:left}th:hover{background:#e4e4e4}"
              "td{text-align:left;max-width:12em;overflow-wrap:break-word}"
              "td.fig{text-align:right;white-space:nowrap}"
              "td.note{min-width:12em;font-size:12px}details ul{margin:0;padding-left:1em}"
              f".{DIFFERS}{{background:#fff3bf}}th.{DIFFERS}{{background:#ffe066}}"
              "th[data-dir=asc]::after{content:' ▲'}th[data-dir=desc]::after{content:' ▼'}")
# Sorts by the clicked column: numbers (a cell's data-v) as numbers, text naturally; a second
# click reverses; empty cells stay last.
SORT_SCRIPT = """
document.querySelectorAll("table.runs th").forEach((th, col) => th.addEventListener("click", () => {
  const body = th.closest("table").tBodies[0];
  const up = th.dataset.dir !== "asc";
  th.closest("tr").querySelectorAll("th").forEach(h => delete h.dataset.dir);
  th.dataset.dir = up ? "asc" : "desc";
  const key = row => row.cells[col].dataset.v ?? row.cells[col].textContent.trim();
  const rows = Array.from(body.rows).sort((a, b) => {
    const x = key(a), y = key(b);
    if (x === "" || y === "") return (x === "") - (y === "");
    const nx = Number(x), ny = Number(y);
    const order = isNaN(nx) || isNaN(ny) ? x.localeCompare(y, undefined, {numeric: true})
                                         : nx - ny;
    return up ? order : -order;
  });
  rows.forEach(row => body.appendChild(row));
}));
"""


def _cell(text: str, css: str = "", sort: str | None = None, link: str | None = None) -> str:
    attributes = (f" class='{css}'" if css else "") + (
        f" data-v='{html.escape(sort)}'" if sort is not None else "")
    shown = html.escape(redact(text))
    if link is not None:
        shown = f"<a href='{html.escape(link)}'>{shown}</a>"
    return f"<td{attributes}>{shown}</td>"


def _report_link(row: RunRow, table: RunsTable, at: Path) -> str | None:
    """The run's report page, relative to the page, when one was written."""
    report = table.folder / row.run / "report.html"
    return os.path.relpath(report, at.parent) if report.is_file() else None


def _settings_cell(row: RunRow, table: RunsTable) -> str:
    """The settings that set the run apart, folded: the figures stay in view."""
    given = [f"{name}={row.settings[key]}" for key, name in zip(
        table.settings, setting_headers(table), strict=True) if row.settings.get(key, NONE) != NONE]
    if not given:
        return "<td></td>"
    items = "".join(f"<li>{html.escape(redact(item))}</li>" for item in given)
    return (f"<td class='{DIFFERS}'><details><summary>{len(given)} setting"
            f"{'s' * (len(given) != 1)}</summary><ul>{items}</ul></details></td>")


def _row(row: RunRow, measures: Sequence[str], table: RunsTable, at: Path,
         extra: Sequence[str]) -> str:
    named = " ".join([row.name or row.run, *(f"#{tag}" for tag in row.tags)])
    cells = [_cell(named, link=_report_link(row, table, at)), _cell(row.when),
             _cell(row.system), _cell(row.embedder), _cell(row.data)]
    for measure in measures:
        score = row.figures.get(measure)
        value = None if score is None else score.value
        cells.append(_cell(NONE if score is None else score.shown, "fig",
                           "" if value is None else repr(value)))
    if "settings" in extra:
        cells.append(_settings_cell(row, table))
    if "notes" in extra:
        cells.append(_cell("; ".join(row.notes), "note"))
    return "<tr>" + "".join(cells) + "</tr>"


def _table(name: str, rows: Sequence[RunRow], table: RunsTable, at: Path) -> str:
    measures = table.measures(rows)
    extra = [*(["settings"] if any(row.settings for row in rows) else []),
             *(["notes"] if any(row.notes for row in rows) else [])]  # only where any has them
    titles = ["run (its report)", "date", "system", "embedder", "read", *measures, *extra]
    header = "<tr>" + "".join(f"<th>{html.escape(title)}</th>" for title in titles) + "</tr>"
    return "\n".join([f"<h2>{html.escape(name)}</h2><table class='runs'><thead>", header,
                      "</thead><tbody>", *(_row(row, measures, table, at, extra) for row in rows),
                      "</tbody></table>"])


def page(table: RunsTable, at: Path) -> str:
    """The page, for writing at `at` (its links to each run's report are relative to it)."""
    title = redact(f"memeval runs under {table.folder}")
    return "\n".join([
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{PAGE_STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p>{len(table.rows)} runs of {html.escape(', '.join(table.experiments) or '?')}, "
        f"listed {html.escape(time.strftime('%Y-%m-%d %H:%M'))}: a table per experiment. "
        f"Click a header to sort; open a run's settings to see what sets it apart.</p>",
        f"<p>Same in every run: {html.escape(redact(table.shared))}</p>",
        *(_table(name, rows, table, at) for name, rows in table.by_experiment().items()),
        f"<p>{html.escape(LEGEND[:1].upper() + LEGEND[1:])}.</p>",
        f"<script>{SORT_SCRIPT}</script></body></html>"])
