"""The regression gate's work (`python -m memeval gate`, memeval/cli/regression_gate.py): the
gated runs, each check's figure looked up in a run's results and compared with its derived
threshold, and re-deriving the thresholds from seed-to-seed variability."""

from __future__ import annotations

import contextlib
import shutil
import statistics
import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from memeval.paths import CONF_DIR
from memeval.regression.report import (
    ABSENT,
    ERROR,
    OK,
    REFUSED,
    REGRESSION,
    shortfall,
)

if TYPE_CHECKING:  # the run machinery loads when a gate runs, not for --help
    from memeval.results.result import RunResult

THRESHOLDS = CONF_DIR / "regression" / "regression.yaml"
DIRECTIONS = ("at_least", "at_most")
LOOKUP_ERRORS = (KeyError, IndexError, AttributeError)  # a figure the run's results lack
RUNS_MARKER = ".memeval-gate-runs"  # marks a directory of gated runs the next gate may replace


@dataclass
class Check:
    metric: str  # dotted path into the run's result (as in metrics.json); `*`: a list's worst
    run: str
    direction: str
    why: str
    threshold: float | None = None
    measured: dict[str, Any] | None = None
    optional: bool = False  # the run may lack the figure (e.g. an optional extra not installed)

    def worst(self, values: list[float]) -> float:
        return min(values) if self.direction == "at_least" else max(values)

    def passes(self, value: float) -> bool:
        assert self.threshold is not None
        if self.direction == "at_least":
            return value >= self.threshold
        return value <= self.threshold


def lookup(result: Any, path: str, check: Check) -> float:
    """`passes.*.substantive_recall` → the worst pass; `passes.-1.x` → the last pass."""
    prefix, star, rest = path.partition("*")
    if not star:
        return float(_at(result, path))
    return check.worst([lookup(item, rest.lstrip("."), check)
                        for item in _at(result, prefix.rstrip("."))])


def _start(result: RunResult | Mapping[str, Any], path: str) -> Any:
    """Where a check's path starts: the run's header and passes (`passes.-1.x`), or else the
    sections of the type its experiment declared (`mqs.configured.spearman`). Metrics as
    written (a mapping) are walked from the top."""
    if isinstance(result, Mapping) or hasattr(result, path.split(".", 1)[0]):
        return result
    from memeval.components import load_components
    from memeval.reporting.outputs import outputs_of

    load_components()
    return result.of(outputs_of(result.experiment).findings)


def figure(result: RunResult | Mapping[str, Any], check: Check) -> float | None:
    """The check's figure; None when an optional check's figure is absent from the run."""
    try:
        return lookup(_start(result, check.metric), check.metric, check)
    except LOOKUP_ERRORS:
        if check.optional:
            return None
        raise


def _at(node: Any, path: str) -> Any:
    """The value at a dotted path: list steps are indices (negative from the end), mapping steps
    keys, and every other step an attribute of the typed result."""
    for part in filter(None, path.split(".")):
        if isinstance(node, Sequence):
            node = node[int(part)]
        elif isinstance(node, Mapping):
            node = node[part]
        else:
            node = getattr(node, part)
    return node


def load(path: Path = THRESHOLDS) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(path.read_text())
    for check in spec["checks"]:
        if check["direction"] not in DIRECTIONS:
            raise ValueError(f"{path}: {check['metric']}: direction must be one of {DIRECTIONS}")
        if check["run"] not in spec["runs"]:
            raise ValueError(f"{path}: {check['metric']}: unknown run '{check['run']}'")
    return spec


def run_metrics(overrides: list[str], seed: int, run_dir: Path) -> RunResult:
    from memeval.config import compose
    from memeval.results.result import load_result
    from memeval.runner import run_experiment

    cfg = compose([*overrides, f"seed={seed}", "plots=false", "progress=false",
                   "reporting.phoenix.enabled=false"])
    run_experiment(cfg, run_dir)
    return load_result(run_dir)


def fresh_runs_dir(path: Path) -> None:
    """An empty directory for this gate's runs, replacing the previous gate's, so what it holds
    matches the report; a directory the gate did not make is refused, never emptied."""
    if path.exists():
        if not (path / RUNS_MARKER).is_file() and (not path.is_dir() or any(path.iterdir())):
            raise FileExistsError(f"{path} holds files the gate did not make: choose another "
                                  f"directory for the runs (--runs-dir)")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    (path / RUNS_MARKER).write_text("runs made by `python -m memeval gate`; the next gate "
                                    "writing here replaces them\n")


Key = tuple[tuple[str, ...], int]


class Runs:
    """Each (overrides, seed) run at most once per command: the runs `--derive` makes for the
    gate's own seed are the ones the checks then read."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self._done: dict[Key, RunResult] = {}
        self._dirs: dict[Key, Path] = {}

    def run_dir(self, name: str, overrides: list[str], seed: int) -> Path:
        """`<run>-seed<seed>` under the work directory; numbered when the same run and seed
        are also made with other overrides (`--derive` with `--override`)."""
        key = (tuple(overrides), seed)
        if key not in self._dirs:
            path = self.work / f"{name}-seed{seed}"
            if path in self._dirs.values():
                path = path.with_name(f"{path.name}-{len(self._dirs)}")
            self._dirs[key] = path
        return self._dirs[key]

    def __call__(self, name: str, overrides: list[str], seed: int) -> RunResult:
        key = (tuple(overrides), seed)
        if key not in self._done:
            self._done[key] = run_metrics(overrides, seed, self.run_dir(name, overrides, seed))
        return self._done[key]


class Progress:
    """A line as each gated run starts and ends, with the time the rest should take at the
    pace so far: a gate runs for minutes, and its runs print only when they finish."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.seconds = total, 0, 0.0

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[None]:
        print(f"gate: run {self.done + 1}/{self.total}: {what}", flush=True)
        started = time.perf_counter()
        try:
            yield
        finally:
            self.done += 1
            self.seconds += time.perf_counter() - started
            left = self.total - self.done
            eta = f", about {self.seconds / self.done * left:.0f} s left" if left else ""
            print(f"gate: run {self.done}/{self.total} took "
                  f"{time.perf_counter() - started:.1f} s{eta}", flush=True)


def _fingerprints(result: RunResult, paths: list[str]) -> dict[str, str]:
    return {path: str(_at(_start(result, path), path)) for path in paths}


def _row(check: Check, value: float | None, verdict: str, run_dir: Path,
         error: str | None = None) -> dict[str, Any]:
    return {"metric": check.metric, "run": check.run, "value": value,
            "direction": check.direction, "threshold": check.threshold, "verdict": verdict,
            "why": check.why, "run_dir": str(run_dir), "error": error}


def evaluate(spec: dict[str, Any], extra: dict[str, list[str]], only: set[str] | None,
             runs: Runs) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per check of each run, and one failure line per regressed metric, run on other
    data, run that failed and figure missing. A failed run fails its checks (verdict `error`)
    and the other runs still go; on other data, the checks are `refused`, not compared."""
    rows: list[dict[str, Any]] = []
    failures: list[str] = []
    chosen = [(name, run) for name, run in spec["runs"].items() if not only or name in only]
    clock = Progress(len(chosen))
    for name, run in chosen:
        overrides = [*run["overrides"], *extra.get(name, [])]
        checks = [Check(**raw) for raw in spec["checks"] if raw["run"] == name]
        run_dir = runs.run_dir(name, overrides, spec["seed"])
        try:
            with clock.step(f"{name} ({' '.join(overrides)})"):
                result = runs(name, overrides, spec["seed"])
        except Exception as err:
            print(f"memeval gate: the {name} run failed:\n{traceback.format_exc()}",
                  file=sys.stderr)
            error = f"the run failed: {type(err).__name__}: {err} (see {run_dir})"
            failures.append(f"{name}: {error}")
            rows += [_row(check, None, ERROR, run_dir, error) for check in checks]
            continue
        expected = run.get("fingerprints", {})
        mismatches = [f"{path} is {found}, but the thresholds were derived on {expected[path]}"
                      for path, found in _fingerprints(result, list(expected)).items()
                      if found != expected[path]]
        failures += [f"{name}: {mismatch}: review the data change, then re-derive "
                     f"(python -m memeval gate --derive)" for mismatch in mismatches]
        for check in checks:
            try:
                value = figure(result, check)
            except LOOKUP_ERRORS as err:
                error = f"no such figure in the run's results ({type(err).__name__}: {err})"
                failures.append(f"{check.metric}: {error}")
                rows.append(_row(check, None, ERROR, run_dir, error))
                continue
            if mismatches:
                rows.append(_row(check, value, REFUSED, run_dir, "; ".join(mismatches)))
                continue
            verdict = ABSENT if value is None else OK if check.passes(value) else REGRESSION
            rows.append(_row(check, value, verdict, run_dir))
            if verdict == REGRESSION:
                failures.append(shortfall(rows[-1]))
    return rows, failures


def derive(spec: dict[str, Any], runs: Runs, only: set[str] | None = None) -> dict[str, Any]:
    """Every run's thresholds and fingerprints, or only those of the runs in `only` (the others
    are left as they were)."""
    settings = spec["derive"]
    chosen = [(name, run) for name, run in spec["runs"].items() if not only or name in only]
    clock = Progress(len(chosen) * len(settings["seeds"]))
    for name, run in chosen:
        seeded = []
        for seed in settings["seeds"]:
            with clock.step(f"{name} seed {seed}"):
                seeded.append(runs(name, run["overrides"], seed))
        run["fingerprints"] = _fingerprints(seeded[0], list(run.get("fingerprints", {})))
        for raw in spec["checks"]:
            if raw["run"] != name:
                continue
            check = Check(**raw)
            present = [figure(m, check) for m in seeded]
            values = [v for v in present if v is not None]
            if len(values) < len(present):
                continue  # an optional figure this install does not produce: left as it was
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            margin = max(settings["sd_multiplier"] * spread, settings["min_margin"])
            worst = check.worst(values)
            raw["threshold"] = round(worst - margin if check.direction == "at_least"
                                     else worst + margin, 4)
            raw["measured"] = {"seeds": list(settings["seeds"]),
                               "values": [round(v, 4) for v in values],
                               "worst": round(worst, 4), "sd": round(spread, 4),
                               "derived_on": datetime.now(UTC).date().isoformat()}
    return spec


def table(rows: list[dict[str, Any]]) -> str:
    from memeval.reporting.table import aligned

    header = ("metric", "run", "value", "threshold", "verdict")
    cells = [(r["metric"], r["run"], "—" if r["value"] is None else f"{r['value']:.4f}",
              ("≥ " if r["direction"] == "at_least" else "≤ ") + f"{r['threshold']:.4f}",
              r["verdict"]) for r in rows]
    return aligned(header, cells)
