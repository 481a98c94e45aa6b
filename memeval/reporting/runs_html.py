"""The runs table as one self-contained HTML page (no external resources): a click on a header
sorts by that column (a few lines of inline script), the settings that differ between the runs
are highlighted, and each figure carries its 95% CI."""

from __future__ import annotations

import html
from collections.abc import Sequence

from memeval.reporting.leaderboard import shown_score
from memeval.reporting.report import STYLE
from memeval.reporting.runs_table import NONE, RunRow, RunsTable
from memeval.reporting.runs_text import setting_headers
from memeval.utils.redact import redact

DIFFERS = "differs"  # the class of a differing setting's header and cells
PAGE_STYLE = (STYLE + "body{max-width:none;margin:2em}"
              "th{cursor:pointer;white-space:nowrap;text-align:left}th:hover{background:#e4e4e4}"
              "td{text-align:left;white-space:nowrap}td.fig{text-align:right}"
              "td.note{white-space:normal;min-width:24em}"
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


def _cell(text: str, css: str = "", sort: str | None = None) -> str:
    attributes = (f" class='{css}'" if css else "") + (
        f" data-v='{html.escape(sort)}'" if sort is not None else "")
    return f"<td{attributes}>{html.escape(redact(text))}</td>"


def _row(row: RunRow, table: RunsTable) -> str:
    cells = [_cell(row.run), _cell(row.when), _cell(row.experiment or "?")]
    cells += [_cell(row.settings.get(key, NONE), DIFFERS, "" if key not in row.settings else None)
              for key in table.settings]
    for measure in table.measures:
        score = row.figures.get(measure)
        value = None if score is None else score.value
        cells.append(_cell(NONE if score is None else shown_score(score), "fig",
                           "" if value is None else repr(value)))
    cells.append(_cell("; ".join(row.notes), "note"))
    return "<tr>" + "".join(cells) + "</tr>"


def _header(names: Sequence[str], titles: Sequence[str], differs: Sequence[bool]) -> str:
    return "<tr>" + "".join(
        f"<th title='{html.escape(title)}'{f' class={DIFFERS!r}' if flag else ''}>"
        f"{html.escape(name)}</th>" for name, title, flag in zip(names, titles, differs,
                                                                 strict=True)) + "</tr>"


def page(table: RunsTable) -> str:
    fixed = ["run", "date", "experiment"]
    names = [*fixed, *setting_headers(table), *table.measures, "notes"]
    titles = [*fixed, *table.settings, *table.measures, "notes"]
    differs = [name in table.settings for name in titles]
    title = redact(f"memeval runs under {table.folder}")
    return "\n".join([
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{PAGE_STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p>{len(table.rows)} runs of {html.escape(', '.join(table.experiments) or '?')}. "
        f"Highlighted: the settings that differ between the runs. Click a header to sort.</p>",
        f"<p>Same in every run: {html.escape(redact(table.shared))}</p>",
        "<table class='runs'><thead>", _header(names, titles, differs), "</thead><tbody>",
        *(_row(row, table) for row in table.rows),
        "</tbody></table>",
        "<p>Figures: each experiment's headline scores, as on the leaderboard, with their 95% "
        "CIs.</p>",
        f"<script>{SORT_SCRIPT}</script></body></html>"])
