"""A leaderboard: memory systems × benchmarks, from run directories.

Each run gives its system the headline figures its experiment declares (reporting/outputs.py
`Score`: the write gate's recall, noise stored and pre-judge rate; trust's Spearman and Brier;
conflicts' precision and recall; retrieval's nDCG@k and recall@k per corpus; QA's LoCoMo F1,
mem0 F1, J and search latency), each with its 95% CI, shown as the run printed it.
compare_systems gives each system it compared its own figures. A run that failed (its
metrics.json lists failures), never finished (no metrics.json) or whose files are damaged is
listed as failed, with why; every other run keeps its figures.

Several runs may give one system figures on one benchmark; the board chooses in the open
(`CHOICES`, `--choose`): by default a run with the default configuration (latest first), else the
best on the benchmark's first figure with its configuration named beside the figure; or every
configuration as a row of its own. Every run used and every run left out is listed, with why. A
column whose figures came from runs with different embedders names each cell's embedder.

The JSON is versioned (`schema`, `version`): a reader checks both before trusting the fields.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memeval.reporting.outputs import Score, Section, items_of, outputs_of
from memeval.reporting.table import clipped, column_blocks, wrapped
from memeval.results.result import METRICS, UnreadableResult, reading
from memeval.results.run import CONFIG, PRESENTATION_KEYS, Run, read_settings_file
from memeval.results.run_dir import partial_run
from memeval.systems.reference.system import REFERENCE
from memeval.utils.redact import redact

SCHEMA, VERSION = "memeval.leaderboard", 2
DEFAULT = "defaults"  # a configuration that sets nothing the figures depend on
# not a configuration: what the benchmark already names (the experiment, its data), who runs it
# (the system) and how the run is shown or where it goes
NOT_CONFIGURATION = (*PRESENTATION_KEYS, "experiment", "system", "dataset", "hydra", "run_name",
                     "tags")
CHOICES = ("default", "all")  # default: a default run, else the best, named; all: a row each
MARK = "†"  # a figure from a configuration other than the defaults


@dataclass(frozen=True)
class Failed:
    system: str
    experiment: str
    run: str
    reason: str


@dataclass(frozen=True)
class Candidate:
    """One run's figures for one system on one benchmark."""

    system: str
    benchmark: str
    scores: tuple[Score, ...]
    run: str
    configuration: str  # DEFAULT, or the settings it was given, e.g. `embedder=hashing`
    embedder: str
    started: str
    name: str = ""  # what the user named the run (`run_name=`)

    @property
    def default(self) -> bool:
        return self.configuration == DEFAULT


@dataclass(frozen=True)
class Difference:
    """A system's figure against the first system's on the same benchmark: second − first,
    paired item by item with a bootstrap CI, or why it could not be."""

    key: str  # the figure's column
    system: str
    against: str
    shown: str  # the difference as shown (`-3.1 pt [-7.2, +0.9]`), or why there is none
    delta: float | None = None
    ci95: tuple[float | None, float | None] = (None, None)
    items: int = 0  # paired on


@dataclass
class Board:
    systems: list[str] = field(default_factory=list)  # in the order first met
    columns: list[Score] = field(default_factory=list)  # value-free: benchmark, measure
    cells: dict[str, dict[str, tuple[Score, Candidate]]] = field(default_factory=dict)
    failed: list[Failed] = field(default_factory=list)
    left_out: list[tuple[Candidate, str]] = field(default_factory=list)  # and why
    choice: str = CHOICES[0]
    differences: list[Difference] = field(default_factory=list)

    def add(self, row: str, candidate: Candidate) -> None:
        for score in candidate.scores:
            key = column_key(score)
            if key not in {column_key(c) for c in self.columns}:
                self.columns.append(Score(score.benchmark, score.measure, None,
                                          higher_is_better=score.higher_is_better,
                                          unit=score.unit))
            self.add_system(row)
            self.cells[row][key] = (score, candidate)

    def add_system(self, system: str) -> None:
        if system not in self.cells:
            self.systems.append(system)
            self.cells[system] = {}

    def used(self) -> list[Candidate]:
        """Each run a cell came from, once, in the order first met."""
        found: dict[tuple[str, str, str], Candidate] = {}
        for cells in self.cells.values():
            for _, candidate in cells.values():
                found.setdefault((candidate.run, candidate.system, candidate.benchmark),
                                 candidate)
        return list(found.values())

    def mixed_embedders(self, key: str) -> bool:
        """Whether a figure's cells came from runs with different embedders."""
        return len({c.embedder for cells in self.cells.values()
                    for k, (_, c) in cells.items() if k == key}) > 1


def column_key(score: Score) -> str:
    return f"{score.benchmark} / {score.measure}"


def run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Each path that is a run directory (metrics.json or Hydra's record of one), or else the
    run directories one level inside it, sorted."""
    found: list[Path] = []
    for path in paths:
        if _is_run(path):
            found.append(path)
        else:
            found += sorted(p for p in path.iterdir() if p.is_dir() and _is_run(p))
    return found


def _is_run(path: Path) -> bool:
    """A run's directory: its results, Hydra's record of it, or the checkpoints of a partial
    run."""
    return ((path / METRICS).is_file() or (path / ".hydra").is_dir()
            or partial_run(path) is not None)


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


def configuration(run: Run) -> str:
    """What the run was given that its figures depend on, beyond its benchmark and system:
    DEFAULT when nothing; a run without a record of its overrides (from Python) says so."""
    overrides = run.overrides
    if overrides is None:
        return "settings not recorded (a run from Python: see its config.yaml)"
    given = [f"{key}={value}" for key, value in sorted(overrides.items())
             if key.split(".")[0].lstrip("+~") not in NOT_CONFIGURATION]
    return redact(", ".join(given)) or DEFAULT


def _candidates(path: Path) -> list[Candidate] | Failed:
    """The run's figures by system and benchmark, or why it has none."""
    if not (path / METRICS).is_file():
        partial = partial_run(path)
        if partial is not None:
            return _failed(path, partial)
        if (path / ".hydra").is_dir() and time.time() - (path / ".hydra").stat().st_mtime < 3600:
            return _failed(path, f"no {METRICS} yet: still running, or stopped within the hour "
                                 f"(its log is in the directory)")
        return _failed(path, f"no {METRICS}: the run did not finish (its log is in the directory)")
    try:
        run = Run.load(path)
        system = run.result.system.name if run.result.system else "reference"
        if run.result.failures:
            return Failed(system, run.experiment, str(path), str(run.result.failures[0]))
        with reading(path / METRICS):
            scores = outputs_of(run.experiment).scores(run)
        setting, embedder = configuration(run), run.result.embedder or "—"
    except (OSError, UnreadableResult) as err:
        return _failed(path, str(err))
    grouped: dict[tuple[str, str], list[Score]] = {}
    for score in scores:
        grouped.setdefault((score.system or system, score.benchmark), []).append(score)
    return [Candidate(who, bench, tuple(found), str(path), setting, embedder, run.started or "",
                      run.result.run_name or "")
            for (who, bench), found in grouped.items()]


def _better(a: Candidate, b: Candidate) -> bool:
    """Whether `a` beats `b` on the benchmark's first figure (a missing figure never does)."""
    first, second = a.scores[0].value, b.scores[0].value
    if first is None or second is None:
        return second is None and first is not None
    return first > second if a.scores[0].higher_is_better else first < second


def _chosen(found: Sequence[Candidate]) -> Candidate:
    """A default run, the latest; else the best on the benchmark's first figure."""
    defaults = [c for c in found if c.default]
    if defaults:
        return max(defaults, key=lambda c: c.started)
    best = found[0]
    for candidate in found[1:]:
        if _better(candidate, best):
            best = candidate
    return best


def build(paths: Sequence[Path], choice: str = CHOICES[0]) -> Board:
    board = Board(choice=choice)
    by_benchmark: dict[tuple[str, str], list[Candidate]] = {}
    for path in run_dirs(paths):
        found = _candidates(path)
        if isinstance(found, Failed):
            board.failed.append(found)
            board.add_system(found.system)
            continue
        for candidate in found:
            by_benchmark.setdefault((candidate.system, candidate.benchmark), []).append(candidate)
    for (system, _), found in by_benchmark.items():
        if choice == "all":
            for candidate in found:
                row = system if candidate.default else f"{system} [{candidate.configuration}]"
                board.add(row, candidate)
            continue
        chosen = _chosen(found)
        board.add(system, chosen)
        why = ("a run with the default configuration was chosen" if chosen.default else
               f"no run with the default configuration: the best on "
               f"{chosen.scores[0].measure} was chosen")
        board.left_out += [(c, why) for c in found if c is not chosen]
    board.systems.sort(key=lambda system: system != REFERENCE)  # the yardstick comes first
    board.differences = _differences(board)
    return board


RESAMPLES = 2000  # of a difference's paired bootstrap CI


def _items(run: str, found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The run's figures item by item, as its experiment declares them (read once a run)."""
    if run not in found:
        try:
            loaded = Run.load(run)
            with reading(Path(run) / METRICS):
                found[run] = outputs_of(loaded.experiment).items(loaded)
        except (OSError, UnreadableResult, KeyError, ValueError):
            found[run] = {}
    return found[run]


def _difference(key: str, score: Score, first: tuple[Score, Candidate],
                mine: tuple[Score, Candidate], found: dict[str, dict[str, Any]]) -> Difference:
    """`mine` against `first`, item by item."""
    from memeval.metrics.paired import paired_delta

    system, against = mine[1].system, first[1].system
    a = items_of(_items(first[1].run, found), first[0])
    b = items_of(_items(mine[1].run, found), mine[0])
    if a is None or b is None:
        return Difference(key, system, against, "not paired: the figure is no mean over items")
    if set(a.index) != set(b.index):
        shared = len(set(a.index) & set(b.index))
        return Difference(key, system, against, f"not paired: measured on different items "
                                                f"({len(a)} and {len(b)}, {shared} shared)")
    b = b.loc[a.index]
    paired = paired_delta(a.to_numpy(), b.to_numpy(), resamples=RESAMPLES, seed=0)
    ci = (paired["delta_ci95"][0], paired["delta_ci95"][1])
    return Difference(key, system, against, score.unit.difference(paired["delta"], ci),
                      paired["delta"], ci, len(a))


def _differences(board: Board) -> list[Difference]:
    """Each figure two or more systems have, every later system's against the first's (the
    reference engine's, where it has the figure)."""
    found: dict[str, dict[str, Any]] = {}
    out = []
    for column in board.columns:
        key = column_key(column)
        having = [s for s in board.systems if key in board.cells[s]]
        for system in having[1:]:
            first, mine = board.cells[having[0]][key], board.cells[system][key]
            out.append(_difference(key, mine[0], first, mine, found))
    return out


def _cell_text(score: Score, candidate: Candidate, mixed: bool) -> str:
    marks = ("" if candidate.default else MARK) + (f" ({candidate.embedder})" if mixed else "")
    return score.shown + marks


def to_json(board: Board) -> dict[str, Any]:
    def cell(score: Score, candidate: Candidate) -> dict[str, Any]:
        return {"value": score.value, "ci95": list(score.ci95) if score.ci95 else None,
                "shown": score.shown, "unit": score.unit.name, "population": score.population,
                "run": candidate.run, "configuration": candidate.configuration,
                "embedder": candidate.embedder}

    def listed(candidate: Candidate) -> dict[str, Any]:
        return {"run": candidate.run, "name": candidate.name, "system": candidate.system,
                "benchmark": candidate.benchmark, "configuration": candidate.configuration,
                "embedder": candidate.embedder, "started": candidate.started}

    return {"schema": SCHEMA, "version": VERSION,
            "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "choice": board.choice,
            "systems": board.systems,
            "columns": [{"key": column_key(c), "benchmark": c.benchmark, "measure": c.measure,
                         "unit": c.unit.name, "higher_is_better": c.higher_is_better}
                        for c in board.columns],
            "cells": {system: {key: cell(*found) for key, found in cells.items()}
                      for system, cells in board.cells.items()},
            "runs_used": [listed(c) for c in board.used()],
            "runs_left_out": [{**listed(c), "why": why} for c, why in board.left_out],
            "differences": [{"key": d.key, "system": d.system, "against": d.against,
                             "shown": d.shown, "delta": d.delta,
                             "delta_ci95": list(d.ci95), "items": d.items}
                            for d in board.differences],
            "failed": [vars(f) for f in board.failed]}


def _linked(text: str, run: str, at: Path | None) -> str:
    """The cell as HTML, linked to its run's report when one was written (`at` None: text)."""
    if at is None:
        return text
    report = Path(run) / "report.html"
    if not report.is_file():
        return html.escape(text)
    return f"<a href='{html.escape(os.path.relpath(report, at.parent))}'>{html.escape(text)}</a>"


def sections(board: Board, at: Path | None = None) -> list[Section]:
    """The board as report sections; `at`: where the HTML page goes (its cells link to each
    run's report, relative to it); None: plain text cells."""
    import pandas as pd

    def text(value: str) -> str:
        return html.escape(value) if at is not None else value

    rows = []
    for column in board.columns:  # a row per figure, a column per system: fits a page
        key = column_key(column)
        row = {"benchmark": text(column.benchmark),
               "figure": text(f"{column.measure} {'↑' if column.higher_is_better else '↓'}")}
        for system in board.systems:
            found = board.cells[system].get(key)
            row[text(system)] = _linked(_cell_text(*found, board.mixed_embedders(key)),
                                        found[1].run, at) if found else ""
        rows.append(row)
    table = pd.DataFrame(rows)
    rule = ("every configuration as a row of its own, named beside the system" if
            board.choice == "all" else
            f"per system and benchmark, a run with the default configuration (the latest), else "
            f"the best on the benchmark's first figure, marked {MARK} (its configuration is in "
            f"the runs used)")
    out = [Section("Systems × benchmarks",
                   f"Each cell: the figure and its 95% CI as its run printed it (↑ higher is "
                   f"better, ↓ lower); empty: no run of that benchmark, or the system lacks the "
                   f"capability. Chosen: {rule}. A figure from runs with different embedders "
                   f"names each cell's."
                   + (" A figure links to its run's report, where one was written."
                      if at is not None else ""), table=table, html_cells=at is not None),
           Section("Runs used", "Where each row's figures came from.", table=pd.DataFrame(
               [{"system": c.system, "benchmark": c.benchmark, "run": c.name or c.run,
                 "configuration": c.configuration, "embedder": c.embedder,
                 "started": c.started} for c in board.used()]))]
    if board.differences:
        out.insert(1, Section(
            "Differences", "Each system's figure against the first system's on the same "
                           "benchmark: second − first (a rate's in percentage points), paired "
                           "item by item with a bootstrap 95% CI; runs on different items are "
                           "not compared.", table=pd.DataFrame(
                               [{"figure": text(d.key), "system": text(d.system),
                                 "against": text(d.against), "difference [95% CI]": d.shown,
                                 "items": d.items or ""} for d in board.differences]),
            html_cells=at is not None))
    if board.left_out:
        out.append(Section("Runs left out", "Runs with figures the board did not show, and "
                           "why.", table=pd.DataFrame(
                               [{"system": c.system, "benchmark": c.benchmark, "run": c.run,
                                 "configuration": c.configuration, "why": why}
                                for c, why in board.left_out])))
    if board.failed:
        out.append(Section("Failed runs", "These runs gave no figures; the table keeps "
                           "everyone else's.", table=pd.DataFrame(
                               [vars(f) for f in board.failed])))
    return out


def terminal(board: Board) -> str:
    """The table within the terminal's width: a row per figure, a column per system (the files
    hold every detail)."""
    header = ["benchmark", "figure", *(clipped(system, 24) for system in board.systems)]
    rows = [[clipped(c.benchmark, 40), f"{c.measure} {'↑' if c.higher_is_better else '↓'}", *(
        clipped(_cell_text(*board.cells[system][column_key(c)],
                           board.mixed_embedders(column_key(c))), 24)
        if column_key(c) in board.cells[system] else "" for system in board.systems)]
        for c in board.columns]
    marked = [f"{MARK} {c.system}, {c.benchmark}: {c.configuration} ({c.run})"
              for c in board.used() if not c.default]
    differences = [f"{d.system} − {d.against}, {d.key}: {d.shown}" for d in board.differences]
    return "\n".join([column_blocks(header, rows, keep=2), *(wrapped(m) for m in marked),
                      *(["differences (paired, 95% CI):"] if differences else []),
                      *(wrapped(d, indent="  ") for d in differences)])


def push(board: Board, base_url: str, timeout_s: float, name: str) -> str:
    """The table as the Phoenix dataset `name`, replacing the one of that name a previous push
    made (a leaderboard is one dataset, however often it is rebuilt): an example per system and
    figure, its input the system, benchmark and measure, its output the figure (value, CI, as
    shown) and the run it came from. Returns the dataset's id."""
    from memeval.reporting.phoenix.rest import PhoenixREST

    table = to_json(board)
    examples = [{"id": f"{system} / {key}", "input": {"system": system, "benchmark": column[
                    "benchmark"], "measure": column["measure"]},
                 "output": {field: cell[field] for field in ("value", "ci95", "shown", "unit")},
                 "metadata": {field: cell[field] for field in (
                     "run", "configuration", "embedder", "population")}}
                for system, cells in table["cells"].items()
                for key, cell in cells.items()
                for column in table["columns"] if column["key"] == key]
    examples += [{"id": f"failed {f['run']}", "input": {"system": f["system"],
                                                        "benchmark": f["experiment"],
                                                        "measure": "failed"},
                  "output": {"reason": f["reason"]}, "metadata": {"run": f["run"]}}
                 for f in table["failed"]]
    client = PhoenixREST(base_url, timeout_s)
    try:
        earlier = client.dataset_id(name)
        if earlier is not None:
            client.delete_dataset(earlier)
        return client.create_dataset(name, f"{SCHEMA} v{VERSION}: systems × benchmarks, made "
                                           f"{table['generated']}", examples)
    finally:
        client.close()


def write(board: Board, out: Path) -> list[Path]:
    from memeval.reporting.report import render_html, render_markdown
    from memeval.utils.atomic import write_text_atomic

    out.mkdir(parents=True, exist_ok=True)
    title = f"memeval leaderboard, {time.strftime('%Y-%m-%d %H:%M')}"
    files = {out / "leaderboard.json": json.dumps(to_json(board), indent=1),
             out / "leaderboard.md": render_markdown(title, sections(board), out),
             out / "leaderboard.html": render_html(title, sections(board,
                                                                   out / "leaderboard.html"))}
    for path, text in files.items():
        write_text_atomic(path, text)
    return list(files)
