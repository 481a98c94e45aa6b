"""Checkpoints: an interrupted run resumes at its first unfinished step, nothing counted twice.

A step is a write-gate pass, or a unit of work that keeps no stores (a memory pool indexed into
a system and its questions asked). After each step, RUN/checkpoints/ receives `<step>.json`: its
results, and for a pass the gate's learning state (counters, the audit draws' random state), its
decisions and a copy of its stores (in `<step>/`); and the sha256 of every file the resume
relies on (those copies, the decisions, `settings.yaml`). Its presence marks the step finished.
A resumed run (`resume=true`, same directory, same settings) first checks every finished step
against those digests, so a missing, emptied or altered file is refused by name instead of
silently changing the results; then it takes finished steps from there, puts back the stores
and learning state of the last pass, and goes on from the next step. The unfinished step's
results were never saved, so none is counted twice; its embeddings and HTTP judge verdicts come
back from the caches.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from memeval.engine.gate.gate import Decision
from memeval.registry import ConfigError
from memeval.results.run import PRESENTATION_KEYS
from memeval.results.run_dir import CHECKPOINT_SETTINGS as SETTINGS_FILE
from memeval.results.run_dir import CHECKPOINTS
from memeval.systems.base import Ingestor
from memeval.utils.atomic import remove_stale_temps, write_atomic, write_text_atomic
from memeval.utils.bounded_json import read_capped, read_json
from memeval.utils.bounded_yaml import MAX_CONFIG_BYTES, checked_yaml, one_line
from memeval.utils.redact import redact
from memeval.utils.stopwatch import Stopwatch

CHECKPOINT_FILE = "a checkpoint file"  # what a size refusal calls the file
MAX_PASS_BYTES = 2**30  # a pass's metrics and table rows: megabytes for a large dataset
DECISIONS_FILE = "decisions.json"  # in each pass's snapshot folder, beside the store copies
ROWS = "rows"  # a step's results, in its `tables`
PASS_KEYS = ("dataset_fingerprint", "gate", "metrics", "tables", "extra", "files")
WAYS_OUT = ("restore it, or start over in a new run directory (the same command without "
            "resume=true and hydra.run.dir)")


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
    """The resolved settings a run's results depend on, as YAML: what a resume must match.
    Redacted, as every file a run writes: a password in a configured URL stays off the disk."""
    node = OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k not in PRESENTATION_KEYS])
    return redact(OmegaConf.to_yaml(node, resolve=True))


class Checkpoints:
    def __init__(self, run_dir: Path, dataset_fingerprint: Callable[[], str]) -> None:
        self.dir = run_dir / CHECKPOINTS
        self._fingerprint = dataset_fingerprint
        # per gate (its state dir): the last finished pass's snapshot, the store copies it holds
        # and its learning state
        self._finished: dict[Path, tuple[Path, set[str], dict[str, Any]]] = {}
        self._replaying: set[Path] = set()
        self._settings = ""
        self._saved: dict[str, dict[str, Any]] = {}  # finished steps, checked, by key
        self.spent = Stopwatch()  # checking, saving and restoring: the run's bookkeeping

    @property
    def saved(self) -> int:
        """Finished steps on disk."""
        return len(list(self.dir.glob("*.json"))) if self.dir.is_dir() else 0

    @property
    def started(self) -> bool:
        return (self.dir / SETTINGS_FILE).is_file()

    def start(self, cfg: DictConfig, resume: bool) -> None:
        """A resumed run must find every finished step whole and match the settings the
        interrupted one saved with them; both are checked before any work."""
        with self.spent.running():
            self._start(cfg, resume)

    def _start(self, cfg: DictConfig, resume: bool) -> None:
        self._settings = result_settings(cfg)
        path = self.dir / SETTINGS_FILE
        if not resume:
            return
        remove_stale_temps(self.dir)  # writes a killed run left unfinished
        saved_settings = _read_settings(path) if self.started else None
        self._saved = {file.stem: self._checked(file) for file in sorted(self.dir.glob("*.json"))}
        if saved_settings is None:
            raise ConfigError(f"resume=true, but {self.dir.parent} holds no interrupted run "
                              f"(no {CHECKPOINTS}/{SETTINGS_FILE})")
        changed = _changed_keys(saved_settings, self._settings)
        if changed:
            raise ConfigError(f"resume=true, but these settings differ from the interrupted "
                              f"run's: {', '.join(changed)}; resume with the same overrides, or "
                              f"start a new run directory")

    def _checked(self, path: Path) -> dict[str, Any]:
        """A finished step's checkpoint, with every file it relies on present and unchanged."""
        saved = _read_json(path)
        if not isinstance(saved, dict) or any(key not in saved for key in PASS_KEYS):
            raise ConfigError(f"{path} is damaged (not a pass checkpoint): {WAYS_OUT}")
        files = saved["files"]
        if not isinstance(files, dict):
            raise ConfigError(f"{path} is damaged (no file digests): {WAYS_OUT}")
        for name, digest in files.items():
            file = self.dir / name
            if not file.is_file():
                raise ConfigError(f"{file} is missing, and {path.name} relies on it: {WAYS_OUT}")
            if _sha256(file.read_bytes()) != digest:
                raise ConfigError(f"{file} differs from what {path.name} recorded (sha256): it "
                                  f"changed after that step finished; {WAYS_OUT}")
        return saved

    def begin(self) -> None:
        """From here on the run directory holds something to resume (at the latest, when its
        first step starts): a run stopped before any step finished resumes from the start, with
        what the caches kept (e.g. embeddings)."""
        with self.spent.running():
            if not self.started:
                write_text_atomic(self.dir / SETTINGS_FILE, self._settings)

    def run_pass(self, gate: Ingestor | None, key: str,
                 run: Callable[[], PassRecord]) -> PassRecord:
        """`run()` replays one pass on `gate` (None: a step that keeps no stores), unless an
        earlier attempt finished it."""
        saved = self._saved.get(key)
        if saved is not None:
            if saved["dataset_fingerprint"] != self._fingerprint():
                raise ConfigError(f"the dataset changed since the interrupted run (step {key}); "
                                  f"start a new run directory")
            snapshot = self.dir / key
            if gate is not None:
                stores = {name for name in saved["files"] if name.startswith(f"{key}/")}
                self._finished[gate.state_dir] = (snapshot, stores, saved["gate"])
            decisions = (_read_json(snapshot / DECISIONS_FILE)
                         if f"{key}/{DECISIONS_FILE}" in saved["files"] else [])
            return PassRecord(saved["metrics"], [Decision(**d) for d in decisions],
                              saved["tables"], saved["extra"])
        self.begin()
        if gate is not None:
            self.restored(gate)
        record = run()
        with self.spent.running():
            self._save(gate, key, record)
        return record

    def run_step(self, key: str, run: Callable[[], list[dict[str, Any]]]
                 ) -> list[dict[str, Any]]:
        """`run()`'s rows for one step that keeps no stores, unless an earlier attempt
        finished it."""
        return self.run_pass(None, key, lambda: PassRecord({}, [], {ROWS: run()})).tables[ROWS]

    def restored(self, gate: Ingestor) -> None:
        """`gate`'s stores and learning state as its last finished pass left them (empty before
        the first), once per run: before its next pass, whether `run_pass` runs it or, for a
        pass whose results live in memory only (a retrieval store's last), the caller."""
        with self.spent.running():
            if gate.state_dir not in self._replaying:
                self._replaying.add(gate.state_dir)
                self._restore(gate, *self._finished.get(gate.state_dir, (None, set(), None)))

    def _restore(self, gate: Ingestor, snapshot: Path | None, copies: set[str],
                 learning: dict[str, Any] | None) -> None:
        """Stores as the last finished pass left them (empty before the first), whatever the
        unfinished attempt added since."""
        for store in gate.stores:
            if store.path is None:
                continue
            if snapshot is not None and f"{snapshot.name}/{store.path.name}" in copies:
                shutil.copy2(snapshot / store.path.name, store.path)
            else:
                store.path.unlink(missing_ok=True)
            store.reload()
        if learning is not None:
            gate.restore_learning_state(learning)

    def _save(self, gate: Ingestor | None, key: str, record: PassRecord) -> None:
        files = {SETTINGS_FILE: _sha256((self.dir / SETTINGS_FILE).read_bytes())}
        if gate is not None:
            files.update(self._snapshot(gate, key, record.decisions))
        body = {"dataset_fingerprint": self._fingerprint(),
                "gate": gate.learning_state() if gate is not None else {},
                "metrics": record.metrics, "tables": record.tables, "extra": record.extra,
                "files": files}
        write_text_atomic(self.dir / f"{key}.json", json.dumps(body, default=_numpy_scalar))

    def _snapshot(self, gate: Ingestor, key: str, decisions: list[Decision]) -> dict[str, str]:
        """A copy of the pass's stores and its decisions, in `<key>/`: their digests by name."""
        snapshot = self.dir / key
        shutil.rmtree(snapshot, ignore_errors=True)
        snapshot.mkdir(parents=True)
        files = {}
        for store in gate.stores:
            store.sync()
            if store.path is not None and store.path.is_file():
                data = store.path.read_bytes()
                (snapshot / store.path.name).write_bytes(data)
                files[f"{key}/{store.path.name}"] = _sha256(data)
        # flat fields: vars() and a copied latency dict, 15x faster than asdict's deep copy
        written = json.dumps([{**vars(d), "latency_ms": dict(d.latency_ms)}
                              for d in decisions], default=_numpy_scalar).encode()
        write_atomic(snapshot / DECISIONS_FILE, written)
        files[f"{key}/{DECISIONS_FILE}"] = _sha256(written)
        return files

    def discard(self) -> None:
        """The run is complete and written: its checkpoints would only duplicate it."""
        shutil.rmtree(self.dir, ignore_errors=True)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_json(path: Path) -> Any:
    """A step's checkpoint, its size and nesting bounded (an undefined figure is NaN in it)."""
    try:
        return read_json(path, MAX_PASS_BYTES, CHECKPOINT_FILE, allow_nan=True)
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, JsonRefused, FileTooLarge
        raise ConfigError(f"{path} is damaged ({err}): {WAYS_OUT}") from None


def _read_settings(path: Path) -> dict[str, Any]:
    """The saved settings as a flat dict; text that is not a run's settings is damage (an
    anchor, an alias or deep nesting is refused before anything is expanded)."""
    try:
        text = read_capped(path, MAX_CONFIG_BYTES, CHECKPOINT_FILE).decode("utf-8")
        node = OmegaConf.to_container(OmegaConf.create(checked_yaml(text)))
    except (ValueError, yaml.YAMLError) as err:
        raise ConfigError(f"{path} is damaged ({one_line(err)}): {WAYS_OUT}") from None
    if not isinstance(node, dict) or "experiment" not in node:
        raise ConfigError(f"{path} is damaged (not a run's settings): {WAYS_OUT}")
    return _flatten(node)


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(node, dict):
        return {prefix: node}
    flat: dict[str, Any] = {}
    for key, value in node.items():
        flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _changed_keys(old: dict[str, Any], now: str) -> list[str]:
    """Dotted keys whose values differ, e.g. ['judge.error_rate']."""
    new = _flatten(OmegaConf.to_container(OmegaConf.create(now)))
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
