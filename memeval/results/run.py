"""One run directory as an object: what notebooks, reports and sweep summaries read, so none of
them parses run files by hand."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from memeval.results.result import RunResult, load_result
from memeval.results.run_dir import (
    METRICS,
    read_decisions,
    read_provenance,
    read_table,
)


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
    def fingerprint(self) -> str | None:
        """The replayed dataset's fingerprint (None for runs that replay no traces)."""
        return self.result.fingerprint

    @cached_property
    def config(self) -> DictConfig:
        loaded = OmegaConf.load(self.path / "config.yaml")
        assert isinstance(loaded, DictConfig)
        return loaded

    @cached_property
    def overrides(self) -> dict[str, str]:
        """The settings given on the command line (Hydra's `.hydra/overrides.yaml`), by dotted
        key: what a sweep varied, as opposed to everything that follows from it."""
        path = self.path / ".hydra" / "overrides.yaml"
        given = OmegaConf.to_container(OmegaConf.load(path)) if path.is_file() else []
        assert isinstance(given, list)
        pairs = (str(item).split("=", 1) for item in given if "=" in str(item))
        return {key.lstrip("+~"): value for key, value in pairs}

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


def swept_settings(runs: Sequence[Run]) -> list[str]:
    """The command-line settings whose values differ between `runs`, in first-seen order."""
    keys = dict.fromkeys(key for run in runs for key in run.overrides)
    return [key for key in keys if len({run.overrides.get(key) for run in runs}) > 1]
