"""`python -m memeval gate`: recompute the gated metrics, compare them with the thresholds in
conf/regression/regression.yaml, print metric / value / threshold / verdict, write it as JSON, and
exit 1 naming every metric that regressed.

Thresholds are derived, not chosen: `--derive` runs every gated run under each seed in
`derive.seeds` and sets each threshold to the worst value seen, widened by `sd_multiplier`
standard deviations across those seeds (at least `min_margin`), so seed-to-seed noise never
fails the gate but a real regression does. The thresholds file records the data fingerprints
they were derived on; a run on other data is refused rather than compared.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

import conf
from memeval.config import compose
from memeval.reporting.table import aligned
from memeval.results.result import RunResult, load_result
from memeval.runner import run_experiment

THRESHOLDS = Path(conf.__file__).parent / "regression" / "regression.yaml"
DIRECTIONS = ("at_least", "at_most")


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


def figure(result: Any, check: Check) -> float | None:
    """The check's figure; None when an optional check's figure is absent from the run."""
    try:
        return lookup(result, check.metric, check)
    except (KeyError, IndexError, AttributeError):
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


def run_metrics(overrides: list[str], seed: int, work: Path) -> RunResult:
    cfg = compose([*overrides, f"seed={seed}", "plots=false", "progress=false",
                   "reporting.phoenix.enabled=false"])
    run_dir = work / f"seed{seed}-{len(list(work.iterdir()))}"
    run_experiment(cfg, run_dir)
    return load_result(run_dir)


class Runs:
    """Each (overrides, seed) run at most once per command: the runs `--derive` makes for the
    gate's own seed are the ones the checks then read."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self._done: dict[tuple[tuple[str, ...], int], RunResult] = {}

    def __call__(self, overrides: list[str], seed: int) -> RunResult:
        key = (tuple(overrides), seed)
        if key not in self._done:
            self._done[key] = run_metrics(overrides, seed, self.work)
        return self._done[key]


def _fingerprints(result: RunResult, paths: list[str]) -> dict[str, str]:
    return {path: str(_at(result, path)) for path in paths}


def evaluate(spec: dict[str, Any], extra: dict[str, list[str]], only: set[str] | None,
             runs: Runs) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    failures: list[str] = []
    for name, run in spec["runs"].items():
        if only and name not in only:
            continue
        result = runs([*run["overrides"], *extra.get(name, [])], spec["seed"])
        expected = run.get("fingerprints", {})
        actual = _fingerprints(result, list(expected))
        for path, found in actual.items():
            if found != expected[path]:
                failures.append(f"{name}: {path} is {found}, but the thresholds were derived on "
                                f"{expected[path]}: review the data change, then re-derive "
                                f"(python -m memeval gate --derive)")
        for raw in spec["checks"]:
            check = Check(**raw)
            if check.run != name:
                continue
            value = figure(result, check)
            if value is None:
                rows.append({"metric": check.metric, "run": name, "value": None,
                             "direction": check.direction, "threshold": check.threshold,
                             "verdict": "absent", "why": check.why})
                continue
            ok = check.passes(value)
            rows.append({"metric": check.metric, "run": name, "value": value,
                         "direction": check.direction, "threshold": check.threshold,
                         "verdict": "ok" if ok else "REGRESSION", "why": check.why})
            if not ok:
                sign = ">=" if check.direction == "at_least" else "<="
                failures.append(f"{check.metric} = {value:.4f}, needs {sign} "
                                f"{check.threshold:.4f} ({check.why})")
    return rows, failures


def derive(spec: dict[str, Any], runs: Runs, only: set[str] | None = None) -> dict[str, Any]:
    """Every run's thresholds and fingerprints, or only those of the runs in `only` (the others
    are left as they were)."""
    settings = spec["derive"]
    for name, run in spec["runs"].items():
        if only and name not in only:
            continue
        seeded = [runs(run["overrides"], seed) for seed in settings["seeds"]]
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
    header = ("metric", "run", "value", "threshold", "verdict")
    cells = [(r["metric"], r["run"], "—" if r["value"] is None else f"{r['value']:.4f}",
              ("≥ " if r["direction"] == "at_least" else "≤ ") + f"{r['threshold']:.4f}",
              r["verdict"]) for r in rows]
    return aligned(header, cells)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval gate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thresholds", type=Path, default=THRESHOLDS)
    parser.add_argument("--out", type=Path, default=Path("reports/gate.json"),
                        help="where the verdict table is written as JSON")
    parser.add_argument("--only", action="append", metavar="RUN",
                        help="check (with --derive: re-derive) only this run (repeatable)")
    parser.add_argument("--override", action="append", default=[], metavar="RUN:KEY=VALUE",
                        help="a config override for one run, e.g. to see the gate fail")
    parser.add_argument("--derive", action="store_true",
                        help="re-derive every threshold from seed-to-seed variability and "
                             "rewrite the thresholds file")
    args = parser.parse_args(argv)
    if not args.thresholds.is_file():
        moved = f" (conf/gates/ is now conf/regression/: use {THRESHOLDS})" \
            if args.thresholds.parent.name == "gates" else ""
        parser.error(f"--thresholds {args.thresholds}: no such file{moved}")
    spec = load(args.thresholds)
    extra: dict[str, list[str]] = {}
    for item in args.override:
        run, sep, override = item.partition(":")
        if not sep or run not in spec["runs"]:
            parser.error(f"--override {item!r}: expected RUN:KEY=VALUE with RUN one of "
                         f"{', '.join(spec['runs'])}")
        extra.setdefault(run, []).append(override)
    with tempfile.TemporaryDirectory(prefix="memeval-gate-") as tmp:
        runs = Runs(Path(tmp))
        if args.derive:
            derived = derive(spec, runs, set(args.only) if args.only else None)
            header = ("# CI regression thresholds, derived by `python -m memeval gate --derive`"
                      " (see\n# docs/operations.md, 'Regression gate'); edit `why`, runs and derive"
                      " settings, not the numbers.\n")
            args.thresholds.write_text(header + yaml.safe_dump(
                derived, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None))
            print(f"thresholds re-derived into {args.thresholds}")
        rows, failures = evaluate(spec, extra, set(args.only) if args.only else None, runs)
    print(table(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "failures": failures}, indent=2))
    for failure in failures:
        print(f"memeval gate: REGRESSION: {failure}", file=sys.stderr)
    return 1 if failures else 0
