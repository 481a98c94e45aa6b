"""memeval from Python: run an experiment as `python -m memeval run` would and read its result.

    from memeval.api import evaluate
    run = evaluate("three_pass", ["embedder=hashing"])
    run.result.passes[-1].substantive_recall   # typed metrics (results.result.PassMetrics)
    run.decisions                              # one row per entry and pass (pandas)

The overrides are the command line's, checked the same way (a misspelt key is named, not
added); the run directory is the command's too, unless `run_dir` names one. `system=` takes a
memory system object (docs/protocol.md) to run in place of `system=` on the command line:

    run = evaluate("three_pass", ["embedder=hashing"], system=MyMemory())
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from memeval.config import check_overrides, compose, expand_targets, quote_values
from memeval.log_redaction import redact_logs
from memeval.results.run import Run
from memeval.runner import run_experiment

_system: ContextVar[Any] = ContextVar("memeval_system")


def given_system() -> Any:
    """The object `evaluate(system=...)` was given: the factory target its run builds."""
    return _system.get()


def evaluate(experiment: str, overrides: Sequence[str] = (),
             run_dir: str | Path | None = None, system: Any | None = None) -> Run:
    """Run `experiment` (a name from `python -m memeval list experiments`) with `overrides`
    and return the run it wrote. `system`: a memory system object to put through it (the run
    closes it at the end). Raises what the command reports: ConfigError for bad settings;
    JudgeError, EmbeddingError or SystemFailure (after writing the results) when the judge, the
    embedder or the system under test failed on more than its allowed share."""
    extra = [] if system is None else [f"system={__name__}:{given_system.__name__}"]
    args = quote_values(expand_targets([f"+experiment={experiment}", *overrides, *extra]))
    check_overrides(args)
    if run_dir is None:
        run_dir = compose(args, with_hydra=True).hydra.run.dir
    redact_logs()  # the caller's log handlers write memeval's records redacted, as a command's do
    token = None if system is None else _system.set(system)  # checked at the boundary
    try:
        run_experiment(compose(args), Path(run_dir))
    finally:
        if token is not None:
            _system.reset(token)
    _record_overrides(Path(run_dir), args)
    return Run.load(run_dir)


def _record_overrides(run_dir: Path, args: Sequence[str]) -> None:
    """The overrides as Hydra records a command's (`.hydra/overrides.yaml`, redacted), so `runs`
    and the leaderboard tell this run's settings apart as they do a command's."""
    import yaml

    from memeval.utils.atomic import write_text_atomic
    from memeval.utils.redact import redact

    hydra = run_dir / ".hydra"
    if not (hydra / "overrides.yaml").exists():
        hydra.mkdir(exist_ok=True)
        write_text_atomic(hydra / "overrides.yaml", redact(yaml.safe_dump(list(args))))
