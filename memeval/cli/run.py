"""`python -m memeval run +experiment=NAME [key=value …]`: one experiment (or a multirun) through
Hydra, its files redacted, a failed run's empty directory removed."""

from __future__ import annotations

import contextlib
import io
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

from memeval.user_errors import report_user_error, user_error_types

HYDRA_FILES = {"config.yaml", "hydra.yaml", "overrides.yaml"}


def _discard_if_unused(run_dir: Path, log_name: str) -> None:
    """A run that failed before writing anything leaves no directory behind: one holding only
    Hydra's `.hydra/` and its log is removed, then the folders above it that this leaves empty
    (`runs/DATE/`) up to the working directory, which is never removed."""
    import shutil

    run_dir, cwd = run_dir.resolve(), Path.cwd().resolve()
    if not run_dir.is_dir() or run_dir in (cwd, *cwd.parents):
        return
    hydra_dir = run_dir / ".hydra"
    if not ({p.name for p in run_dir.iterdir()} <= {".hydra", log_name}
            and (not hydra_dir.is_dir() or {p.name for p in hydra_dir.iterdir()} <= HYDRA_FILES)):
        return
    shutil.rmtree(run_dir, ignore_errors=True)
    for parent in run_dir.parents:
        if parent == cwd or not parent.is_relative_to(cwd) or any(parent.iterdir()):
            break
        parent.rmdir()


def main(args: list[str]) -> int:
    if {"-h", "--help"}.intersection(args):  # Hydra's help composes every option: seconds
        from memeval.catalogue.run_help import run_help

        print(run_help())
        return 0
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import DictConfig

    from memeval.components import load_components
    from memeval.config import (
        check_overrides,
        expand_targets,
        quote_values,
        register_resolvers,
    )
    from memeval.log_redaction import redact_logs
    from memeval.reporting.table import wrapped
    from memeval.results.run_dir import redact_in_place
    from memeval.runner import run_experiment
    from memeval.utils.disk import ensure_room
    from memeval.utils.redact import redact

    register_resolvers()
    user_errors = user_error_types()
    args = quote_values(expand_targets(args))
    try:
        load_components()  # before Hydra: a plugin's YAML options join its search path
        if "--hydra-help" not in args:  # Hydra prints its flags and exits: nothing to check
            check_overrides(args)
            ensure_room(_output_dir(args), HYDRA_ROOM)
    except user_errors as err:
        report_user_error(err)
        return 2
    status = {"code": 0}

    @hydra.main(version_base="1.3", config_path="pkg://memeval.conf", config_name="config")
    def job(cfg: DictConfig) -> None:
        hydra_cfg = HydraConfig.get()
        run_dir = Path(hydra_cfg.runtime.output_dir)
        # Hydra has saved its files and set up logging with the overrides as typed, a URL's
        # password included: both are redacted before anything else is written
        redact_logs()
        saved = run_dir / hydra_cfg.output_subdir if hydra_cfg.output_subdir else None
        sweep = Path(hydra_cfg.sweep.dir) if hydra_cfg.mode == RunMode.MULTIRUN else None
        redact_in_place(*(saved / name for name in sorted(HYDRA_FILES) if saved),
                        *([sweep / "multirun.yaml"] if sweep else []))
        try:
            if hydra_cfg.mode == RunMode.MULTIRUN:
                # Parallel jobs print at once: each job's output goes out as one block under
                # a header naming the job, so tables never interleave.
                header = wrapped(redact(f"── job {hydra_cfg.job.num}: "
                                        f"{' '.join(hydra_cfg.overrides.task)}"))
                with _one_block(header):
                    run_experiment(cfg, run_dir)
            else:
                run_experiment(cfg, run_dir)
        except user_errors as err:
            report_user_error(err)
            _discard_if_unused(run_dir, f"{hydra_cfg.job.name}.log")
            status["code"] = 2
            if hydra_cfg.mode == RunMode.MULTIRUN:
                # A parallel launcher runs jobs in worker processes that cannot set our exit
                # code: failing the job is how the sweep learns of it.
                raise SystemExit(2) from None
        except Exception:
            # memeval's own fault, or a system's: the traceback is printed here, redacted (its
            # message may quote a key), instead of by Hydra, which prints it and the overrides
            # as typed (a URL's password included)
            _discard_if_unused(run_dir, f"{hydra_cfg.job.name}.log")
            print(redact(traceback.format_exc()), end="", file=sys.stderr)
            status["code"] = 1
            if hydra_cfg.mode == RunMode.MULTIRUN:
                raise SystemExit(1) from None
        except BaseException:
            _discard_if_unused(run_dir, f"{hydra_cfg.job.name}.log")
            raise

    sys.argv = [f"{sys.argv[0]} run", *args]
    job()
    return status["code"]


HYDRA_ROOM = 64 * 2**10  # Hydra's own files (about 10 kB), written before memeval's code runs


def _output_dir(args: list[str]) -> str:
    """Where the run (or sweep) will write, as given on the command line; else the current
    directory, under which the default timestamped one lies."""
    given = [arg.split("=", 1)[1] for arg in args
             if arg.startswith(("hydra.run.dir=", "hydra.sweep.dir="))]
    return given[-1] if given else "."


@contextlib.contextmanager
def _one_block(header: str) -> Iterator[None]:
    """Hold what the body prints and write it, under `header`, in one write when it ends."""
    held = io.StringIO()
    try:
        with contextlib.redirect_stdout(held):
            yield
    finally:
        sys.stdout.write(f"{header}\n{held.getvalue()}\n")
        sys.stdout.flush()
