"""`python -m memeval sweep SWEEP_DIR`: one row per run of a Hydra multirun (its last pass), the
swept settings next to the headline metrics, the Pareto-optimal runs and the default config marked;
over seeds, when the sweep varied them, the spread of each setting's runs (mean ± SD, worst seed).

Written into --out (default SWEEP_DIR): sweep_summary.csv, sweep_summary.md, pareto.png.
The swept settings come from each job's `.hydra/overrides.yaml` (the keys whose value differs
between runs); run directories without it fall back to diffing the resolved configs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from memeval.results.result import UnreadableResult
from memeval.sweep.summary import SENSE, SweepError, report_sweep
from memeval.user_errors import complain


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval sweep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep_dir", type=Path, help="a multirun's hydra.sweep.dir")
    parser.add_argument("--out", type=Path, default=None, help="default: SWEEP_DIR")
    parser.add_argument("--x", default="judge_call_saving", choices=sorted(SENSE))
    parser.add_argument("--y", default="substantive_recall", choices=sorted(SENSE))
    args = parser.parse_args(argv)
    try:
        print(report_sweep(args.sweep_dir, args.out, args.x, args.y))
    except (SweepError, UnreadableResult) as err:
        complain(f"memeval sweep: {err}")
        return 2
    return 0
