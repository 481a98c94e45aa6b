"""A run's metrics.json as typed values: what the table, figures, report, sweep summary and
regression gate read, whichever schema version wrote the file.

Schema 1 and 2 share one layout; 2 marks files written since the layout was typed. A file
without `schema_version` predates the field and is schema 1. Here are the header and the passes
every run has; an experiment's own sections are read with the `Findings` type it declares
(`RunResult.of`), and stay in `sections` as written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from memeval.results.findings import Findings
from memeval.utils.bounded_json import read_json

METRICS = "metrics.json"
MAX_METRICS_BYTES = 16 * 2**20  # a run's metrics take kilobytes, even over thousands of passes
# What a section reader raises on a value of the wrong type, or a key the file lacks
SECTION_ERRORS = (ValueError, KeyError, TypeError, IndexError, AttributeError)
SCHEMA_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)

PASS_COLUMNS = ("substantive_recall", "noise_stored", "low_value_filtered_rate",
                "prejudge_filter_rate", "judge_calls", "judge_call_saving", "entries")
# Each pass metric as a reader would name it, with its unit: axis labels and long headers.
PASS_NAMES = {"substantive_recall": "substantive recall (%)",
              "noise_stored": "noise stored (entries)",
              "low_value_filtered_rate": "low-value filtered (%)",
              "prejudge_filter_rate": "pre-judge filter rate (%)",
              "judge_calls": "judge calls (count)", "judge_call_saving": "judge-call saving (%)",
              "entries": "entries (count)"}

F = TypeVar("F", bound=Findings)

CI = tuple[float | None, float | None]
NO_CI: CI = (None, None)


class UnreadableResult(ValueError):
    """A run's file (metrics.json, provenance.json, config.yaml) this memeval cannot read; the
    message names the file and why, in one line."""


class UnsupportedSchema(UnreadableResult):
    """metrics.json written by a memeval newer (or other) than this one."""


def schema_version(data: Mapping[str, Any], source: str) -> int:
    """The file's schema version, refused with the fix when this memeval cannot read it."""
    version = data.get("schema_version", 1)
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedSchema(
            f"{source}: schema_version {version} is not one this memeval reads (it reads "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))}): upgrade memeval to read this run")
    return int(version)


def _instant(value: Any) -> str | None:
    """An ISO 8601 time as written, checked (ValueError, TypeError) so its readers can parse it."""
    if value is not None:
        datetime.fromisoformat(value)
    return value


def _text(value: Any) -> str | None:
    """A name as written; anything but text is none (a damaged file names nothing)."""
    return value if isinstance(value, str) else None


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(t for t in value if isinstance(t, str)) if isinstance(value, list) else ()


def as_ci(value: Any) -> CI:
    return NO_CI if not value else (value[0], value[1])


def as_map(value: Any) -> Mapping[str, Any]:
    return dict(value) if value else {}


@dataclass(frozen=True)
class Dataset:
    name: str | None
    entries: int | None
    fingerprint: str | None
    memories: int | None = None  # a memory corpus: memories and queries instead of entries
    queries: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Dataset:
        return cls(data.get("name"), data.get("entries"), data.get("fingerprint"),
                   data.get("memories"), data.get("queries"))

    @property
    def size(self) -> str:
        """What it holds, as a reader counts it."""
        if self.memories is not None:
            return f"{self.memories} memories, {self.queries} queries"
        return f"{self.entries} entries"


@dataclass(frozen=True)
class System:
    name: str
    notes: Mapping[str, Any]  # what a reader of the figures must know, e.g. a fallback in use


@dataclass(frozen=True)
class Scorer:
    name: str
    threshold_rule: str
    threshold_policy: str | None = None


@dataclass(frozen=True)
class ContentThreshold:
    first: float
    last: float


@dataclass(frozen=True)
class ComponentFailures:
    """One component's failed entries (or calls) in a pass, and why."""

    errors: int
    reasons: Mapping[str, int]
    short_circuited: int  # not sent, the circuit breaker being open


FAILING_COMPONENTS = ("system", "judge", "embedding")


@dataclass(frozen=True)
class Separation:
    """How well a score puts substantive memories above low-value ones."""

    auroc: float | None
    auroc_ci95: CI

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Separation:
        return cls(data.get("auroc"), as_ci(data.get("auroc_ci95")))


@dataclass(frozen=True)
class LabelQuality:
    memories: int
    mean_mqs: float
    hedged_share: float
    conflicted_share: float
    gate_actions: Mapping[str, int]


@dataclass(frozen=True)
class StoredQuality:
    """MQS of one pass's stored memories."""

    memories: int
    mqs: Separation
    confidence_only: Separation
    by_label: Mapping[str, LabelQuality]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StoredQuality:
        return cls(data["memories"], Separation.from_dict(data["mqs"]),
                   Separation.from_dict(data["confidence_only"]),
                   {label: LabelQuality(s["memories"], s["mean_mqs"], s["hedged_share"],
                                        s["conflicted_share"], as_map(s.get("gate_actions")))
                    for label, s in data["by_label"].items()})


@dataclass(frozen=True)
class StoredModelsQuality:
    """The learned conflict detector and the content-aware trust score on one pass's stored
    memories."""

    memories: int
    candidate_pairs: int
    conflicts_by_kind: Mapping[str, int]
    in_conflict_share: float | None
    in_conflict_share_ci95: CI
    superseded: int
    trust: Mapping[str, Any]  # mean, p10, p50, p90, each with its `_ci95`
    trust_separation: Separation
    pairs_too_long: int = 0  # candidate pairs with a memory longer than the detector's range

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StoredModelsQuality:
        return cls(data["memories"], data["candidate_pairs"], as_map(data["conflicts_by_kind"]),
                   data.get("in_conflict_share"), as_ci(data.get("in_conflict_share_ci95")),
                   data["superseded"], as_map(data["trust"]),
                   Separation.from_dict(data["trust_separation"]),
                   int(data.get("pairs_too_long", 0)))


@dataclass(frozen=True)
class RankingScores:
    """One arm of a retrieval replay pass: ranking quality on held-out queries, and how
    concentrated recall became."""

    ndcg: float
    ndcg_ci95: tuple[float, float]
    recall: float
    gini_recall: float | None = None  # a graph policy's recall counts
    pagerank_top1pct_share: float | None = None  # a graph policy, once it has a graph
    gini_access: float | None = None  # every arm's access counts (newer runs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RankingScores:
        low, high = data["ndcg_ci95"]
        return cls(data["ndcg"], (low, high), data["recall"], data.get("gini_recall"),
                   data.get("pagerank_top1pct_share"), data.get("gini_access"))


RANKING_ARMS = ("off", "on")  # the arms of a retrieval replay written before `arms` was listed


@dataclass(frozen=True)
class PassMetrics:
    """One measured pass. Gate metrics are None for passes that measure something else (e.g.
    retrieval); `gated` says whether the pass went through a write gate at all."""

    pass_no: int
    arm: str | None = None
    gated: bool = False
    entries: int | None = None
    substantive_recall: float | None = None
    substantive_recall_ci95: CI = NO_CI
    noise_stored: int | None = None
    low_value_filtered_rate: float | None = None
    prejudge_filter_rate: float | None = None
    prejudge_filter_rate_ci95: CI = NO_CI
    judge_calls: int | None = None
    judge_call_saving: float | None = None
    stage_counts: Mapping[str, int] = field(default_factory=dict)
    content_score_threshold: ContentThreshold | None = None
    # how well the content score ranks findings above the rest, whatever its cut (AUROC)
    content_score_auroc: float | None = None
    content_score_auroc_ci95: CI = NO_CI
    content_score_skipped: Mapping[str, int] = field(default_factory=dict)  # by reason
    recall_by_label_source: Mapping[str, float | None] = field(default_factory=dict)
    failures: Mapping[str, ComponentFailures] = field(default_factory=dict)  # by component
    rejection_store_size: int | None = None
    rejection_store_by_label: Mapping[str, int] = field(default_factory=dict)
    stored_mqs: StoredQuality | None = None
    stored_models: StoredModelsQuality | None = None
    ranking: Mapping[str, RankingScores] = field(default_factory=dict)  # by arm
    sections: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the pass as written

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PassMetrics:
        threshold = data.get("content_score_threshold")
        separation = data.get("content_score_separation") or {}  # absent before it was kept
        stored, models = data.get("stored_mqs"), data.get("stored_models")
        return cls(
            pass_no=int(data["pass"]), arm=data.get("arm"),
            gated="content_score_threshold" in data, entries=data.get("entries"),
            substantive_recall=data.get("substantive_recall"),
            substantive_recall_ci95=as_ci(data.get("substantive_recall_ci95")),
            noise_stored=data.get("noise_stored"),
            low_value_filtered_rate=data.get("low_value_filtered_rate"),
            prejudge_filter_rate=data.get("prejudge_filter_rate"),
            prejudge_filter_rate_ci95=as_ci(data.get("prejudge_filter_rate_ci95")),
            judge_calls=data.get("judge_calls"), judge_call_saving=data.get("judge_call_saving"),
            stage_counts=as_map(data.get("stage_counts")),
            content_score_threshold=ContentThreshold(threshold["first"], threshold["last"])
            if threshold else None,
            content_score_auroc=separation.get("auroc"),
            content_score_auroc_ci95=as_ci(separation.get("auroc_ci95")),
            content_score_skipped=as_map((data.get("degraded") or {}).get("content_score_skipped")),
            recall_by_label_source={source: stats.get("substantive_retained_rate") for source,
                                    stats in (data.get("by_label_source") or {}).items()},
            failures={what: ComponentFailures(data[f"{what}_errors"],
                                              as_map(data.get(f"{what}_error_reasons")),
                                              data.get(f"{what}_short_circuited", 0))
                      for what in FAILING_COMPONENTS if f"{what}_errors" in data},
            rejection_store_size=data.get("rejection_store_size"),
            rejection_store_by_label=as_map(data.get("rejection_store_by_label")),
            stored_mqs=StoredQuality.from_dict(stored) if stored else None,
            stored_models=StoredModelsQuality.from_dict(models) if models else None,
            ranking={arm: RankingScores.from_dict(data[arm])
                     for arm in data.get("arms", RANKING_ARMS) if arm in data},
            sections=dict(data))

    @property
    def label(self) -> str:
        """The pass as tables name it: arm and number, e.g. `2` or `reference2`."""
        return f"{self.arm or ''}{self.pass_no}"

    def headline(self) -> dict[str, float | int | None]:
        """The headline gate metrics, in PASS_COLUMNS order."""
        return {column: getattr(self, column) for column in PASS_COLUMNS}


@dataclass(frozen=True)
class RunResult:
    """metrics.json of one run: the header and the measured passes (per arm where an experiment
    has several). The experiment's own sections are read with the type it declared (`of`)."""

    schema_version: int
    experiment: str
    run_id: str | None = None
    started_at: str | None = None  # ISO 8601 with the UTC offset; older runs did not record it
    run_name: str | None = None  # what the user named the run (`run_name=`)
    tags: tuple[str, ...] = ()
    seed: int | None = None
    dataset: Dataset | None = None  # None: the run replayed no traces
    embedder: str | None = None  # the embedder's identity
    judge: str | None = None
    scorer: Scorer | None = None
    system: System | None = None
    passes: tuple[PassMetrics, ...] = ()
    arms: Mapping[str, tuple[PassMetrics, ...]] = field(default_factory=dict)
    wall_seconds: float | None = None
    failures: tuple[str, ...] = ()
    sections: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the file as written
    source: str = field(default=METRICS, repr=False, compare=False)  # the file, for messages

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = METRICS) -> RunResult:
        version = schema_version(data, source)
        dataset, system, scorer = data.get("dataset"), data.get("system"), data.get("scorer")
        return cls(
            schema_version=version, experiment=str(data["experiment"]),
            run_id=data.get("run_id"), started_at=_instant(data.get("started_at")),
            run_name=_text(data.get("run_name")),
            tags=_texts(data.get("tags")),
            seed=data.get("seed"),
            dataset=Dataset.from_dict(dataset) if dataset else None,
            embedder=(data.get("embedder") or {}).get("identity"), judge=data.get("judge"),
            scorer=Scorer(scorer["name"], scorer["threshold_rule"],
                          scorer.get("threshold_policy")) if scorer else None,
            system=System(system["name"], as_map(system.get("notes"))) if system else None,
            passes=tuple(PassMetrics.from_dict(p) for p in data.get("passes") or ()),
            arms={arm: tuple(PassMetrics.from_dict(p) for p in passes)
                  for arm, passes in (data.get("arms") or {}).items()},
            wall_seconds=data.get("wall_seconds"), failures=tuple(data.get("failures") or ()),
            sections=dict(data), source=source)

    @property
    def fingerprint(self) -> str | None:
        """The replayed dataset's fingerprint (None for runs that replay no traces)."""
        return self.dataset.fingerprint if self.dataset else None

    def by_arm(self) -> Mapping[str, tuple[PassMetrics, ...]]:
        """The passes of each arm; a single-arm experiment's are arm `main`."""
        return self.arms or {"main": self.passes}

    def of(self, kind: type[F]) -> F:
        """The experiment's own sections as `kind`, the type it declared (a reader names the
        type it reads, so this works whether or not the experiment's module is loaded)."""
        try:
            return kind.from_dict(self.sections)
        except SECTION_ERRORS as err:
            raise UnreadableResult(f"{self.source}: this {self.experiment} run holds no "
                                   f"{kind.__name__} ({_why(err)})") from err


@contextmanager
def reading(source: str | Path) -> Iterator[None]:
    """Reads a run's metrics (file `source`) inside: a section of the wrong type or a key it
    lacks, met by any of its readers (its experiment's figures, report or scores index the
    sections as written), is the file's damage, named in one line, not memeval's fault."""
    try:
        yield
    except UnreadableResult:
        raise
    except SECTION_ERRORS as err:
        raise UnreadableResult(f"{source}: not a memeval run's metrics ({_why(err)}); rerun the "
                               f"experiment to rewrite it") from err


def _why(err: Exception) -> str:
    return " ".join(f"{type(err).__name__}: {err}".split())  # one line, however it was raised


def read_metrics(run_dir: str | Path) -> dict[str, Any]:
    """A run's metrics.json as written (any supported schema version), its size and nesting
    bounded."""
    path = Path(run_dir) / METRICS
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {run_dir} a memeval run directory?")
    with reading(path):
        data = read_json(path, MAX_METRICS_BYTES, "a run's metrics", allow_nan=True)
        if not isinstance(data, dict):
            raise TypeError(f"a JSON {type(data).__name__}, not an object")
        schema_version(data, str(path))
        return data


def load_result(run_dir: str | Path) -> RunResult:
    """The typed metrics.json of a run directory (any supported schema version)."""
    data = read_metrics(run_dir)
    path = Path(run_dir) / METRICS
    with reading(path):
        return RunResult.from_dict(data, str(path))
