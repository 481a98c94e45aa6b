"""`python -m memeval report RUN_DIR [OTHER_RUN_DIR]`: a run (or two, compared) as one page.

One run is written as report.html and report.md; two as compare_<A>_vs_<B>.html and .md (named
after the run directories), into --out or else the first run directory. The HTML is self-contained
(figures embedded), so it can be mailed or attached to CI; the Markdown twin links the figure
files. Both come from the same sections, read through the results API.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from memeval.user_errors import complain

# The report is built when the command runs: `report --help` loads nothing heavy.


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval report", description=__doc__)
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                        help="one run, or two to compare (the second against the first)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write (default: the first run directory)")
    parser.add_argument("--force", action="store_true",
                        help="compare runs on different dataset fingerprints anyway")
    options = parser.parse_args(args)
    if len(options.run_dirs) > 2:
        parser.error("give one run directory, or two to compare")
    from memeval.results.run_dir import partial_run

    for path in options.run_dirs:
        if not (path / "metrics.json").is_file():
            complain(f"memeval report: {path} is "
                     f"{partial_run(path) or 'not a run directory (no metrics.json)'}")
            return 2
    from memeval.components import load_components
    from memeval.reporting.compare import IncomparableRuns
    from memeval.reporting.report import write_report
    from memeval.results.result import UnreadableResult

    load_components()  # each experiment declares its report sections and figures
    try:
        html_path, md_path = write_report(options.run_dirs, options.out, options.force)
    except (IncomparableRuns, UnreadableResult, OSError) as err:  # each names its file
        complain(f"memeval report: {err}")
        return 2
    print(f"wrote {html_path}  (self-contained HTML)\n      {md_path}  (Markdown)")
    return 0
