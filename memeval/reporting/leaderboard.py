"""A leaderboard: memory systems × benchmarks, from run directories.

Each run gives its system the scores its experiment declares (reporting/outputs.py `Score`: the
write gate's recall, noise and pre-judge rate; trust's Spearman and Brier; conflicts' precision
and recall; retrieval's nDCG@k and recall@k per corpus; QA's F1, J and search latency), each
with its 95% CI. A run that failed (its metrics.json lists failures), never finished (no
metrics.json) or whose files are damaged is listed as failed, with why (the file, named), and
every other run keeps its figures. Where two runs give the same system the same score, the one
given later counts.

The JSON is versioned (`schema`, `version`): a reader checks both before trusting the fields.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memeval.reporting.outputs import Score, Section, outputs_of
from memeval.results.result import METRICS, UnreadableResult, reading
from memeval.results.run import CONFIG, Run, read_settings_file

SCHEMA, VERSION = "memeval.leaderboard", 1


@dataclass(frozen=True)
class Failed:
    system: str
    experiment: str
    run: str
    reason: str


@dataclass
class Board:
    systems: list[str] = field(default_factory=list)  # in the order first met
    columns: list[Score] = field(default_factory=list)  # value-free: benchmark, measure
    cells: dict[str, dict[str, tuple[Score, str]]] = field(default_factory=dict)
    failed: list[Failed] = field(default_factory=list)

    def add(self, system: str, score: Score, run: str) -> None:
        key = column_key(score)
        if key not in {column_key(c) for c in self.columns}:
            self.columns.append(Score(score.benchmark, score.measure, None,
                                      higher_is_better=score.higher_is_better))
        self.add_system(system)
        self.cells[system][key] = (score, run)

    def add_system(self, system: str) -> None:
        if system not in self.cells:
            self.systems.append(system)
            self.cells[system] = {}


def column_key(score: Score) -> str:
    return f"{score.benchmark} / {score.measure}"


def run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Each path that is a run directory (metrics.json or Hydra's record of one), or else the
    run directories one level inside it, sorted."""
    found: list[Path] = []
    for path in paths:
        if (path / METRICS).is_file() or (path / ".hydra").is_dir():
            found.append(path)
        else:
            found += sorted(p for p in path.iterdir() if p.is_dir()
                            and ((p / METRICS).is_file() or (p / ".hydra").is_dir()))
    return found


def _failed(path: Path, reason: str) -> Failed:
    """A run without figures: its system and experiment as its saved settings name them."""
    config: Any = {}
    for saved in (path / ".hydra" / CONFIG, path / CONFIG):
        with contextlib.suppress(OSError, ValueError):  # a damaged file names nothing
            config = read_settings_file(saved)
            break
    config = config if isinstance(config, dict) else {}
    system = config.get("system")
    system = system if isinstance(system, dict) else {}
    experiment = config.get("experiment")
    experiment = experiment if isinstance(experiment, dict) else {}
    name = system.get("target") or system.get("name") or "?"
    return Failed(str(name), str(experiment.get("name", "?")), str(path), reason)


def _scores(path: Path) -> tuple[str, list[Score]] | Failed:
    """The run's system and figures, or why it has none (failed, unfinished, damaged)."""
    if not (path / METRICS).is_file():
        return _failed(path, f"no {METRICS}: the run did not finish (its log is in the directory)")
    try:
        run = Run.load(path)
        system = run.result.system.name if run.result.system else "reference"
        if run.result.failures:
            return Failed(system, run.experiment, str(path), str(run.result.failures[0]))
        with reading(path / METRICS):
            return system, outputs_of(run.experiment).scores(run)
    except (OSError, UnreadableResult) as err:
        return _failed(path, str(err))


def build(paths: Sequence[Path]) -> Board:
    board = Board()
    for path in run_dirs(paths):
        found = _scores(path)
        if isinstance(found, Failed):
            board.failed.append(found)
            board.add_system(found.system)
            continue
        system, scores = found
        for score in scores:
            board.add(system, score, str(path))
    return board


def to_json(board: Board) -> dict[str, Any]:
    def cell(score: Score, run: str) -> dict[str, Any]:
        return {"value": score.value, "ci95": list(score.ci95) if score.ci95 else None,
                "run": run}

    return {"schema": SCHEMA, "version": VERSION, "systems": board.systems,
            "columns": [{"key": column_key(c), "benchmark": c.benchmark, "measure": c.measure,
                         "higher_is_better": c.higher_is_better} for c in board.columns],
            "cells": {system: {key: cell(*found) for key, found in cells.items()}
                      for system, cells in board.cells.items()},
            "failed": [vars(f) for f in board.failed]}


def shown_score(score: Score) -> str:
    if score.value is None:
        return "—"
    digits = 1 if abs(score.value) >= 10 else 3
    text = f"{score.value:.{digits}f}"
    low, high = score.ci95 or (None, None)
    return text if low is None or high is None else f"{text} [{low:.{digits}f}–{high:.{digits}f}]"


def sections(board: Board) -> list[Section]:
    import pandas as pd

    failed = {(f.system, f.experiment) for f in board.failed}
    rows = []
    for system in board.systems:
        row = {"system": system}
        for column in board.columns:
            found = board.cells[system].get(column_key(column))
            row[column_key(column)] = shown_score(found[0]) if found else ""
        rows.append(row)
    arrows = {column_key(c): f"{column_key(c)} {'↑' if c.higher_is_better else '↓'}"
              for c in board.columns}
    table = pd.DataFrame(rows, columns=["system", *arrows]).rename(columns=arrows)
    out = [Section("Systems × benchmarks", "Each cell: the figure and its 95% CI from one run "
                   "(↑ higher is better, ↓ lower); empty: no run of that benchmark, or the "
                   "system lacks the capability.", table=table)]
    if failed:
        out.append(Section("Failed runs", "These runs gave no figures; the table keeps "
                           "everyone else's.", table=pd.DataFrame(
                               [vars(f) for f in board.failed])))
    return out


def push(board: Board, base_url: str, timeout_s: float, name: str) -> str:
    """The table as a Phoenix dataset named `name`: one example per system, its figures as the
    output and their CIs as metadata. Returns the dataset's id."""
    from memeval.reporting.phoenix.rest import PhoenixREST

    table = to_json(board)
    examples = [{"id": f"system-{n}", "input": {"system": system},
                 "output": {key: cell["value"] for key, cell in cells.items()},
                 "metadata": {"ci95": {key: cell["ci95"] for key, cell in cells.items()},
                              "failed": [f["reason"] for f in table["failed"]
                                         if f["system"] == system]}}
                for n, (system, cells) in enumerate(table["cells"].items())]
    client = PhoenixREST(base_url, timeout_s)
    try:
        return client.create_dataset(name, f"{SCHEMA} v{VERSION}: systems × benchmarks", examples)
    finally:
        client.close()


def write(board: Board, out: Path) -> list[Path]:
    from memeval.reporting.report import render_html, render_markdown
    from memeval.utils.atomic import write_text_atomic

    out.mkdir(parents=True, exist_ok=True)
    title = "memeval leaderboard"
    parts = sections(board)
    files = {out / "leaderboard.json": json.dumps(to_json(board), indent=1),
             out / "leaderboard.md": render_markdown(title, parts, out),
             out / "leaderboard.html": render_html(title, parts)}
    for path, text in files.items():
        write_text_atomic(path, text)
    return list(files)
