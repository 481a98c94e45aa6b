"""The runs table as `python -m memeval runs` prints it: one table per experiment, so a column
never holds two experiments' figures; each row names its run, system, embedder and what it
read, then the experiment's headline figures as the run printed them (rates as percentages,
counts as counts). The settings that set a run apart follow the table, a line per run, so they
never push the figures off the screen. Every line is at most WIDTH columns; long values are cut
in the middle."""

from __future__ import annotations

from collections.abc import Sequence

from memeval.reporting.runs_table import NONE, RunRow, RunsTable
from memeval.reporting.table import clipped, column_blocks, short_key, wrapped
from memeval.utils.redact import redact

RUN_CHARS = 30  # a run's path: enough for multirun/DATE/TIME/JOB
CELL_CHARS = 22  # any other cell or header
LEGEND = ("run: its name (run_name=), else its directory; figures: each experiment's headline "
          "figures, as the run, its report, the leaderboard and Phoenix show them (their 95% CIs "
          "in --html and metrics.json); system: as it names itself; embedder: the model it "
          "embedded with; read: the data it read")


def setting_headers(table: RunsTable) -> list[str]:
    """Each differing setting by its shortest unambiguous name: a config group by its own name
    (`embedder`, not `embedder.name`), a key by its last part when no other ends alike."""
    names = [key.removesuffix(".name") for key in table.settings]
    return [short_key(name, names) for name in names]


def _cells(row: RunRow, measures: Sequence[str]) -> list[str]:
    figures = [row.figures[m].unit.shown(row.figures[m].value) if m in row.figures else NONE
               for m in measures]
    cells = [row.when, row.system, row.embedder, row.data, *figures]
    return [clipped(redact(row.name or row.run), RUN_CHARS),
            *(clipped(redact(c), CELL_CHARS) for c in cells)]


def _settings_lines(rows: Sequence[RunRow], table: RunsTable) -> list[str]:
    """Per run, the settings that set it apart (what is not the same in every run)."""
    headers = setting_headers(table)
    lines = []
    for row in rows:
        given = [f"{name}={row.settings[key]}" for key, name in zip(table.settings, headers,
                                                                    strict=True)
                 if row.settings.get(key, NONE) != NONE]
        if given:
            lines.append(wrapped(redact(f"{row.run}: {', '.join(given)}"), indent="  "))
    return lines


def _experiment(name: str, rows: Sequence[RunRow], table: RunsTable) -> list[str]:
    measures = table.measures(rows)
    header = ["run", "date", "system", "embedder", "read", *measures]
    lines = [f"{name} ({len(rows)} run{'s' * (len(rows) != 1)})",
             column_blocks([clipped(h, CELL_CHARS) for h in header],
                           [_cells(row, measures) for row in rows])]
    settings = _settings_lines(rows, table)
    if settings:
        lines += ["settings that set these runs apart:", *settings]
    return lines


def _heading(table: RunsTable) -> list[str]:
    runs, kinds = len(table.rows), table.experiments
    lines = [f"{runs} run{'s' * (runs != 1)} under {table.folder} ({', '.join(kinds) or '?'})"]
    lines.append(f"same in every run: {table.shared}")
    return [wrapped(redact(line)) for line in lines]


def render(table: RunsTable) -> str:
    lines = _heading(table)
    for name, rows in table.by_experiment().items():
        lines += ["", *_experiment(name, rows, table)]
    notes = [wrapped(redact(" ".join(f"{row.run}: {note}".split())), indent="  ")  # one para each
             for row in table.rows for note in row.notes]
    if notes:
        lines += ["", "notes:", *notes]
    if any(row.figures for row in table.rows):
        lines += ["", wrapped(LEGEND)]
    return "\n".join(lines)
