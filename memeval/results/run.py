"""One run directory as an object: what notebooks, reports and sweep summaries read, so none of
them parses run files by hand."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from memeval.results.run_dir import (
    METRICS,
    read_decisions,
    read_metrics,
    read_provenance,
    read_table,
)

PASS_COLUMNS = ("substantive_recall", "noise_stored", "low_value_filtered_rate",
                "prejudge_filter_rate", "judge_calls", "judge_call_saving", "entries")


@dataclass
class Run:
    path: Path
    metrics: dict[str, Any] = field(repr=False)

    @classmethod
    def load(cls, path: str | Path) -> Run:
        return cls(Path(path), read_metrics(path))

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def experiment(self) -> str:
        return str(self.metrics["experiment"])

    @property
    def fingerprint(self) -> str | None:
        """The replayed dataset's fingerprint (None for runs that replay no traces)."""
        dataset = self.metrics.get("dataset") or {}
        return dataset.get("fingerprint")

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
        arms = self.metrics.get("arms") or {"main": self.metrics.get("passes", [])}
        rows = [{"run": self.name, "arm": arm, "pass": p["pass"],
                 **{column: p.get(column) for column in PASS_COLUMNS}}
                for arm, passes in arms.items() for p in passes]
        return pd.DataFrame(rows)


def find_runs(root: str | Path) -> list[Run]:
    """Every run directory under `root` (a sweep's directory, or `runs/`), sorted by path."""
    return [Run.load(path.parent) for path in sorted(Path(root).rglob(METRICS))]
