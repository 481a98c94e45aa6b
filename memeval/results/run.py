"""One run directory as an object: what notebooks, reports and sweep summaries read, so none of
them parses run files by hand."""

from __future__ import annotations

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
