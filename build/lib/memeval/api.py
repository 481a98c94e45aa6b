"""memeval from Python: run an experiment as `python -m memeval run` would and read its result.

    from memeval.api import evaluate
    run = evaluate("three_pass", ["embedder=hashing"])
    run.result.passes[-1].substantive_recall   # typed metrics (results.result.PassMetrics)
    run.decisions                              # one row per entry and pass (pandas)

The overrides are the command line's, checked the same way (a misspelt key is named, not
added); the run directory is the command's too, unless `run_dir` names one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memeval.config import check_overrides, compose, quote_values
from memeval.results.run import Run
from memeval.runner import run_experiment


def evaluate(experiment: str, overrides: Sequence[str] = (),
             run_dir: str | Path | None = None) -> Run:
    """Run `experiment` (a name from `python -m memeval list experiments`) with `overrides`
    and return the run it wrote. Raises what the command reports: ConfigError for bad settings;
    JudgeError, EmbeddingError or SystemFailure (after writing the results) when the judge, the
    embedder or the system under test failed on more than its allowed share."""
    args = quote_values([f"+experiment={experiment}", *overrides])
    check_overrides(args)
    if run_dir is None:
        run_dir = compose(args, with_hydra=True).hydra.run.dir
    run_experiment(compose(args), Path(run_dir))
    return Run.load(run_dir)
