"""The runs table as `python -m memeval runs` prints it: every line at most WIDTH columns, long
values cut in the middle, and columns that do not fit continued in a table below."""

from __future__ import annotations

from dataclasses import replace

from memeval.reporting.leaderboard import shown_score
from memeval.reporting.runs_table import NONE, RunRow, RunsTable
from memeval.reporting.table import clipped, column_blocks, short_key, wrapped
from memeval.utils.redact import redact

RUN_CHARS = 36  # a run's path: enough for multirun/DATE/TIME/JOB
CELL_CHARS = 22  # any other cell or header


def setting_headers(table: RunsTable) -> list[str]:
    """Each differing setting by its shortest unambiguous name: a config group by its own name
    (`embedder`, not `embedder.name`), a key by its last part when no other ends alike."""
    names = [key.removesuffix(".name") for key in table.settings]
    return [short_key(name, names) for name in names]


def _cells(row: RunRow, table: RunsTable) -> list[str]:
    figures = [shown_score(replace(row.figures[m], ci95=None)) if m in row.figures else NONE
               for m in table.measures]
    cells = [row.when, row.experiment or "?", *(row.settings.get(k, NONE) for k in table.settings),
             *figures]
    return [clipped(redact(row.run), RUN_CHARS), *(clipped(redact(c), CELL_CHARS) for c in cells)]


def _heading(table: RunsTable) -> list[str]:
    runs, kinds = len(table.rows), table.experiments
    lines = [f"{runs} run{'s' * (runs != 1)} under {table.folder} ({', '.join(kinds) or '?'})"]
    lines.append(f"same in every run: {table.shared}")
    return [wrapped(redact(line)) for line in lines]


def render(table: RunsTable) -> str:
    header = ["run", "date", "experiment", *setting_headers(table), *table.measures]
    rows = [_cells(row, table) for row in table.rows]
    lines = [*_heading(table), "",
             column_blocks([clipped(h, CELL_CHARS) for h in header], rows)]
    notes = [wrapped(redact(" ".join(f"{row.run}: {note}".split())), indent="  ")  # one para each
             for row in table.rows for note in row.notes]
    if notes:
        lines += ["", "notes:", *notes]
    if table.measures:
        lines += ["", wrapped("figures: each experiment's headline scores (as on the leaderboard;"
                              " 95% CIs in metrics.json and --html)")]
    return "\n".join(lines)
