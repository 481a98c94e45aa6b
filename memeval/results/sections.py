"""Typed views of the sections quality and comparison experiments write: the vocabulary their
declared `Findings` types are made of, and that their figures, tables and report read.

A view keeps the section as it was written (`to_dict` gives it back), so a run written through
it is byte for byte what the experiment measured.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from memeval.results.result import CI, NO_CI, PassMetrics, as_ci, as_map


@dataclass(frozen=True)
class Written:
    """A section read from, and written back as, its JSON."""

    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False,
                                       kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.written)


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
class Mqs(Written):
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
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        configured, fitted = data.get("configured"), data.get("fitted_out_of_fold")
        grade = data.get("trust_grade")
        return cls(data.get("fingerprint"), data.get("records", 0), as_map(data.get("labels")),
                   str(data.get("outcome", "")),
                   Calibration.from_dict(configured) if configured else None,
                   Calibration.from_dict(fitted) if fitted else None,
                   data.get("gain_out_of_fold"), data.get("constants"),
                   TrustGrade(grade["n"], grade["spearman"], as_ci(grade["spearman_ci95"]),
                              grade["kendall"], as_ci(grade["kendall_ci95"])) if grade else None,
                   written=dict(data))


@dataclass(frozen=True)
class Mai(Written):
    fingerprint: str | None
    scenarios: int
    accuracy: float | None
    accuracy_ci95: CI
    confusion: Mapping[str, Mapping[str, int]]  # ground truth → predicted → count
    pass_mark: float | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls(data.get("fingerprint"), data.get("scenarios", 0), data.get("accuracy"),
                   as_ci(data.get("accuracy_ci95")), as_map(data.get("confusion")),
                   data.get("pass_mark"), written=dict(data))


@dataclass(frozen=True)
class DetectorScores:
    accuracy: float | None
    confusion: Mapping[str, Mapping[str, int]]  # hand label → detected → count


@dataclass(frozen=True)
class Conflicts(Written):
    """The `conflicts` section of a `conflict_detection` run: each detector's scores."""

    detectors: tuple[str, ...]
    by_detector: Mapping[str, DetectorScores]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        detectors = tuple(data.get("detectors", ("memeval", "compat")))  # before the key existed
        return cls(detectors, {mode: DetectorScores(data[mode]["accuracy"],
                                                     as_map(data[mode]["confusion"]))
                               for mode in detectors}, written=dict(data))


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
    mcnemar_p: float | None  # on the substantive entries the recall is measured on
    decisions_mcnemar_p: float | None  # on every keep/drop decision


@dataclass(frozen=True)
class RankedGate:
    """A system's place in the write gates' ranking (metrics/gate_cost.py)."""

    rank: int
    cost: float
    cost_ci95: CI
    missed: float  # share of substantive entries dropped
    noise: float  # share of noise entries stored
    judged: float  # share of entries sent to the judge
    keeps_rank: float  # share of bootstrap resamples in which it holds `rank`


@dataclass(frozen=True)
class Neighbours:
    """Two systems next to each other in the ranking: the later one's cost minus the earlier's,
    paired; `separated` when its 95% CI excludes 0."""

    better: str
    worse: str
    delta: float
    delta_ci95: CI
    separated: bool


@dataclass(frozen=True)
class GateRanking:
    weights: Mapping[str, float]  # missed, noise, judged
    entries: int
    systems: Mapping[str, RankedGate]  # cheapest first
    neighbours: tuple[Neighbours, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateRanking:
        return cls(dict(data["weights"]), int(data["entries"]),
                   {name: RankedGate(int(r["rank"]), r["cost"], as_ci(r["cost_ci95"]),
                                     r["missed"], r["noise"], r["judged"], r["keeps_rank"])
                    for name, r in data["systems"].items()},
                   tuple(Neighbours(n["better"], n["worse"], n["delta"], as_ci(n["delta_ci95"]),
                                    bool(n["separated"])) for n in data["neighbours"]))


@dataclass(frozen=True)
class WriteGateTable:
    pass_no: int  # the last pass, which every system's row is
    systems: Mapping[str, PassMetrics]
    paired: Mapping[str, GatePaired]  # systems after the first
    splits: tuple[str, ...] | None = None  # the dataset's splits replayed; None: all of it
    ranking: GateRanking | None = None  # None in runs from before the ranking

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WriteGateTable:
        splits, ranking = data.get("splits"), data.get("ranking")
        return cls(int(data["pass"]),
                   {name: PassMetrics.from_dict({"pass": data["pass"], **p})
                    for name, p in data["systems"].items()},
                   {name: GatePaired(Paired.from_dict(p.get("recall")),
                                     (p.get("mcnemar_recall") or {}).get("p_value"),
                                     # runs before the split named it `mcnemar`
                                     (p.get("mcnemar_decisions") or p.get("mcnemar")
                                      or {}).get("p_value"))
                    for name, p in data["paired"].items()},
                   tuple(splits) if splits else None,
                   GateRanking.from_dict(ranking) if ranking else None)


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
class Comparison(Written):
    """The `compare` section of a `compare_systems` run: the tables it measured; a capability no
    two systems shared (or without data) is None."""

    write_gate: WriteGateTable | None = None
    trust: TrustTable | None = None
    conflicts: ConflictTable | None = None
    search: SearchTable | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        gate, trust = data.get("write_gate"), data.get("trust")
        conflicts, search = data.get("conflicts"), data.get("search")
        return cls(WriteGateTable.from_dict(gate) if gate else None,
                   TrustTable.from_dict(trust) if trust else None,
                   ConflictTable.from_dict(conflicts) if conflicts else None,
                   SearchTable.from_dict(search) if search else None, written=dict(data))

    def tables(self) -> Iterator[tuple[str, Table]]:
        """(capability, table) for each table measured, in the order the run measures them."""
        for what, table in (("write_gate", self.write_gate), ("trust", self.trust),
                            ("conflicts", self.conflicts), ("search", self.search)):
            if table is not None:
                yield what, table


