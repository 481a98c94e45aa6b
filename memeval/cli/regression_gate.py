"""`python -m memeval gate`: recompute the gated metrics, compare them with the thresholds in
memeval/conf/regression/regression.yaml, print metric / value / threshold / verdict, write it as
JSON, and exit 1 naming every metric that regressed.

Thresholds are derived, not chosen: `--derive` runs every gated run under each seed in
`derive.seeds` and sets each threshold to the worst value seen, widened by `sd_multiplier`
standard deviations across those seeds (at least `min_margin`), so seed-to-seed noise never
fails the gate but a real regression does. The thresholds file records the data fingerprints
they were derived on; a run on other data is refused rather than compared.

The runs are kept (by default beside `--out`, in `<stem>-runs/`), so every run directory the gate
prints still exists for CI to archive; each gate replaces the previous gate's runs there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from memeval.regression.gate import THRESHOLDS, Runs, derive, evaluate, fresh_runs_dir, load, table
from memeval.regression.report import junit_xml, report
from memeval.user_errors import complain
from memeval.utils.atomic import write_atomic, write_text_atomic


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval gate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thresholds", type=Path, default=THRESHOLDS)
    parser.add_argument("--out", type=Path, default=Path("reports/gate.json"),
                        help="where the verdict table is written as JSON, with a top-level "
                             "`passed` and counts")
    parser.add_argument("--junit-xml", type=Path, metavar="PATH",
                        help="also write the verdicts as a JUnit XML report: one testsuite per "
                             "gated run, one testcase per check")
    parser.add_argument("--runs-dir", type=Path, metavar="DIR",
                        help="where the gated runs are made and kept (default: beside --out, "
                             "e.g. reports/gate-runs); the previous gate's runs there are "
                             "replaced")
    parser.add_argument("--only", action="append", metavar="RUN",
                        help="check (with --derive: re-derive) only this run (repeatable)")
    parser.add_argument("--override", action="append", default=[], metavar="RUN:KEY=VALUE",
                        help="a config override for one run, e.g. to see the gate fail")
    parser.add_argument("--derive", action="store_true",
                        help="re-derive every threshold from seed-to-seed variability and "
                             "rewrite the thresholds file")
    args = parser.parse_args(argv)
    if not args.thresholds.is_file():
        moved = f" (memeval/conf/gates/ is now memeval/conf/regression/: use {THRESHOLDS})" \
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
    runs_dir = args.runs_dir or args.out.with_name(f"{args.out.stem}-runs")
    try:
        fresh_runs_dir(runs_dir)
    except FileExistsError as err:
        parser.error(str(err))
    runs = Runs(runs_dir)
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
    write_text_atomic(args.out, json.dumps(report(rows, failures, runs_dir), indent=2) + "\n")
    written = [args.out]
    if args.junit_xml:
        write_atomic(args.junit_xml, junit_xml(rows))
        written.append(args.junit_xml)
    print(f"gate report: {', '.join(map(str, written))}; runs kept in {runs_dir}")
    for failure in failures:
        complain(f"memeval gate: REGRESSION: {failure}")
    return 1 if failures else 0
