"""Every run under a folder as one row: where and when, its experiment, the settings that set it
apart from the other runs listed, and its experiment's headline figures (the scores it declares
for the leaderboard). A run that cannot be read is a row with a note saying which file and why,
so one damaged run never hides the others."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.errors import HydraException
from omegaconf import DictConfig

from memeval.reporting.compare import shown_setting
from memeval.reporting.outputs import Score, outputs_of
from memeval.results.result import METRICS, reading
from memeval.results.run import (
    CONFIG,
    Run,
    group_keys,
    natural_order,
    read_settings_file,
    run_settings,
    varying_keys,
)
from memeval.results.run_dir import CHECKPOINT_SETTINGS, CHECKPOINTS, partial_run
from memeval.systems.factory import FACTORY

HYDRA = ".hydra"  # what Hydra writes as a run starts: a folder with it but no metrics.json died
EXPERIMENT_KEYS = ("experiment", "experiment.name")  # the table's own column
NAMING_KEYS = ("run_name", "tags")  # the run's own column
NOT_READ = (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError)
NONE = "—"
FILE_NAME = re.compile(r"[\w.-]+\.jsonl?\b")  # a file an experiment names among its inputs


@dataclass
class RunRow:
    run: str  # its directory, relative to the folder listed
    when: str  # when it wrote metrics.json (when it started, for a run without one)
    experiment: str | None
    settings: dict[str, str] = field(default_factory=dict)  # a differing setting's value, shown
    figures: dict[str, Score] = field(default_factory=dict)  # by `figure_key`
    notes: list[str] = field(default_factory=list)
    name: str = ""  # what the user named the run (`run_name=`), else its directory
    tags: tuple[str, ...] = ()
    system: str = NONE  # the system under test, as it names itself
    embedder: str = NONE  # the embedder's identity (its model), if the run built one
    data: str = NONE  # what the run read: its dataset, else its experiment's own inputs


def figure_key(score: Score) -> str:
    """A figure's column: its measure; where a run measures several systems on several
    benchmarks, after the system's name and the benchmark's (`memledger conflicts recall`)."""
    if not score.system:
        return score.measure
    return f"{score.system} {score.benchmark.partition(' (')[0]} {score.measure}"


@dataclass
class RunsTable:
    folder: Path
    rows: list[RunRow]
    settings: list[str]  # the settings that differ between the runs, as columns
    same: dict[str, str]  # what every run was given alike, shown
    from_overrides: bool  # settings compared as the jobs' overrides, not as resolved configs

    @property
    def experiments(self) -> list[str]:
        return sorted({row.experiment for row in self.rows if row.experiment})

    def measures(self, rows: Sequence[RunRow]) -> list[str]:
        """The figures' columns of these rows, in the order first met."""
        return list(dict.fromkeys(key for row in rows for key in row.figures))

    def by_experiment(self) -> dict[str, list[RunRow]]:
        """The rows grouped by experiment (in the order first met), so one column never holds
        two experiments' figures."""
        groups: dict[str, list[RunRow]] = {}
        for row in self.rows:
            groups.setdefault(row.experiment or "?", []).append(row)
        return groups

    @property
    def shared(self) -> str:
        """What every run has alike, in one line: what is not a column."""
        if self.from_overrides:
            return ", ".join([*(f"{key}={value}" for key, value in self.same.items()),
                              "every setting no run was given (its default)"])
        return "the rest of config.yaml (a config group shown by its name stands for its keys)"


def _when(path: Path) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))


def _configured_experiment(run_dir: Path) -> str | None:
    """The experiment a run was given, from its saved config: for a run without results."""
    for config in (run_dir / CONFIG, run_dir / HYDRA / CONFIG,
                   run_dir / CHECKPOINTS / CHECKPOINT_SETTINGS):
        try:
            name = read_settings_file(config)["experiment"]["name"]
        except NOT_READ:
            continue
        return str(name)
    return None


def _run_dirs(folder: Path) -> list[Path]:
    """Every run directory under `folder`, at any depth: one holding metrics.json, or Hydra's
    record or the checkpoints of a run that never wrote it."""
    found = {path.parent for path in folder.rglob(METRICS)}
    found |= {path.parent for path in folder.rglob(HYDRA) if path.is_dir()}
    found |= {path.parent.parent for path in folder.rglob(f"{CHECKPOINTS}/{CHECKPOINT_SETTINGS}")}
    return sorted(found, key=lambda path: natural_order(str(path.relative_to(folder))))


def _relative(message: str, run_dir: Path) -> str:
    """A message's paths relative to the run's directory, which its row names."""
    return message.replace(f"{run_dir}{os.sep}", "")


def _row(path: Path, folder: Path) -> tuple[RunRow, Run | None]:
    name = str(path.relative_to(folder)) if path != folder else "."
    metrics = path / METRICS
    if not metrics.is_file():
        partial = partial_run(path)
        started = path / HYDRA if (path / HYDRA).is_dir() else path / CHECKPOINTS
        return RunRow(name, _when(started), _configured_experiment(path),
                      notes=[partial or
                             f"no {METRICS}: the run did not finish, or is still running "
                             f"(its log is in the directory)"]), None
    try:
        run = Run.load(path)
    except NOT_READ as err:
        return RunRow(name, _when(metrics), _configured_experiment(path),
                      notes=[_relative(str(err), path)]), None
    result = run.result
    row = RunRow(name, _when(metrics), run.experiment, name=result.run_name or name,
                 tags=result.tags, system=result.system.name if result.system else "reference",
                 embedder=result.embedder or NONE)
    if result.failures:
        row.notes.append(f"failed: {result.failures[0]}")
    try:
        with reading(metrics):
            declared = outputs_of(run.experiment)
            row.figures = {figure_key(score): score for score in declared.scores(run)}
            read = [*([result.dataset.name or NONE] if result.dataset else []),
                    *(name for value in declared.inputs(run).values()
                      for name in FILE_NAME.findall(value))]
            row.data = ", ".join(dict.fromkeys(read)) or NONE
    except NOT_READ as err:  # UnreadableResult names the file, and so does an OSError
        row.notes.append(_relative(f"no headline figures: {err}", path))
    return row, run


def _configured(run: Run, row: RunRow) -> bool:
    """Whether the run's settings can be read; if not, its row says why."""
    try:
        _ = run.overrides, run.config
    except (*NOT_READ, HydraException) as err:
        row.notes.append(_relative(f"settings not read ({type(err).__name__}: {err})", run.path))
        return False
    return True


def _value(run: Run, settings: dict[str, Any], key: str) -> str:
    """A setting as the run had it: what it set, else its resolved default (a config group by
    its name)."""
    value = settings[key] if key in settings else run.setting(key)
    if isinstance(value, DictConfig):
        value = value.get("name", "default")
    return NONE if value is None else shown_setting(value)


def _settings(rows: Sequence[RunRow], runs: Sequence[Run]) -> tuple[list[str], dict[str, str]]:
    """The settings that differ between the runs, filled into their rows, and those every run
    was given alike (none when the runs are compared by their resolved configs)."""
    if not runs:
        return [], {}
    settings = run_settings(runs)
    varying = varying_keys(settings)
    shown = [key for key in group_keys(varying) if key not in EXPERIMENT_KEYS
             and key.split(".")[0] not in NAMING_KEYS]
    for row, run, found in zip(rows, runs, settings, strict=True):
        row.settings = {key: _value(run, found, key) for key in shown}
        if row.settings.get("system") == FACTORY and "system.target" in row.settings:
            del row.settings["system"]  # `system=module:callable`: its target names it
        if "embedder" in row.settings and row.embedder != NONE:
            row.settings["embedder"] = row.embedder  # the model, not the option's name
    same = {key: shown_setting(value) for key, value in settings[0].items()
            if _from_overrides(runs) and key not in varying and key not in EXPERIMENT_KEYS}
    return shown, same


def _from_overrides(runs: Sequence[Run]) -> bool:
    """Whether `run_settings` compared the runs by their jobs' overrides."""
    return all(run.overrides is not None for run in runs)


def collect(folder: Path, experiment: str | None = None) -> RunsTable:
    """The runs under `folder` (only `experiment`'s, if given)."""
    rows, runs, configured = [], [], []
    for path in _run_dirs(folder):
        row, run = _row(path, folder)
        if experiment is not None and row.experiment != experiment:
            continue
        rows.append(row)
        if run is not None and _configured(run, row):
            runs.append(run)
            configured.append(row)
    _, same = _settings(configured, runs)  # the line every run shares
    for rows_of, runs_of in _by_experiment(configured, runs):  # apart within each table
        _settings(rows_of, runs_of)
    shown = list(dict.fromkeys(key for row in rows for key in row.settings))
    return RunsTable(folder, rows, shown, same, _from_overrides(runs))


def _by_experiment(rows: Sequence[RunRow], runs: Sequence[Run]
                   ) -> list[tuple[list[RunRow], list[Run]]]:
    groups: dict[str | None, tuple[list[RunRow], list[Run]]] = {}
    for row, run in zip(rows, runs, strict=True):
        group = groups.setdefault(row.experiment, ([], []))
        group[0].append(row)
        group[1].append(run)
    return list(groups.values())


def as_json(table: RunsTable) -> dict[str, Any]:
    """The table as data: every row with its headline figures as the run printed them."""
    return {"folder": str(table.folder), "same": table.shared, "runs": [
        {"run": row.run, "name": row.name or row.run, "tags": list(row.tags),
         "when": row.when, "experiment": row.experiment, "system": row.system,
         "embedder": row.embedder, "read": row.data, "settings": row.settings,
         "notes": row.notes,
         "figures": {key: {"benchmark": s.benchmark, "measure": s.measure, "value": s.value,
                           "ci95": list(s.ci95) if s.ci95 else None, "shown": s.shown,
                           "unit": s.unit.name, "population": s.population,
                           "system": s.system} for key, s in row.figures.items()}}
        for row in table.rows]}
