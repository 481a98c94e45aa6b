"""`python -m memeval leaderboard RUN_DIR... [--out DIR]`: memory systems × benchmarks from
runs, as Markdown, HTML and versioned JSON (memeval/reporting/leaderboard.py), and pushed to
Phoenix as a dataset when a server answers."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DESCRIPTION = "memory systems × benchmarks from run directories (Markdown, HTML, JSON)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval leaderboard",
                                     description=DESCRIPTION)
    parser.add_argument("runs", nargs="+", type=Path,
                        help="run directories, or folders holding them (one level down)")
    parser.add_argument("--out", type=Path, default=Path("leaderboard"),
                        help="where leaderboard.md, .html and .json go (default: leaderboard/)")
    parser.add_argument("--phoenix", default=os.environ.get("PHOENIX_COLLECTOR_ENDPOINT"),
                        help="a Phoenix server to push the table to as a dataset (default: "
                             "$PHOENIX_COLLECTOR_ENDPOINT; none: no push)")
    parser.add_argument("--choose", default="default", metavar="RULE",
                        help="when several runs give a system figures on one benchmark: "
                             "'default' shows a run with the default configuration (the "
                             "latest), else the best, marked and its configuration named; "
                             "'all' gives every configuration a row of its own")
    parser.add_argument("--phoenix-dataset", default="memeval leaderboard", metavar="NAME",
                        help="the Phoenix dataset the table goes to, replaced by each push "
                             "(default: %(default)s)")
    options = parser.parse_args(argv)
    from memeval.components import load_components
    from memeval.reporting.leaderboard import CHOICES, build, terminal, write

    if options.choose not in CHOICES:  # checked here: --help must not load the reporting code
        parser.error(f"--choose must be one of {', '.join(CHOICES)}, got {options.choose!r}")

    missing = [str(p) for p in options.runs if not p.is_dir()]
    if missing:
        print(f"memeval: not a directory: {', '.join(missing)}")
        return 2
    load_components()  # each run's experiment declares its scores
    board = build(options.runs, options.choose)
    if not board.systems:
        print(f"memeval: no run directories in {', '.join(map(str, options.runs))}")
        return 2
    written = write(board, options.out)
    print(terminal(board))
    if board.failed or board.left_out:
        print(f"{len(board.failed)} failed run(s), {len(board.left_out)} left out: listed in the "
              f"files below")
    for path in written:
        print(f"wrote {path}")
    if options.phoenix:
        _push(board, options.phoenix, options.phoenix_dataset)
    return 0


def _push(board: Any, base_url: str, name: str) -> None:
    """After the files are written: an unreachable Phoenix costs the push, not the table."""
    from memeval.reporting.leaderboard import push
    from memeval.reporting.phoenix.otlp import ExportError
    from memeval.utils.redact import redact

    try:
        push(board, base_url, 10.0, name)
    except (ExportError, OSError) as err:
        print(f"Phoenix: not pushed ({redact(str(err))}); the files above hold the table")
        return
    print(f"Phoenix: dataset '{name}' at {redact(base_url)}")
