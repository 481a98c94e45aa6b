"""Experiment contract and registry; the run context that builds components from config."""

from __future__ import annotations

import copy
import logging
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from memeval.backends.embedders.base import EMBEDDERS
from memeval.backends.embedders.cache import CACHE_FILE as EMBEDDING_CACHE
from memeval.backends.embedders.cache import CHUNK, CachedEmbedder
from memeval.backends.judges.base import JUDGES, Judge
from memeval.data.base import (
    CORPORA,
    CORPUS,
    DATASETS,
    ENTRIES,
    Dataset,
    Loaded,
    MemoryCorpus,
    redacted_names,
)
from memeval.data.memory_corpus import redacted_corpus
from memeval.engine.gate.base import Candidate
from memeval.engine.gate.gate import Decision, GateConfig
from memeval.experiments.checkpoint import Checkpoints
from memeval.experiments.settings import Settings, Validated
from memeval.metrics.gate_metrics import SystemFailure, pass_metrics
from memeval.registry import Chosen, ConfigError, Registry, to_dataclass
from memeval.reporting.outputs import Outputs, Score, declare, pass_items, pass_scores
from memeval.reporting.table import WIDTH, headline
from memeval.results.findings import Findings
from memeval.systems.base import SYSTEMS, Capability, Components, Ingestor, System, require
from memeval.systems.boundary import GuardedSystem, as_system, guarded, limits_of
from memeval.systems.reference.content_encoder import CONTENT_ENCODERS, ContentEncoder
from memeval.systems.reference.system import REFERENCE, ReferenceSystem
from memeval.utils.fit_cache import FitCache, fits_dir
from memeval.utils.http_retry import preflight
from memeval.utils.kvcache import check_writable_directory
from memeval.utils.stopwatch import Stopwatch

if TYPE_CHECKING:  # pandas loads only once a run is read
    import pandas as pd

    from memeval.results.run import Run

T = TypeVar("T")
L = TypeVar("L", bound=Loaded)
log = logging.getLogger(__name__)


@dataclass
class ExperimentResult:
    """`passes` are the evaluated passes (metrics.json's top-level list); `findings` are the
    experiment's own sections, of the type it declared; `tables` are written to the run
    directory as parquet."""

    passes: list[dict[str, Any]]
    decisions: list[Decision]
    findings: Findings
    summary: str = ""  # printed at the end of the run instead of the per-pass table
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # why the run must not count as a success, found by the experiment itself (the runner
    # raises the first once the results are written)
    failures: list[Exception] = field(default_factory=list)


@dataclass(frozen=True)
class Replay(Findings):
    """A write-gate replay's own section: the protocol it followed."""

    protocol: str


def gate_figures(run: Run) -> list[Path]:
    """The write-gate replays' figures (matplotlib loads only once a run draws)."""
    from memeval.reporting.plots import make_gate_figures

    return make_gate_figures(run)


def gate_scores(run: Run) -> list[Score]:
    """The last pass's figures (outputs.py `pass_scores`)."""
    dataset = run.result.dataset
    bench = f"{run.experiment} ({dataset.name}, {dataset.entries} entries)" if dataset else \
        run.experiment
    return pass_scores(run.result.passes[-1], bench)


def gate_items(run: Run) -> dict[str, pd.Series]:
    """The last pass's recall and pre-judge rate entry by entry (outputs.py `pass_items`)."""
    return pass_items(run.decisions, run.result.passes[-1].pass_no)


def gate_headline(run: Run) -> str:
    """The last pass's recall and pre-judge share, as the outcomes table prints them."""
    return headline(run.result.passes)


GATE_REPLAY = Outputs(Replay, gate_figures, scores=gate_scores, headline=gate_headline,
                      items=gate_items)
"""What a replay through the write gate declares: its protocol, the gate's figures, its
leaderboard scores and its headline."""


def bar_columns() -> int:
    """A progress bar's width: the terminal's, at most the WIDTH the printed results fit (tqdm
    shortens its bar, then cuts a long name, to fit)."""
    return min(shutil.get_terminal_size((WIDTH, 24)).columns, WIDTH)


class RunContext:
    """What an experiment may use, each built from config on first use: an experiment that
    never replays traces (e.g. MQS calibration) never loads a dataset, a model or a judge."""

    def __init__(self, cfg: DictConfig, run_dir: Path, validated: Validated) -> None:
        self.cfg = cfg  # only to save the resolved settings; the run reads `validated`
        self.validated = validated
        self.run_dir = run_dir
        # kept apart from the experiment's own time: loading the dataset, scoring what each pass
        # stored, and each pass's metrics with their intervals
        self.loading, self.scoring, self.measuring = Stopwatch(), Stopwatch(), Stopwatch()
        # Called with each measured pass's decisions as it ends (e.g. to stream spans).
        self.pass_listeners: list[Callable[[list[Decision]], None]] = []
        self.bounded_systems: list[GuardedSystem] = []  # closed, their problems told, at the end
        self.deferred: list[SystemFailure] = []  # found beside the work: fail once it is written

    @cached_property
    def cache_dir(self) -> Path:
        """Checked on first use, before anything is loaded or cached there."""
        path = Path(self.settings.cache_dir).expanduser()
        try:
            check_writable_directory(path)
        except OSError as err:
            raise ConfigError(f"cache_dir {path} is not a writable directory ({err.strerror or err}"
                              f"): set cache_dir= (or $MEMEVAL_CACHE_DIR) to one") from None
        return path

    @cached_property
    def fits(self) -> FitCache:
        """Fitted models kept by settings, data and code, shared by every run on this cache."""
        return FitCache(fits_dir(self.cache_dir))

    @property
    def input_kind(self) -> str:
        """What the `dataset` option reads: ENTRIES to gate, or a memory CORPUS to search."""
        return self.validated.dataset.kind

    @cached_property
    def dataset(self) -> Dataset:
        """The configured entries; a memory corpus is refused by name, since only retrieval
        replay and memory QA search one."""
        chosen = self.validated.dataset
        if chosen.kind != ENTRIES:
            raise ConfigError(f"dataset '{chosen.name}' is a memory corpus (memories and labelled "
                              f"queries): only +experiment=retrieval_replay and memory_qa read "
                              f"one; the other experiments replay traces (e.g. dataset=bundled)")
        with self.loading.running():  # ids, label sources and problems are redacted like texts
            loaded = redacted_names(DATASETS.make(chosen.chosen, labeller=self.validated.labeller,
                                                  cache_dir=self.cache_dir))
        return self._reported(loaded)

    @cached_property
    def corpus(self) -> MemoryCorpus:
        """The configured memory corpus; an option of labelled entries is refused by name."""
        chosen = self.validated.dataset
        if chosen.kind != CORPUS:
            raise ConfigError(f"dataset '{chosen.name}' holds labelled entries, not a memory "
                              f"corpus: choose one (e.g. dataset=locomo or dataset=memory_jsonl)")
        with self.loading.running():
            loaded = redacted_corpus(CORPORA.make(chosen.chosen, cache_dir=self.cache_dir))
        return self._reported(loaded)

    @staticmethod
    def _reported(loaded: L) -> L:
        for problem in loaded.report.told():
            log.warning("%s", problem)
        return loaded

    def loaded(self) -> Loaded | None:
        """The input this run loaded, whichever kind; None if it loaded none."""
        return (self.dataset if self.built("dataset")
                else self.corpus if self.built("corpus") else None)

    @cached_property
    def embedder(self) -> CachedEmbedder:
        """Built on first use; a service behind it is checked then (`preflight`), before work."""
        inner = EMBEDDERS.make(self.validated.embedder)
        preflight(inner)
        return CachedEmbedder(inner, self.cache_dir / EMBEDDING_CACHE)

    @cached_property
    def content_encoder(self) -> ContentEncoder:
        """What the write gate's content stage embeds with; a fine-tuned one is fitted on first
        use (or taken from the fit cache)."""
        return CONTENT_ENCODERS.make(
            self.validated.content_encoder, embedder=self.embedder, gate=self.validated.gate,
            fits=self.fits, cache_file=self.cache_dir / EMBEDDING_CACHE, progress=self.progress)

    @property
    def content_embedder(self) -> CachedEmbedder:
        """The content stage's embedder, fitted first if it must be."""
        return self.content_encoder.ready()

    @property
    def content_apart(self) -> CachedEmbedder | None:
        """The content stage's embedder when it is its own model, not the run's (None when it
        is the run's, or was never built): what reports count apart."""
        if not self.built("content_encoder"):
            return None
        encoder = self.content_encoder.embedder
        return None if encoder is self.embedder else encoder

    def embedding_seconds(self) -> float:
        """Time spent embedding: by the run's embedder, and the content stage's own if apart."""
        apart = self.content_apart
        return self.embedder.spent.seconds + (apart.spent.seconds if apart else 0.0)

    @cached_property
    def checkpoints(self) -> Checkpoints:
        """The run's checkpoints, each step's tied to the input it read (entries or a corpus)."""
        return Checkpoints(self.run_dir, lambda: (
            self.corpus if self.input_kind == CORPUS else self.dataset).fingerprint)

    @cached_property
    def judge(self) -> Judge:
        judge = JUDGES.make(self.validated.judge, cache_dir=self.cache_dir,
                            entries=self.dataset.entries, seed=self.seed)
        preflight(judge)
        return judge

    def built(self, name: str) -> bool:
        return name in self.__dict__

    @property
    def settings(self) -> Settings:
        """The run's top-level settings (seed, cache_dir, progress, bootstrap…)."""
        return self.validated.settings

    @property
    def seed(self) -> int:
        return self.settings.seed

    @property
    def resamples(self) -> int:
        """Resamples per bootstrap confidence interval (`bootstrap=`)."""
        return self.settings.bootstrap

    def gate_config(self, **overrides: Any) -> GateConfig:
        """The gate's settings, a copy per caller; `overrides` change some of them (validated
        again, as one value can constrain another)."""
        if not overrides:
            return copy.deepcopy(self.validated.gate)
        merged = OmegaConf.merge(OmegaConf.structured(self.validated.gate), overrides)
        params = OmegaConf.to_container(merged, resolve=True)
        assert isinstance(params, dict)
        return to_dataclass(GateConfig, params, "gate")

    @property
    def scorer(self) -> Chosen:
        """The content scorer chosen (`scorer=`): each gate builds its own."""
        return self.validated.scorer

    @cached_property
    def system(self) -> System:
        """The memory system under test (`system=`, default the reference engine)."""
        return self._built(self.validated.system)

    def build_system(self, node: Mapping[str, Any] | DictConfig) -> System:
        """A system from its settings (a memeval/conf/system option), sharing this run's
        components."""
        return self._built(SYSTEMS.choose(node))

    def _built(self, chosen: Chosen) -> System:
        """Any system but memeval's own reference engine behind the boundary: built, called
        and answered within deadlines, its answers checked (systems/boundary.py)."""
        if chosen.name == REFERENCE:
            return SYSTEMS.make(chosen, ctx=self.components)
        shown = getattr(chosen.params, "target", chosen.name)  # system=module:callable's target
        system = guarded(lambda: SYSTEMS.make(chosen, ctx=self.components), shown,
                         limits_of(chosen.params))
        self.bounded_systems.append(system)
        return as_system(system)

    @property
    def components(self) -> Components:
        """This context as what a system may use (the type checker holds it to the protocol)."""
        return self

    def own_models(self, learned: bool | None) -> bool:
        """Whether to fit memeval's own learned models (their cross-validation takes minutes):
        `learned` when set, else only when the system under test is memeval's reference engine,
        since another system's run measures that system, not memeval."""
        return learned if learned is not None else isinstance(self.system, ReferenceSystem)

    def ingestor(self, needed: Sequence[Capability], experiment: str,
                 state_name: str = "state") -> Ingestor:
        """A fresh ingestor of the system under test, its state in RUN_DIR/<state_name>/, once
        the system is known to have every capability the experiment needs."""
        require(self.system, [Capability.INGEST, *needed], experiment)
        return self.system.ingestor(self.run_dir / state_name)

    def progress(self, items: Iterable[T], total: int, desc: str,
                 unit: str = "entry") -> Iterator[T]:
        yield from tqdm(items, total=total, desc=desc, disable=not self.settings.progress,
                        unit=unit, leave=False, ncols=bar_columns())

    def bar(self, total: int, desc: str, unit: str = "entry") -> tqdm[Any]:
        """A progress bar to update by hand, for work done in batches: it counts items."""
        return tqdm(total=total, desc=desc, unit=unit, leave=False,
                    disable=not self.settings.progress, ncols=bar_columns())

    def prepare(self, gate: Ingestor, entries: list[Any], batch: int = CHUNK) -> list[Any]:
        """Redact and embed in batches, with a progress bar counting entries: the one long step
        before a pass. Batches follow text length (the order is restored after), so each pads
        to similar lengths: as fast as one call for the whole set, measured, where arbitrary
        batches cost about 15% more. A batch is the embedding cache's own chunk, so the bar
        moves as often as work is done."""
        order = sorted(range(len(entries)), key=lambda i: len(entries[i].assistant_response))
        prepared: list[Any] = []
        with self.bar(len(entries), "embedding") as bar:
            for start in range(0, len(order), batch):
                prepared += gate.prepare([entries[i] for i in order[start : start + batch]])
                bar.update(min(batch, len(order) - start))
        return [item for _, item in sorted(zip(order, prepared, strict=True),
                                           key=lambda pair: pair[0])]

    def measure(self, decisions: list[Decision], gate: Ingestor, pass_no: int
                ) -> dict[str, Any]:
        """Metrics of one pass plus the state the system ended it with."""
        with self.measuring.running():
            metrics = pass_metrics(decisions, resamples=self.resamples,
                                   seed=self.seed + pass_no)
            for listener in self.pass_listeners:
                listener(decisions)
            labels = {e.id: e.label for e in self.dataset.entries}
            return {"pass": pass_no, **metrics, **self._pass_state(gate, labels, metrics)}

    def _pass_state(self, gate: Ingestor, labels: Mapping[str, str | None],
                    metrics: Mapping[str, Any]) -> dict[str, Any]:
        """The facts a system adds to a pass's row, never in place of memeval's figures; a
        problem with them fails the run once its results are written."""
        try:
            state = gate.pass_state(labels)
        except SystemFailure as err:
            self.deferred.append(err)
            return {}
        clash = sorted(key for key in state if key in metrics or key == "pass")
        if clash:
            self.deferred.append(SystemFailure(
                f"system '{self.system.name}' answered pass_state with {', '.join(clash)}, "
                f"which memeval measures itself: its values were left out (docs/protocol.md)"))
        return {key: value for key, value in state.items() if key not in clash}


class Runs(StrEnum):
    """Which memory system an experiment puts through its work."""

    ANY = "any"  # the system under test (`system=`), refused by name if it lacks a capability
    REFERENCE = "reference"  # memeval's reference engine: the experiment studies the engine
    LISTED = "listed"  # the systems its own settings list (experiment.systems)


class Experiment(Protocol):
    # True when its work goes through ctx.checkpoints step by step (each pass, each searched
    # pool), so `resume=true` can finish a run
    resumable: bool
    runs: Runs
    # True when it embeds its input as `python -m memeval embed` warms it (cache_warm_up.py
    # `run_texts`): the runner estimates that cost, and says it when it is long, before the run
    embeds: bool

    def run(self, ctx: RunContext) -> ExperimentResult: ...


EXPERIMENTS: Registry[Experiment] = Registry("experiment")


def refuse_unrun_system(experiment: str, runs: Runs, system: str) -> None:
    """`system=X` on an experiment that would not run X is refused before any work: otherwise
    the run would measure another system and exit 0 under X's name."""
    if system == "reference" or runs is Runs.ANY:
        return
    why = ("it studies memeval's reference engine" if runs is Runs.REFERENCE else
           "it runs the systems listed in experiment.systems "
           "(+system@experiment.systems.NAME=OPTION)")
    raise ConfigError(f"experiment {experiment} does not run system={system}: {why}; leave "
                      f"system= out (docs/systems.md lists which experiments run any system)")


def register(name: str, schema: type, outputs: Outputs
             ) -> Callable[[Callable[..., Experiment]], Callable[..., Experiment]]:
    """Registers an experiment's factory and declares its outputs: the `Findings` type it writes
    its own sections with, its figures and its report sections."""
    declare(name, outputs)
    return EXPERIMENTS.register(name, schema)


def replay(ctx: RunContext, gate: Ingestor, entries: list[Any], pass_no: int, phase: str,
           arm: str = "main") -> list[Decision]:
    """Run one pass of prepared candidates through the gate, with a progress bar (a system
    behind the boundary has each decision checked there). Evaluated turns that the content
    encoder was fitted on are refused before any is replayed."""
    if phase == "eval" and ctx.built("content_encoder"):
        ctx.content_encoder.refuse_seen([c.entry for c in entries if isinstance(c, Candidate)])
    decisions = []
    for decision in ctx.progress(gate.run_pass(entries, pass_no, phase), len(entries),
                                 f"{arm} pass {pass_no} ({phase})"):
        decision.arm = arm
        decisions.append(decision)
    return decisions
