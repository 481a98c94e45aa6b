"""The learned conflict detector and the content-aware trust score on a pass's stored memories,
reported beside memledger's conflict rule and MQS (which stay as they are).

Both models are fitted once per run on the development sets (`dev_pairs`, `dev_records`), never
on the replayed memories. Each stored memory is paired with its `neighbours` nearest EARLIER
memories above `min_similarity` (quality/stored.py's `nearest_earlier`), and the detector labels
each pair; a temporal conflict also says which side supersedes. The trust score reads the same
record MQS scores (confidence, hedging, memledger's conflict reference) plus the text's content
signals.
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memeval.data.quality_sets import (
    CONFLICT_LABELS,
    LabelledPair,
    check_source,
    file_fingerprint,
    load_conflict_pairs,
    load_memory_records,
)
from memeval.engine.gate.gate import Decision, Gate
from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.calibration import bootstrap_rows
from memeval.metrics.separation import separation
from memeval.metrics.trust_fit import TrustModel, TrustScoreConfig, fit_trust_model
from memeval.quality.conflict_features import ConflictSide
from memeval.quality.conflict_model import (
    CONFLICT_DETECTORS,
    Pair,
    PairDetector,
    Superseding,
)
from memeval.quality.content_signals import ContentSignals
from memeval.quality.mqs import MQSConstants
from memeval.quality.stored import StoredMQSConfig, nearest_earlier
from memeval.quality.trust_terms import TERMS, term_matrix
from memeval.registry import bounded
from memeval.systems.reference.stored_quality import stored_records
from memeval.utils.fit_cache import FitCache
from memeval.utils.progress import Progress, quiet

KINDS = CONFLICT_LABELS[:-1]  # every label but "none"
QUANTILES = (0.1, 0.5, 0.9)


@dataclass
class StoredModelsConfig:
    enabled: bool = True
    neighbours: int = bounded(3, 1, 100)  # earlier memories each stored memory is paired with
    min_similarity: float = bounded(0.5, -1, 1)  # a candidate pair's cosine must exceed this
    # The detector learned from memories of 5-40 words; a longer one (a whole turn stating many
    # values) is out of its range: pairs with one are counted, not labelled.
    max_words: int = bounded(60, 1)
    dev_pairs: list[str] = field(default_factory=list)
    dev_records: list[str] = field(default_factory=list)
    on_error: str = "skip"
    detector: dict[str, Any] = field(default_factory=lambda: {"name": "learned"})
    trust: TrustScoreConfig = field(default_factory=TrustScoreConfig)

    def validate(self) -> None:
        if not self.enabled:
            return
        if not self.dev_pairs or not self.dev_records:
            raise ValueError("stored_models needs dev_pairs and dev_records to fit on "
                             "(or stored_models.enabled=false)")
        for path in self.dev_pairs:
            check_source(path, self.on_error, "stored_models.dev_pairs")
        for path in self.dev_records:
            check_source(path, self.on_error, "stored_models.dev_records")
        if not self.neighbours >= 1:
            raise ValueError("stored_models.neighbours must be at least 1")
        if not -1.0 <= self.min_similarity <= 1.0:
            raise ValueError("stored_models.min_similarity is a cosine: it must be in [-1, 1]")
        CONFLICT_DETECTORS.validate(self.detector, "experiment.stored_models.detector")
        self.trust.validate()


@dataclass
class StoredModels:
    """The two models, fitted on the development sets."""

    cfg: StoredModelsConfig
    detector: PairDetector
    trust: TrustModel
    signals: ContentSignals
    mqs: MQSConstants
    fitted_on: dict[str, Any] = field(default_factory=dict)  # what each model was fitted on


def labelled_sides(pairs: Sequence[LabelledPair]) -> list[Pair]:
    """Labelled pairs as the detector's (a, b) memories."""
    return [(ConflictSide(p.a.content, p.a.timestamp, p.a.path),
             ConflictSide(p.b.content, p.b.timestamp, p.b.path)) for p in pairs]


def fit_stored_models(cfg: StoredModelsConfig, mqs: MQSConstants, fits: FitCache,
                      progress: Progress = quiet) -> StoredModels:
    """Both models fitted on the development sets, with what they were fitted on. The fit is
    deterministic, so it is kept in the fit cache by the settings and the files' contents: a
    sweep's, a gate's or a test session's later runs reuse it instead of refitting (10–20 s,
    minutes on a slow machine: `progress` shows each step)."""
    files = tuple(file_fingerprint(path) for path in (*cfg.dev_pairs, *cfg.dev_records))
    return fits.fit("stored_models", (repr(cfg), repr(mqs), files),
                    lambda: _fit(cfg, mqs, progress))


def _fit(cfg: StoredModelsConfig, mqs: MQSConstants, progress: Progress) -> StoredModels:
    pairs = [p for path in progress(cfg.dev_pairs, len(cfg.dev_pairs), "conflict pair files",
                                    "file")
             for p in load_conflict_pairs(path, cfg.on_error)[0]]
    detector = CONFLICT_DETECTORS.build(cfg.detector)
    detector.fit(labelled_sides(pairs), [p.conflict for p in pairs], progress=progress,
                 newer=[p.newer for p in pairs])
    signals = ContentSignals(cfg.trust.content)
    files = [load_memory_records(path, cfg.on_error)[0] for path in cfg.dev_records]
    trusted = [item.trusted for items in files for item in items]
    if len(set(trusted)) < 2:
        raise ValueError("stored_models.dev_records: fitting the trust score needs trusted and "
                         "other records; the development records hold one kind only")
    x = np.vstack([term_matrix([item.record for item in items], mqs, signals, progress)
                   for items in files])
    model = fit_trust_model(x, np.asarray(trusted, dtype=float), TERMS, cfg.trust)
    fitted_on = {"pairs": len(pairs), "records": len(trusted),
                 "fingerprints": {Path(path).name: file_fingerprint(path)
                                  for path in (*cfg.dev_pairs, *cfg.dev_records)}}
    return StoredModels(cfg, detector, model, signals, mqs, fitted_on)


def _superseder(detector: PairDetector, pairs: Sequence[Pair], kinds: Sequence[str],
                earlier: Sequence[str], later: Sequence[str]) -> list[str | None]:
    """Per pair, the id of the memory that supersedes the other (temporal conflicts only)."""
    temporal = [i for i, kind in enumerate(kinds) if kind == "temporal"]
    found: list[str | None] = [None] * len(pairs)
    if not isinstance(detector, Superseding) or not temporal:
        return found  # the rules say which kind, not which side
    for i, side in zip(temporal, detector.newer([pairs[i] for i in temporal]), strict=True):
        found[i] = earlier[i] if side == "a" else later[i]
    return found


def stored_model_quality(gate: Gate, decisions: Sequence[Decision], cfg: StoredMQSConfig,
                         models: StoredModels, *, resamples: int, seed: int,
                         progress: Progress = quiet
                         ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """One pass's stored memories: a summary for metrics.json and, per memory id, its columns
    for the `stored_memories` table; `progress` shows the pairs read and the records scored."""
    memories, written, records = stored_records(gate, decisions, cfg)
    ids = [m.id for m in memories]
    nearest = [(earlier, later, cosine) for later, found in enumerate(
        nearest_earlier(gate.memories.vectors, models.cfg.neighbours, models.cfg.min_similarity))
        for earlier, cosine in found]
    short = [len(m.text.split()) <= models.cfg.max_words for m in memories]
    candidates = [(a, b, cosine) for a, b, cosine in nearest if short[a] and short[b]]
    pairs = [(ConflictSide(memories[a].text), ConflictSide(memories[b].text))
             for a, b, _ in candidates]
    kinds = models.detector.predict(pairs, progress=progress) if pairs else []
    winners = _superseder(models.detector, pairs, kinds, [ids[a] for a, _, _ in candidates],
                          [ids[b] for _, b, _ in candidates])
    conflicts: list[list[dict[str, Any]]] = [[] for _ in memories]
    for (a, b, cosine), kind, winner in zip(candidates, kinds, winners, strict=True):
        if kind == "none":
            continue
        for own, other in ((a, b), (b, a)):
            conflicts[own].append({"kind": kind, "with": ids[other], "cosine": round(cosine, 4),
                                   "newer": winner})
    superseded = [any(c["newer"] is not None and c["newer"] != ids[i] for c in found)
                  for i, found in enumerate(conflicts)]
    trust = models.trust.score(term_matrix(records, models.mqs, models.signals, progress))
    columns = {ids[i]: {"learned_conflicts": conflicts[i],
                        "learned_conflict_kinds": sorted({c["kind"] for c in conflicts[i]}),
                        "superseded": superseded[i], "trust_score": float(trust[i])}
               for i in range(len(memories))}
    in_conflict = np.asarray([bool(c) for c in conflicts], dtype=float)
    labels = [d.label for d in written]
    common = {"resamples": resamples, "seed": seed}
    summary = {
        "memories": len(memories), "candidate_pairs": len(candidates),
        "pairs_too_long": len(nearest) - len(candidates),
        "neighbours": models.cfg.neighbours, "min_similarity": models.cfg.min_similarity,
        "max_words": models.cfg.max_words,
        "detector": str(models.cfg.detector["name"]), "fitted_on": deepcopy(models.fitted_on),
        "conflicts_by_kind": {kind: sum(1 for k in kinds if k == kind) for kind in KINDS},
        "in_conflict_share": _mean(in_conflict),
        "in_conflict_share_ci95": _finite(bootstrap_ci(in_conflict, resamples, seed)),
        "superseded": int(sum(superseded)),
        "trust": _trust_summary(trust, resamples, seed),
        "trust_separation": separation(trust.tolist(), labels, **common),
        "trust_mean_by_label": {str(label): float(np.mean([t for t, lab in zip(
            trust, labels, strict=True) if lab == label]))
            for label in sorted(set(labels), key=str)},
    }
    return summary, columns


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def _finite(bounds: tuple[float, float]) -> list[float | None]:
    return [None if np.isnan(b) else float(b) for b in bounds]


def _trust_summary(trust: np.ndarray, resamples: int, seed: int) -> dict[str, Any]:
    """Mean and quantiles of the trust score, each with a 95% bootstrap CI over memories."""
    out: dict[str, Any] = {"mean": _mean(trust),
                           "mean_ci95": _finite(bootstrap_ci(trust, resamples, seed))}
    for q in QUANTILES:
        name = f"p{round(100 * q)}"
        out[name] = float(np.quantile(trust, q)) if trust.size else None
        out[f"{name}_ci95"] = _finite(bootstrap_rows(
            lambda sample, q=q: np.quantile(sample, q, axis=1), (trust,), resamples, seed)
            if trust.size else (float("nan"), float("nan")))
    return out
