"""Runs one experiment into one run directory: validate, load, replay, measure, write."""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memeval.config import validate
from memeval.engine.gate.threshold import explain
from memeval.experiments.base import (
    EXPERIMENTS,
    Experiment,
    ExperimentResult,
    RunContext,
    Runs,
    refuse_unrun_system,
)
from memeval.experiments.settings import Validated
from memeval.metrics.gate_metrics import SystemFailure, run_failures
from memeval.registry import ConfigError
from memeval.reporting.outputs import headline_line, outputs_of
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.table import pass_table, threshold_footer, wrapped
from memeval.results.provenance import provenance
from memeval.results.run import Run
from memeval.results.run_dir import CHECKPOINTS, METRICS, write_run
from memeval.run_cost import run_overrides, say_cost
from memeval.systems.deadline import described
from memeval.threads import size_pools
from memeval.user_errors import complain
from memeval.utils.disk import disk_full, no_space
from memeval.utils.redact import redact, redacted

log = logging.getLogger(__name__)


def _components(ctx: RunContext, checked: Validated) -> dict[str, Any]:
    """metrics.json sections for the components this run actually built."""
    sections: dict[str, Any] = {}
    loaded = ctx.loaded()
    if loaded is not None:
        sections["dataset"] = {
            "name": loaded.name, "source": loaded.report.source,
            "fingerprint": loaded.fingerprint, **loaded.sizes(),
            "rows_read": loaded.report.rows_read, "skipped": loaded.report.skipped,
            "stats": loaded.report.stats, "problems": loaded.report.problems[:100]}
    if ctx.built("embedder"):
        sections["embedder"] = {"identity": redact(ctx.embedder.identity),  # may hold a URL
                                "cache_hits": ctx.embedder.hits,
                                "cache_misses": ctx.embedder.misses,
                                "cache_invalid": ctx.embedder.invalid}
    if ctx.built("content_encoder"):  # what the gate's content stage embedded with
        apart = ctx.content_apart
        sections["content_encoder"] = {"name": checked.content_encoder.name} \
            if apart is None else {  # its own model: its own cache use
                "name": checked.content_encoder.name, "identity": redact(apart.identity),
                "cache_hits": apart.hits, "cache_misses": apart.misses}
    if ctx.built("system"):  # what a reader must know of the system under test
        system = ctx.system
        sections["system"] = {"name": system.name,
                               "capabilities": sorted(system.capabilities),
                               "notes": redacted(system.notes)}
    if ctx.built("judge"):
        sections["judge"] = ctx.judge.name
        sections["scorer"] = {"name": checked.scorer.name,
                              "threshold_policy": checked.gate.threshold.policy,
                              "threshold_rule": explain(checked.gate.threshold)}
    return sections


def _phoenix_streamer(ctx: RunContext, settings: PhoenixConfig, run_id: str) -> Any:
    """Each pass's spans go to Phoenix as it ends, when a server answers at the start."""
    if not (settings.enabled and settings.base_url):
        return None
    from memeval.reporting.phoenix.stream import streamer_for

    return streamer_for(ctx, settings, run_id)


def _report_to_phoenix(ctx: RunContext, settings: PhoenixConfig,
                       metrics: dict[str, Any]) -> None:
    """After the results are on disk: Phoenix's files, then a push if a server answers. A run
    with no spans (a quality experiment, memory QA) pushes its per-item tables, when it wrote
    some."""
    from memeval.reporting.phoenix.files import write_phoenix_files
    from memeval.reporting.phoenix.push import report_run
    from memeval.reporting.phoenix.pushers import push_run, pushable

    def write() -> Path | None:
        if ctx.loaded() is not None:  # its spans, when it replayed or searched anything
            entries = ctx.dataset.entries if ctx.built("dataset") else []
            written = write_phoenix_files(ctx.run_dir, entries, metrics, ctx.cfg, settings,
                                          redact)
            if written is not None:
                return written
        return ctx.run_dir if pushable(ctx.run_dir) else None  # else its per-item tables

    report_run(ctx.run_dir, settings, write, progress=ctx.settings.progress, out=sys.stdout,
               push=push_run)


def _check_run_dir(run_dir: Path, resume: bool) -> None:
    """A directory holding an earlier run's results or stores would mix two runs (its `state/`
    stores would be reloaded, so pass 1 would start pre-trained), unless it is resumed."""
    if (run_dir / METRICS).exists():
        raise ConfigError(f"{run_dir} already holds a run ({METRICS}): choose a new "
                          f"directory (hydra.run.dir=…; the default is timestamped)")
    if resume:
        return
    if (run_dir / CHECKPOINTS).exists():
        raise ConfigError(f"{run_dir} holds an interrupted run: finish it by adding resume=true "
                          f"to the same command, or choose a new directory")
    if (run_dir / "state").exists():
        raise ConfigError(f"{run_dir} already holds a run (state): choose a new "
                          f"directory (hydra.run.dir=…; the default is timestamped)")


def _run_resumably(ctx: RunContext, name: str, experiment: Experiment,
                   resume: bool) -> ExperimentResult:
    """Steps are checkpointed as they finish; an interruption says how to go on from them."""
    if not experiment.resumable:
        if resume:
            raise ConfigError(f"experiment {name} does not checkpoint its work: run it again "
                              f"instead of resume=true")
        return experiment.run(ctx)
    ctx.checkpoints.start(ctx.cfg, resume)
    try:
        return experiment.run(ctx)
    except BaseException as err:
        if not ctx.checkpoints.started or isinstance(err, ConfigError):
            raise
        if isinstance(err, SystemFailure) and not ctx.checkpoints.saved:
            raise  # the system's fault, in one line: no step of it to go on from
        complain(f"memeval: run interrupted with {ctx.checkpoints.saved} finished step(s) "
                 f"saved in {ctx.checkpoints.dir}; add resume=true hydra.run.dir={ctx.run_dir} "
                 f"to the same command to finish it")
        raise


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM (`kill`, a scheduler's stop) unwinds like Ctrl-C instead of ending the process on
    the spot: temporary files are removed, an interrupted run says how to resume, and the exit
    status is the conventional 143 (128 + SIGTERM)."""
    if threading.current_thread() is not threading.main_thread():  # handlers: main thread only
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _close_systems(ctx: RunContext) -> list[Exception]:
    """Every system the run built, closed once its work is done, and what went wrong after the
    work (a failing close, notes JSON cannot hold): the results are written first, then the run
    fails on these."""
    failures: list[Exception] = []
    if ctx.built("system") and ctx.system not in ctx.bounded_systems:  # the reference engine
        try:
            ctx.system.close()
        except Exception as err:
            failures.append(SystemFailure(f"system '{ctx.system.name}' failed in close: "
                                          f"{described(err)}"))
    for system in ctx.bounded_systems:
        system.close()
        failures += system.deferred
    return failures


def run_experiment(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    size_pools()  # the Python API, a notebook, a launcher's worker: sized as the command is
    with _sigterm_unwinds():
        try:
            return _run_experiment(cfg, run_dir)
        except OSError as err:  # any write on a full disk: one line naming where, not Errno 28
            if no_space(err):
                raise disk_full(err.filename or run_dir) from None
            raise


def _run_experiment(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    started = time.time()
    started_at = datetime.now().astimezone().isoformat(timespec="seconds")  # a reader's clock
    checked = validate(cfg)
    resume = checked.settings.resume
    _check_run_dir(run_dir, resume)
    ctx = RunContext(cfg, run_dir, checked)
    chosen = checked.experiment
    assert chosen is not None  # validate() refuses a config without one
    experiment = EXPERIMENTS.make(chosen)
    # a plugin's experiment that does not say runs the system under test, as all once did
    refuse_unrun_system(chosen.name, getattr(experiment, "runs", Runs.ANY), checked.system.name)
    run_id = uuid.uuid4().hex  # names this run's spans and experiments in Phoenix
    streamer = _phoenix_streamer(ctx, checked.phoenix, run_id)
    running = time.perf_counter()
    try:
        if getattr(experiment, "embeds", False):  # a plugin's experiment that does not say: no
            say_cost(ctx, run_overrides())
        result = _run_resumably(ctx, chosen.name, experiment, resume)
    finally:
        if streamer is not None:
            streamer.close()
        closing = _close_systems(ctx)
    experiment_s = time.perf_counter() - running - ctx.loading.seconds
    timing = {"dataset_load_s": round(ctx.loading.seconds, 3),
              "experiment_s": round(experiment_s, 3)}
    if ctx.built("embedder"):
        timing["embedding_s"] = round(ctx.embedding_seconds(), 3)
    if ctx.built("fits"):  # quality models fitted (not found in the fit cache) during the run
        timing["fitting_s"] = round(ctx.fits.spent.seconds, 3)
    if ctx.scoring.seconds:  # scoring each pass's stored memories (their models' fit apart)
        timing["stored_scoring_s"] = round(ctx.scoring.seconds, 3)
    # each pass's metrics, and saving it to resume from: the run's, not the system's, work
    bookkeeping = ctx.measuring.seconds + (ctx.checkpoints.spent.seconds
                                         if ctx.built("checkpoints") else 0.0)
    if bookkeeping:
        timing["bookkeeping_s"] = round(bookkeeping, 3)
    # judged after the results are written: a failed run keeps them, and says so in metrics.json
    failures: list[Exception] = [
        *run_failures(result.decisions, checked.gate,
                      getattr(checked.system.params, "max_error_share", 1.0)),
        *result.failures, *ctx.deferred, *closing]
    failures = list({str(failure): failure for failure in failures}.values())  # once each
    metrics: dict[str, Any] = {
        "run_id": run_id,
        "started_at": started_at,
        "experiment": chosen.name,
        "run_name": checked.settings.run_name,
        "tags": list(checked.settings.tags),
        "seed": checked.settings.seed,
        **_components(ctx, checked),
        "passes": result.passes,
        **result.findings.to_dict(),
        "wall_seconds": round(time.time() - started, 3),
        "timing": timing,
        "failures": [str(failure) for failure in failures],
    }
    written = write_run(run_dir, metrics, result.decisions,
                        OmegaConf.to_yaml(cfg, resolve=True), provenance(), result.tables)
    if experiment.resumable:
        ctx.checkpoints.discard()
    print(result.summary or pass_table(written.passes))
    system = metrics.get("system", {})
    for key, value in system.get("notes", {}).items():  # e.g. a fallback the figures rest on
        print(wrapped(f"{system['name']}, {key}: {value}"))
    if written.scorer is not None:
        print(threshold_footer(written.passes, written.scorer.threshold_rule))
    if checked.phoenix.enabled:
        _report_to_phoenix(ctx, checked.phoenix, metrics)
    if checked.settings.plots:
        try:
            from memeval.reporting.plots import make_figures

            make_figures(run_dir)
        except Exception:
            log.exception("plots failed; the run's results are intact in %s", run_dir)
    try:
        declared, finished = outputs_of(chosen.name), Run(run_dir, written)
        finding, figures = declared.headline(finished), headline_line(declared.scores(finished))
    except Exception:  # what the report opens with: the results are written whatever it meets
        log.exception("the headline could not be made; the run's results are intact in %s",
                      run_dir)
        finding, figures = "", ""
    if finding:  # the sentence the report opens with
        print(wrapped(f"found: {finding}"))
    if figures:  # as the report, `runs`, the leaderboard and Phoenix show them
        print(wrapped(figures))
    print(f"run directory: {run_dir}")
    print(wrapped("next: `python -m memeval report RUN_DIR` with the directory above, for this "
                  "run as HTML and Markdown; `python -m memeval runs`, for every run as one table"))
    for failure in failures[1:]:
        complain(f"memeval: {failure}")
    if failures:
        raise failures[0]
    return metrics
