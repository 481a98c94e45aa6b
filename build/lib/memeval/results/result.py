"""A run's metrics.json as typed values: what the table, figures, report, sweep summary and
regression gate read, whichever schema version wrote the file.

Schema 1 and 2 share one layout; 2 marks files written since the layout was typed. A file
without `schema_version` predates the field and is schema 1. Sections no reader needs stay in
`sections` as written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

METRICS = "metrics.json"
SCHEMA_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)

PASS_COLUMNS = ("substantive_recall", "noise_stored", "low_value_filtered_rate",
                "prejudge_filter_rate", "judge_calls", "judge_call_saving", "entries")

CI = tuple[float | None, float | None]
NO_CI: CI = (None, None)


class UnreadableResult(ValueError):
    """A metrics.json this memeval cannot read; the message names the file and why."""


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


def as_ci(value: Any) -> CI:
    return NO_CI if not value else (value[0], value[1])


def _map(value: Any) -> Mapping[str, Any]:
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
                                        s["conflicted_share"], _map(s.get("gate_actions")))
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
        return cls(data["memories"], data["candidate_pairs"], _map(data["conflicts_by_kind"]),
                   data.get("in_conflict_share"), as_ci(data.get("in_conflict_share_ci95")),
                   data["superseded"], _map(data["trust"]),
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
            stage_counts=_map(data.get("stage_counts")),
            content_score_threshold=ContentThreshold(threshold["first"], threshold["last"])
            if threshold else None,
            content_score_skipped=_map((data.get("degraded") or {}).get("content_score_skipped")),
            recall_by_label_source={source: stats.get("substantive_retained_rate") for source,
                                    stats in (data.get("by_label_source") or {}).items()},
            failures={what: ComponentFailures(data[f"{what}_errors"],
                                              _map(data.get(f"{what}_error_reasons")),
                                              data.get(f"{what}_short_circuited", 0))
                      for what in FAILING_COMPONENTS if f"{what}_errors" in data},
            rejection_store_size=data.get("rejection_store_size"),
            rejection_store_by_label=_map(data.get("rejection_store_by_label")),
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


CALIBRATION_METRICS = ("spearman", "kendall", "brier", "ece")


@dataclass(frozen=True)
class Calibration:
    """How well MQS ranks and predicts the trust labels, with bootstrap CIs."""

    spearman: float | None
    kendall: float | None
    brier: float | None
    ece: float | None
    ci95: Mapping[str, CI]  # by metric
    reliability: tuple[Mapping[str, Any], ...]  # bins: predicted, observed, n, low, high

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        return cls(data["spearman"], data["kendall"], data["brier"], data["ece"],
                   {m: as_ci(data.get(f"{m}_ci95")) for m in CALIBRATION_METRICS},
                   tuple(data.get("reliability") or ()))

    def scores(self) -> dict[str, float | None]:
        """Metric → value, in CALIBRATION_METRICS order."""
        return {"spearman": self.spearman, "kendall": self.kendall, "brier": self.brier,
                "ece": self.ece}


@dataclass(frozen=True)
class TrustGrade:
    """MQS against a numeric trust grade."""

    n: int
    spearman: float
    spearman_ci95: CI
    kendall: float
    kendall_ci95: CI


@dataclass(frozen=True)
class Mqs:
    fingerprint: str | None
    records: int
    labels: Mapping[str, int]
    outcome: str
    configured: Calibration | None
    fitted_out_of_fold: Calibration | None
    gain_out_of_fold: Mapping[str, float] | None
    constants: Mapping[str, Mapping[str, float]] | None  # configured and fitted, by constant
    trust_grade: TrustGrade | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Mqs:
        configured, fitted = data.get("configured"), data.get("fitted_out_of_fold")
        grade = data.get("trust_grade")
        return cls(data.get("fingerprint"), data.get("records", 0), _map(data.get("labels")),
                   str(data.get("outcome", "")),
                   Calibration.from_dict(configured) if configured else None,
                   Calibration.from_dict(fitted) if fitted else None,
                   data.get("gain_out_of_fold"), data.get("constants"),
                   TrustGrade(grade["n"], grade["spearman"], as_ci(grade["spearman_ci95"]),
                              grade["kendall"], as_ci(grade["kendall_ci95"])) if grade else None)


@dataclass(frozen=True)
class Mai:
    fingerprint: str | None
    scenarios: int
    accuracy: float | None
    accuracy_ci95: CI
    confusion: Mapping[str, Mapping[str, int]]  # ground truth → predicted → count
    pass_mark: float | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Mai:
        return cls(data.get("fingerprint"), data.get("scenarios", 0), data.get("accuracy"),
                   as_ci(data.get("accuracy_ci95")), _map(data.get("confusion")),
                   data.get("pass_mark"))


@dataclass(frozen=True)
class DetectorScores:
    accuracy: float | None
    confusion: Mapping[str, Mapping[str, int]]  # hand label → detected → count


@dataclass(frozen=True)
class Conflicts:
    """The `conflicts` section of a `conflict_detection` run: each detector's scores."""

    detectors: tuple[str, ...]
    by_detector: Mapping[str, DetectorScores]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Conflicts:
        detectors = tuple(data.get("detectors", ("memeval", "compat")))  # before the key existed
        return cls(detectors, {mode: DetectorScores(data[mode]["accuracy"],
                                                     _map(data[mode]["confusion"]))
                               for mode in detectors})


@dataclass(frozen=True)
class Paired:
    """A system's mean per-item measure and, for every system after the first, second − first
    with a paired bootstrap 95% CI."""

    mean: float | None = None
    delta: float | None = None
    delta_ci95: CI = NO_CI

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Paired:
        data = data or {}
        return cls(data.get("mean"), data.get("delta"), as_ci(data.get("delta_ci95")))


def _paired(data: Mapping[str, Any]) -> dict[str, Paired]:
    return {name: Paired.from_dict(entry) for name, entry in data.items()}


@dataclass(frozen=True)
class GatePaired:
    """A later system's write gate against the first's, entry by entry."""

    recall: Paired
    mcnemar_p: float | None


@dataclass(frozen=True)
class WriteGateTable:
    pass_no: int  # the last pass, which every system's row is
    systems: Mapping[str, PassMetrics]
    paired: Mapping[str, GatePaired]  # systems after the first

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WriteGateTable:
        return cls(int(data["pass"]),
                   {name: PassMetrics.from_dict({"pass": data["pass"], **p})
                    for name, p in data["systems"].items()},
                   {name: GatePaired(Paired.from_dict(p.get("recall")),
                                     (p.get("mcnemar") or {}).get("p_value"))
                    for name, p in data["paired"].items()})


@dataclass(frozen=True)
class TrustTable:
    records: int
    systems: Mapping[str, Calibration]
    brier_vs_first: Mapping[str, Paired]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrustTable:
        return cls(data["records"], {name: Calibration.from_dict(report)
                                     for name, report in data["systems"].items()},
                   _paired(data["brier_vs_first"]))


@dataclass(frozen=True)
class ConflictScores:
    precision: float | None  # of "any conflict"
    recall: float | None
    recall_by_type: Mapping[str, float | None]
    typed: bool  # False: the system flags conflicts without a type

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConflictScores:
        found = data["any_conflict"]
        return cls(found["precision"], found["recall"],
                   {kind: scores["recall"] for kind, scores in data["per_type"].items()},
                   bool(data["typed"]))


@dataclass(frozen=True)
class ConflictTable:
    pairs: int
    systems: Mapping[str, ConflictScores]
    correct_vs_first: Mapping[str, Paired]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConflictTable:
        return cls(data["pairs"], {name: ConflictScores.from_dict(scores)
                                   for name, scores in data["systems"].items()},
                   _paired(data["correct_vs_first"]))


@dataclass(frozen=True)
class SearchTable:
    queries: int
    memories: int
    k: int
    ndcg_vs_first: Mapping[str, Paired]
    recall_vs_first: Mapping[str, Paired]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchTable:
        return cls(data["queries"], data["memories"], data["k"], _paired(data["ndcg_vs_first"]),
                   _paired(data["recall_vs_first"]))


Table = WriteGateTable | TrustTable | ConflictTable | SearchTable


@dataclass(frozen=True)
class Comparison:
    """The `compare` section of a `compare_systems` run: the tables it measured; a capability no
    two systems shared (or without data) is None."""

    write_gate: WriteGateTable | None = None
    trust: TrustTable | None = None
    conflicts: ConflictTable | None = None
    search: SearchTable | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        gate, trust = data.get("write_gate"), data.get("trust")
        conflicts, search = data.get("conflicts"), data.get("search")
        return cls(WriteGateTable.from_dict(gate) if gate else None,
                   TrustTable.from_dict(trust) if trust else None,
                   ConflictTable.from_dict(conflicts) if conflicts else None,
                   SearchTable.from_dict(search) if search else None)

    def tables(self) -> Iterator[tuple[str, Table]]:
        """(capability, table) for each table measured, in the order the run measures them."""
        for what, table in (("write_gate", self.write_gate), ("trust", self.trust),
                            ("conflicts", self.conflicts), ("search", self.search)):
            if table is not None:
                yield what, table


@dataclass(frozen=True)
class RunResult:
    """metrics.json of one run: the header, the measured passes (per arm where an experiment
    has several), and the experiment sections readers use."""

    schema_version: int
    experiment: str
    run_id: str | None = None
    seed: int | None = None
    dataset: Dataset | None = None  # None: the run replayed no traces
    embedder: str | None = None  # the embedder's identity
    judge: str | None = None
    scorer: Scorer | None = None
    system: System | None = None
    passes: tuple[PassMetrics, ...] = ()
    arms: Mapping[str, tuple[PassMetrics, ...]] = field(default_factory=dict)
    mqs: Mqs | None = None
    mai: Mai | None = None
    compare: Comparison | None = None
    conflicts: Conflicts | None = None
    wall_seconds: float | None = None
    failures: tuple[str, ...] = ()
    sections: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the file as written

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = METRICS) -> RunResult:
        version = schema_version(data, source)
        dataset, system, scorer = data.get("dataset"), data.get("system"), data.get("scorer")
        mqs, mai = data.get("mqs"), data.get("mai")
        return cls(
            schema_version=version, experiment=str(data["experiment"]),
            run_id=data.get("run_id"), seed=data.get("seed"),
            dataset=Dataset.from_dict(dataset) if dataset else None,
            embedder=(data.get("embedder") or {}).get("identity"), judge=data.get("judge"),
            scorer=Scorer(scorer["name"], scorer["threshold_rule"]) if scorer else None,
            system=System(system["name"], _map(system.get("notes"))) if system else None,
            passes=tuple(PassMetrics.from_dict(p) for p in data.get("passes") or ()),
            arms={arm: tuple(PassMetrics.from_dict(p) for p in passes)
                  for arm, passes in (data.get("arms") or {}).items()},
            mqs=Mqs.from_dict(mqs) if mqs else None, mai=Mai.from_dict(mai) if mai else None,
            compare=Comparison.from_dict(data["compare"]) if "compare" in data else None,
            conflicts=Conflicts.from_dict(data["conflicts"]) if "conflicts" in data else None,
            wall_seconds=data.get("wall_seconds"), failures=tuple(data.get("failures") or ()),
            sections=dict(data))

    @property
    def fingerprint(self) -> str | None:
        """The replayed dataset's fingerprint (None for runs that replay no traces)."""
        return self.dataset.fingerprint if self.dataset else None

    def by_arm(self) -> Mapping[str, tuple[PassMetrics, ...]]:
        """The passes of each arm; a single-arm experiment's are arm `main`."""
        return self.arms or {"main": self.passes}


def load_result(run_dir: str | Path) -> RunResult:
    """The typed metrics.json of a run directory (any supported schema version)."""
    path = Path(run_dir) / METRICS
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {run_dir} a memeval run directory?")
    try:
        return RunResult.from_dict(json.loads(path.read_text()), str(path))
    except UnreadableResult:
        raise
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as err:
        raise UnreadableResult(f"{path}: not a memeval run's metrics ({type(err).__name__}: "
                               f"{err}); rerun the experiment to rewrite it") from err
