"""One run directory as an object: what notebooks, reports and sweep summaries read, so none of
them parses run files by hand."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from memeval.results.result import RunResult, UnreadableResult, load_result
from memeval.results.run_dir import (
    METRICS,
    read_decisions,
    read_provenance,
    read_table,
)
from memeval.utils.bounded_yaml import MAX_CONFIG_BYTES, read_yaml

CONFIG = "config.yaml"
OVERRIDES = Path(".hydra") / "overrides.yaml"
# a job's overrides take a few hundred bytes; Hydra's parser takes seconds per hundred kB
MAX_OVERRIDES_BYTES = 64 * 2**10
HYDRA_DAY, HYDRA_TIME = re.compile(r"\d{4}-\d{2}-\d{2}"), re.compile(r"\d{2}-\d{2}-\d{2}")
# Settings that change how a run is shown or cached, never its results: free to differ on resume,
# and never what tells two runs' results apart.
PRESENTATION_KEYS = ("resume", "progress", "plots", "reporting", "cache_dir", "run_name", "tags")


def read_overrides(run_dir: Path) -> dict[str, Any] | None:
    """The job's command-line overrides as {key: value} (deletions dropped), None without
    Hydra's `.hydra/overrides.yaml`. Hydra's own grammar parses them: `x=0.95` is a float,
    `+experiment=y` is `experiment`."""
    path = run_dir / OVERRIDES
    if not path.is_file():
        return None
    from hydra.core.override_parser.overrides_parser import OverridesParser

    lines = read_settings_file(path, MAX_OVERRIDES_BYTES) or []
    if not isinstance(lines, list):
        raise UnreadableResult(f"{path}: not Hydra's list of overrides (a {type(lines).__name__})")
    parsed = OverridesParser.create().parse_overrides([str(line) for line in lines])
    return {o.key_or_group: o.value() for o in parsed if not o.is_delete()}


@dataclass
class Run:
    path: Path
    result: RunResult = field(repr=False)

    @classmethod
    def load(cls, path: str | Path) -> Run:
        return cls(Path(path), load_result(path))

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def experiment(self) -> str:
        return self.result.experiment

    @property
    def started(self) -> str | None:
        """When the run started, e.g. `2026-11-27 10:59:31 UTC`; for a run that did not record
        it, the local date and time Hydra named its directory by (None outside that layout)."""
        if self.result.started_at:
            return datetime.fromisoformat(self.result.started_at).strftime("%Y-%m-%d %H:%M:%S %Z")
        day = self.path.resolve().parent.name
        if HYDRA_DAY.fullmatch(day) and HYDRA_TIME.fullmatch(self.name):
            return f"{day} {self.name.replace('-', ':')}"
        return None

    @property
    def fingerprint(self) -> str | None:
        """The replayed dataset's fingerprint (None for runs that replay no traces)."""
        return self.result.fingerprint

    @cached_property
    def config(self) -> DictConfig:
        return read_config(self.path)

    @cached_property
    def overrides(self) -> dict[str, Any] | None:
        return read_overrides(self.path)

    def setting(self, key: str) -> Any:
        """A resolved config value by dotted key, e.g. `threshold.target_recall`."""
        return OmegaConf.select(self.config, key)

    @cached_property
    def provenance(self) -> dict[str, Any]:
        return read_provenance(self.path)

    @cached_property
    def decisions(self) -> pd.DataFrame:
        return read_decisions(self.path)

    def table(self, name: str) -> pd.DataFrame:
        return read_table(self.path, name)

    def passes(self) -> pd.DataFrame:
        """One row per measured pass (and arm) with the headline gate metrics."""
        rows = [{"run": self.name, "arm": arm, "pass": p.pass_no, **p.headline()}
                for arm, passes in self.result.by_arm().items() for p in passes]
        return pd.DataFrame(rows)


def read_config(run_dir: Path) -> DictConfig:
    """The run's resolved settings (config.yaml). memeval writes them resolved, so a value
    OmegaConf would resolve (`${...}`) is damage, refused: resolving `${a}${a}` nested a few
    levels would take unbounded time."""
    path = run_dir / CONFIG
    loaded = read_settings_file(path)
    if not isinstance(loaded, dict):
        raise UnreadableResult(f"{path}: not a run's settings (a {type(loaded).__name__})")
    found = _interpolation(loaded)
    if found is not None:
        raise UnreadableResult(f"{path}: holds an interpolation ({found[:80]!r}), which "
                               f"memeval never writes there (it writes settings resolved)")
    try:
        return OmegaConf.create(loaded)
    except OmegaConfBaseException as err:
        raise UnreadableResult(f"{path}: not a run's settings ({type(err).__name__}: "
                               f"{str(err).splitlines()[0]})") from None


def read_settings_file(path: Path, cap: int = MAX_CONFIG_BYTES) -> Any:
    """A run's YAML file (its settings, Hydra's overrides) as plain data, bounded in size,
    nesting and expansion (`read_yaml`); damage is UnreadableResult naming the file."""
    try:
        return read_yaml(path, cap)
    except ValueError as err:  # YamlRefused, FileTooLarge, UnicodeDecodeError
        raise UnreadableResult(f"{path}: {err}") from None


def _interpolation(node: Any) -> str | None:
    """The first string value holding `${`, walked without recursion."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += item.values()
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str) and "${" in item:
            return item
    return None


def natural_order(text: str) -> list[Any]:
    """A sort key that puts numbered names in number order: a sweep's job `10` after `2`."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def find_runs(root: str | Path) -> list[Run]:
    """Every run directory under `root` (a sweep's directory, or `runs/`), sorted by path."""
    return [Run.load(path.parent) for path in sorted(Path(root).rglob(METRICS))]


def latest_run(root: str | Path, experiments: Collection[str] = ()) -> Run:
    """The most recently written run under `root` (e.g. `runs/`), of one of `experiments` if
    given: what a notebook opens when it is not told which run to read."""
    runs = [run for run in find_runs(root) if not experiments or run.experiment in experiments]
    if not runs:
        kinds = f" of {', '.join(sorted(experiments))}" if experiments else ""
        raise FileNotFoundError(f"no run{kinds} under {root}: run one with `python -m memeval "
                                f"run +experiment=...`, or name its directory")
    return max(runs, key=lambda run: (run.path / METRICS).stat().st_mtime_ns)


def same_setting(a: Any, b: Any) -> bool:
    """Equal settings; floats within rounding, so 0.95 read from two YAML files always matches."""
    numbers = [isinstance(v, float | int) and not isinstance(v, bool) for v in (a, b)]
    if all(numbers):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def flat_settings(node: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as {dotted key: value} (e.g. `judge.name`; a list is one value)."""
    if isinstance(node, dict):
        found: dict[str, Any] = {}
        for key, value in node.items():
            found.update(flat_settings(value, f"{prefix}{key}."))
        return found
    return {prefix.rstrip("."): node}


def varying_keys(settings: Sequence[dict[str, Any]]) -> list[str]:
    """Keys whose value is not the same in every run (missing counts as a value)."""
    keys = sorted({key for s in settings for key in s})
    missing = object()
    return [key for key in keys
            if any(not same_setting(s.get(key, missing), settings[0].get(key, missing))
                   for s in settings[1:])]


def group_keys(keys: Sequence[str]) -> list[str]:
    """`keys` with a config group whose `name` is among them standing for all its keys:
    `embedder.name` alone rather than also `embedder.dim`, which follow from it."""
    groups = [key.removesuffix(".name") for key in keys if key.endswith(".name")]
    return [key for key in keys if not any(key.startswith(f"{group}.") and key != f"{group}.name"
                                           for group in groups)]


def run_settings(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Each run's settings: its job's overrides (`Run.overrides`) when every run has them, what
    was set rather than every setting that follows from it, such as the seeds derived from `seed`;
    else each resolved config, flattened."""
    overrides = [run.overrides for run in runs]
    if all(o is not None for o in overrides):
        return [o or {} for o in overrides]
    return [flat_settings(OmegaConf.to_container(run.config, resolve=True)) for run in runs]


def swept_settings(runs: Sequence[Run]) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """Per-run settings (`run_settings`), the swept keys, and the settings every run shares."""
    settings = run_settings(runs)
    swept = varying_keys(settings)
    overrides = runs[0].overrides
    if not swept and overrides is not None:  # one run, or identical runs: show what was set
        swept = sorted(k for k in settings[0] if k != "experiment")
    fixed = {k: v for k, v in settings[0].items() if k not in swept} if overrides else {}
    return settings, swept, fixed
