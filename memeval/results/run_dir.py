"""Write and read a self-describing run directory.

Layout: metrics.json (schema-versioned), decisions.parquet (one row per entry per pass),
config.yaml (resolved, redacted), provenance.json, figures/. Readers accept every schema version
so far. Until metrics.json is written, checkpoints/ holds what a run finished: its
`settings.yaml` marks the run partial, and `resume=true` finishes it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memeval.engine.gate.gate import Decision
from memeval.results.result import METRICS, SCHEMA_VERSION, RunResult, UnreadableResult
from memeval.results.result import read_metrics as read_metrics  # run files are read here
from memeval.utils.atomic import write_text_atomic
from memeval.utils.bounded_json import read_json
from memeval.utils.redact import redact

if TYPE_CHECKING:  # pandas (0.4 s to import) loads when a table is written or read
    import pandas as pd

DECISIONS = "decisions.parquet"
PROVENANCE = "provenance.json"
MAX_PROVENANCE_BYTES = 2**20  # commit, versions, command line and thread pools: a few kB
MISSING_OK = "; restore it, or delete it to read the run without its commit and versions"
CHECKPOINTS = "checkpoints"
CHECKPOINT_SETTINGS = "settings.yaml"  # written as a checkpointing run starts its work


def jsonable(value: Any) -> Any:
    """A value as plain JSON: mappings and sequences (numpy arrays too) recursively, numpy
    scalars as Python's, NaN and infinities as null."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray | list | tuple):
        return [jsonable(v) for v in value]
    return value


def decisions_frame(decisions: list[Decision]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for d in decisions:
        row = dict(vars(d))  # flat fields: no deep copy (asdict copies every latency dict)
        latency = row.pop("latency_ms")
        row.update({f"latency_{stage}_ms": ms for stage, ms in latency.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(path)


def write_run(run_dir: Path, metrics: dict[str, Any], decisions: list[Decision],
              config_yaml: str, provenance: dict[str, Any],
              tables: dict[str, list[dict[str, Any]]] | None = None) -> RunResult:
    """`tables` are an experiment's own per-item results (e.g. per-record scores), one
    NAME.parquet each, next to decisions.parquet (one row per entry per pass; may be empty).
    Returns the metrics as written, typed."""
    run_dir.mkdir(parents=True, exist_ok=True)
    _write_parquet(decisions_frame(decisions), run_dir / DECISIONS)
    for name, rows in (tables or {}).items():
        import pandas as pd

        _write_parquet(pd.DataFrame(rows), run_dir / f"{name}.parquet")
    write_text_atomic(run_dir / "config.yaml", redact(config_yaml))  # URLs may hold passwords
    write_text_atomic(run_dir / PROVENANCE, json.dumps(jsonable(provenance), indent=2))
    body = jsonable({"schema_version": SCHEMA_VERSION, **metrics})
    write_text_atomic(run_dir / METRICS, json.dumps(body, indent=2, ensure_ascii=False))
    return RunResult.from_dict(body, str(run_dir / METRICS))


def partial_run(run_dir: Path) -> str | None:
    """What a run directory without metrics.json but with checkpoints says of itself (how much
    it finished, how to finish it), so listings show it as partial, not as lost; None for any
    other directory."""
    folder = run_dir / CHECKPOINTS
    if (run_dir / METRICS).is_file() or not (folder / CHECKPOINT_SETTINGS).is_file():
        return None
    finished = sum(1 for _ in folder.glob("*.json"))
    return (f"partial: interrupted (or still running) with {finished} finished checkpoint(s) "
            f"in {CHECKPOINTS}/ and no {METRICS}; add resume=true hydra.run.dir={run_dir} to "
            f"its command to finish it")


def redact_in_place(*paths: Path) -> None:
    """Rewrite files redacted, each only if it holds a secret: Hydra writes `.hydra/config.yaml`,
    `hydra.yaml` and `overrides.yaml` (and a sweep's `multirun.yaml`) before a run starts, with
    every override as typed, a URL's password included."""
    for path in paths:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            clean = redact(text)
            if clean != text:
                write_text_atomic(path, clean)


def read_provenance(run_dir: str | Path) -> dict[str, Any]:
    """Commit, package versions, command line; {} for a run directory written without one."""
    path = Path(run_dir) / PROVENANCE
    if not path.is_file():
        return {}
    try:
        data = read_json(path, MAX_PROVENANCE_BYTES, "a run's provenance")
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, JsonRefused, FileTooLarge
        raise UnreadableResult(f"{path}: not a memeval run's provenance ({err}){MISSING_OK}"
                               ) from None
    if not isinstance(data, dict):
        raise UnreadableResult(f"{path}: not a memeval run's provenance (a JSON "
                               f"{type(data).__name__}, not an object){MISSING_OK}")
    return data


def read_decisions(run_dir: str | Path) -> pd.DataFrame:
    return _read_parquet(Path(run_dir) / DECISIONS)


def read_table(run_dir: str | Path, name: str) -> pd.DataFrame:
    path = Path(run_dir) / f"{name}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: this run wrote no '{name}' table")
    return _read_parquet(path)


def _read_parquet(path: Path) -> pd.DataFrame:
    """A run's table; one parquet cannot read is UnreadableResult naming the file."""
    import pandas as pd

    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        why = " ".join(str(err).split())[:300]
        raise UnreadableResult(f"{path}: not a table memeval wrote ({why})") from None
