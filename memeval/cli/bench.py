"""`python -m memeval bench --entries 250,1000`: what three passes cost against one embedding
pass, per stage, at several sizes.

Each size runs in a fresh process (so its peak RSS is its own) over N distinct labelled entries:
the bundled set cycled, each copy tagged so every text embeds anew. That process measures, in
this order: model load; one batch embedded untimed (a first batch pays one-off start-up); one
cold embedding pass of the N texts (no cache); three passes over 120 entries untimed, on a cache
of their own (the libraries the gate loads on first use are start-up too); the three-pass run
with a cold cache; the N texts
again through the run's now-warm embedding cache; then the three passes once more on the warm
cache under tracemalloc, for the Python heap peak (tracing made the three passes about three
times slower with the hashing embedder, so the timed run is never traced). Ratios come from one
process, minutes apart. The 1-minute load average at the start and the end is recorded: other
jobs on a shared machine can still slow one side more than the other.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from memeval.user_errors import complain

# The work of each mode is imported when it runs: `bench --help` loads nothing heavy.
EMBEDDERS_BENCHED = ("hashing", "minilm")


def parse_sizes(text: str) -> list[int]:
    """`1000` or `250,1000`: the entry counts to measure, each at least 1."""
    sizes = [int(part) for part in text.split(",")]
    if any(size < 1 for size in sizes):
        raise ValueError(f"entry counts must be at least 1, got {text}")
    return sizes


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m memeval bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=parse_sizes, default=[1000], metavar="N[,N…]",
                        help="entry counts, each measured in its own process")
    parser.add_argument("--embedder", choices=EMBEDDERS_BENCHED, default="minilm")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON")
    parser.add_argument("--scale", type=parse_sizes, default=None, metavar="N,N,…",
                        help="instead: the mixed three-pass run at these corpus sizes")
    parser.add_argument("--phoenix", action="store_true",
                        help="instead: push an --entries three-pass run to a fresh local Phoenix")
    parser.add_argument("--family", action="append", default=[], metavar="NAME",
                        help="with --scale: instead, this experiment family's cost at each size "
                             "(repeatable; all: every family; see memeval/bench/families.py)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="with --scale: a config override for every size (repeatable)")
    parser.add_argument("--warm-up", type=int, default=None, metavar="ROWS",
                        help="instead: a cold replay of ROWS corpus rows against a warm-up "
                             "(python -m memeval embed) and the replay after it")
    parser.add_argument("--ray", action="store_true",
                        help="with --warm-up: warm up on a Ray cluster (--address, --workers)")
    parser.add_argument("--address", default=os.environ.get("MEMEVAL_RAY_ADDRESS", "auto"),
                        help="with --ray: the cluster (default: $MEMEVAL_RAY_ADDRESS, else auto)")
    parser.add_argument("--workers", type=int, default=2,
                        help="with --ray: models embedding at once (default 2)")
    parser.add_argument("--suite", action="store_true",
                        help="instead: the main job, every experiment and the gate, cold and "
                             "warm, against the budgets in memeval/conf/bench_suite.yaml "
                             "(exit 1 past one)")
    parser.add_argument("--budgets", type=Path, default=None,
                        help="with --suite: another budgets file")
    parser.add_argument("--only", action="append", default=[], metavar="JOB",
                        help="with --suite: only this job (repeatable)")
    parser.add_argument("--contended", type=int, default=0, metavar="N",
                        help="with --suite: also each job warm beside N CPU-bound processes")
    parser.add_argument("--threads", action="store_true",
                        help="with --suite: also each job warm with one thread per pool and "
                             "with the libraries' own pools")
    for child in ("--entries-one", "--scale-one"):  # one size, in its own process
        parser.add_argument(child, type=int, default=None, help=argparse.SUPPRESS)
    return parser


def _phoenix(sizes: list[int], embedder: str, out: Path | None) -> None:
    from memeval.bench.phoenix import bench_phoenix

    result = bench_phoenix(sizes[0], embedder, out)
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key.ljust(width)}  {value}")


def _warm_up(options: argparse.Namespace) -> None:
    from memeval.backends.embedders.warm_up import Engine
    from memeval.bench.warm_up import bench_warm_up

    engine = Engine("ray", options.address, options.workers) if options.ray else Engine("local")
    result = bench_warm_up(options.warm_up, options.embedder, engine)
    if options.out is not None:
        options.out.write_text(json.dumps(result, indent=2))
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key.ljust(width)}  {value}")


def _suite(options: argparse.Namespace) -> int:
    from memeval.bench.suite import BUDGETS, as_json, bench_suite, load_budgets, table

    if options.contended < 0:
        raise SystemExit("memeval bench: --contended takes a number of processes, 0 or more")
    try:
        budgets = load_budgets(options.budgets or BUDGETS, options.only)
    except (OSError, ValueError, KeyError, TypeError) as err:
        complain(f"memeval bench: {err}")
        return 2
    results = bench_suite(budgets, options.contended, options.threads)
    if options.out is not None:
        options.out.write_text(json.dumps(as_json(results, budgets, options.contended),
                                          indent=2))
    print(table(results, budgets))
    failures = [line for measured in results for line in measured.failures]
    for line in failures:
        complain(f"memeval bench: {line}")
    return 1 if failures else 0


def main(args: list[str]) -> int:
    parser = _parser()
    options = parser.parse_args(args)
    from memeval.bench.families import check_families, run_family, scale_families
    from memeval.bench.passes import bench, measure
    from memeval.bench.scale import run_one, scale

    try:
        families = check_families(options.family)
    except ValueError as err:
        parser.error(str(err))
    if options.entries_one is not None:  # children print their JSON last
        print(json.dumps(measure(options.entries_one, options.embedder)))
    elif options.scale_one is not None and families:
        print(json.dumps(run_family(families[0], options.scale_one)))
    elif options.scale_one is not None:
        print(json.dumps(run_one(options.scale_one, options.embedder, options.override)))
    elif options.scale is not None and families:
        scale_families(families, options.scale, options.out)
    elif options.scale is not None:
        scale(options.scale, options.embedder, options.out, options.override)
    elif options.warm_up is not None:
        _warm_up(options)
    elif options.suite:
        return _suite(options)
    elif options.phoenix:
        if len(options.entries) != 1:
            parser.error("--phoenix measures one size: give --entries N")
        _phoenix(options.entries, options.embedder, options.out)
    else:
        bench(options.entries, options.embedder, options.out)
    return 0
