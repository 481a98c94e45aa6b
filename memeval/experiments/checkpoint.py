"""Pass checkpoints: an interrupted run resumes at its first unfinished pass, nothing counted twice.

After each pass, RUN/checkpoints/ receives the pass's results and decisions, the gate's learning
state (counters, the audit draws' random state) and a copy of its stores, the JSON file last: its
presence marks the pass finished. A resumed run (`resume=true`, same directory, same settings)
takes finished passes from there, puts back the stores and learning state of the last one, and
replays from the next. The unfinished pass's decisions were never saved, so none is counted
twice; its embeddings and HTTP judge verdicts come back from the caches.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memeval.engine.atomic import write_text_atomic
from memeval.engine.gate.gate import Decision, Gate
from memeval.registry import ConfigError

CHECKPOINTS = "checkpoints"
SETTINGS_FILE = "settings.yaml"
# Settings that change how a run is shown or cached, never its results: free to differ on resume.
PRESENTATION_KEYS = ("resume", "progress", "plots", "reporting", "cache_dir")


@dataclass
class PassRecord:
    """One finished pass: its metrics entry, decisions and table rows (`extra`: anything else an
    experiment keeps per pass, e.g. the holdout's learning-phase metrics)."""

    metrics: dict[str, Any]
    decisions: list[Decision]
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def _numpy_scalar(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def result_settings(cfg: DictConfig) -> str:
    """The resolved settings a run's results depend on, as YAML: what a resume must match."""
    node = OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k not in PRESENTATION_KEYS])
    return OmegaConf.to_yaml(node, resolve=True)


class Checkpoints:
    def __init__(self, run_dir: Path, dataset_fingerprint: Callable[[], str]) -> None:
        self.dir = run_dir / CHECKPOINTS
        self._fingerprint = dataset_fingerprint
        # per gate (its state dir): the last finished pass's snapshot and learning state
        self._finished: dict[Path, tuple[Path, dict[str, Any]]] = {}
        self._replaying: set[Path] = set()
        self._settings = ""

    @property
    def saved(self) -> int:
        """Finished passes on disk."""
        return len(list(self.dir.glob("*.json"))) if self.dir.is_dir() else 0

    @property
    def started(self) -> bool:
        return (self.dir / SETTINGS_FILE).is_file()

    def start(self, cfg: DictConfig, resume: bool) -> None:
        """A resumed run must match the settings the interrupted one saved with its passes."""
        self._settings = result_settings(cfg)
        path = self.dir / SETTINGS_FILE
        if not resume:
            return
        if not self.started:
            raise ConfigError(f"resume=true, but {self.dir.parent} holds no interrupted run "
                              f"(no {CHECKPOINTS}/{SETTINGS_FILE})")
        changed = _changed_keys(path.read_text(), self._settings)
        if changed:
            raise ConfigError(f"resume=true, but these settings differ from the interrupted "
                              f"run's: {', '.join(changed)}; resume with the same overrides, or "
                              f"start a new run directory")

    def run_pass(self, gate: Gate, key: str, run: Callable[[], PassRecord]) -> PassRecord:
        """`run()` replays one pass on `gate`, unless an earlier attempt finished it."""
        saved_file = self.dir / f"{key}.json"
        if saved_file.is_file():
            saved = json.loads(saved_file.read_text())
            if saved["dataset_fingerprint"] != self._fingerprint():
                raise ConfigError(f"the dataset changed since the interrupted run (pass {key}); "
                                  f"start a new run directory")
            self._finished[gate.state_dir] = (self.dir / key, saved["gate"])
            return PassRecord(saved["metrics"], [Decision(**d) for d in saved["decisions"]],
                              saved["tables"], saved["extra"])
        if not self.started:  # from here on the run directory holds something to resume
            write_text_atomic(self.dir / SETTINGS_FILE, self._settings)
        if gate.state_dir not in self._replaying:
            self._replaying.add(gate.state_dir)
            self._restore(gate, *self._finished.get(gate.state_dir, (None, None)))
        record = run()
        self._save(gate, key, record)
        return record

    @staticmethod
    def _restore(gate: Gate, snapshot: Path | None, learning: dict[str, Any] | None) -> None:
        """Stores as the last finished pass left them (empty before the first), whatever the
        unfinished attempt added since."""
        for store in gate.stores:
            if store.path is None:
                continue
            saved = snapshot / store.path.name if snapshot is not None else None
            if saved is not None and saved.is_file():
                shutil.copy2(saved, store.path)
            else:
                store.path.unlink(missing_ok=True)
            store.reload()
        if learning is not None:
            gate.restore_learning_state(learning)

    def _save(self, gate: Gate, key: str, record: PassRecord) -> None:
        snapshot = self.dir / key
        shutil.rmtree(snapshot, ignore_errors=True)
        snapshot.mkdir(parents=True)
        for store in gate.stores:
            store.sync()
            if store.path is not None and store.path.is_file():
                shutil.copy2(store.path, snapshot / store.path.name)
        body = {"dataset_fingerprint": self._fingerprint(), "gate": gate.learning_state(),
                "metrics": record.metrics, "tables": record.tables, "extra": record.extra,
                # flat fields: vars() and a copied latency dict, 15x faster than asdict's deep copy
                "decisions": [{**vars(d), "latency_ms": dict(d.latency_ms)}
                              for d in record.decisions]}
        write_text_atomic(self.dir / f"{key}.json", json.dumps(body, default=_numpy_scalar))

    def discard(self) -> None:
        """The run is complete and written: its checkpoints would only duplicate it."""
        shutil.rmtree(self.dir, ignore_errors=True)


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(node, dict):
        return {prefix: node}
    flat: dict[str, Any] = {}
    for key, value in node.items():
        flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _changed_keys(before: str, now: str) -> list[str]:
    """Dotted keys whose values differ, e.g. ['judge.error_rate']."""
    old, new = (_flatten(OmegaConf.to_container(OmegaConf.create(text))) for text in (before, now))
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
