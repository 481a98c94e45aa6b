"""Content-score gate: skip the judge when the text scores like the judge's past rejections.

It rebuilds its prototypes at start-up and after every `rebuild_every` new texts in the stores it
learns from (a repeat that a distinct store only moves to most-recent does not count). While
learning, a seeded `audit_rate` share of would-be rejections goes to the judge anyway: once the
gate is active the judge no longer sees what it filters, so without audits the scorer starves of
negative examples and never learns from its own mistakes. Graceful degradation: with too little
learned data, or when embedding fails, the stage passes everything (the judge decides) — never a
false rejection.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from memeval.backends.embedders.base import Embedder, EmbeddingError, embed_available
from memeval.engine.gate.base import STAGES, Candidate, StageResult
from memeval.engine.gate.narration import VIEWS, Narration, check_view
from memeval.engine.gate.threshold import ThresholdConfig, resolve_policy
from memeval.engine.scorers.base import ContentScorer, Prototypes
from memeval.engine.store.ring_store import RingStore
from memeval.registry import SEEDS, bounded

log = logging.getLogger(__name__)


@cache
def _blas_controller() -> ThreadpoolController:
    return ThreadpoolController()  # inspects the loaded libraries once, not per rebuild


def single_threaded_blas() -> Any:
    """Refits and calibration work on a few hundred rows: a second BLAS thread only adds wake-up
    and contention costs (measured: ~50% more time for the gate's own work on 2 cores)."""
    return _blas_controller().limit(limits=1, user_api="blas")


@dataclass
class ContentScoreConfig:
    learn_last: int = bounded(150, 1)
    rebuild_every: int = bounded(25, 1)
    audit_rate: float = bounded(0.0, 0, 1)
    seed: int = bounded(0, *SEEDS)
    calibrate_every: int = bounded(1, 1)
    view: str = "whole"
    # Agreement before a SKIP teaches: a judge SKIP of a text the scorer ranks at or above the
    # median of the judge's acceptances is not learned. A fallible judge's wrong SKIPs of real
    # findings otherwise teach the scorer that findings are noise.
    dispute_skips: bool = False

    def validate(self) -> None:
        if self.learn_last < 1 or self.rebuild_every < 1 or self.calibrate_every < 1:
            raise ValueError("learn_last, rebuild_every and calibrate_every must be at least 1")
        if not 0.0 <= self.audit_rate <= 1.0:
            raise ValueError("audit_rate must be in [0, 1]")
        check_view(self.view)


def scored_view(cfg: ContentScoreConfig, narration: Narration, text: str) -> str:
    """The part of `text` the stage embeds and scores, lexical features included (`view`; the
    whole text when it claims nothing)."""
    return VIEWS[cfg.view](narration, text) or text


class ContentScoreGate:
    name = "content_score"

    def __init__(self, cfg: ContentScoreConfig, threshold: ThresholdConfig, scorer: ContentScorer,
                 embedder: Embedder, rejections: RingStore, accepts: RingStore,
                 narration: Narration) -> None:
        self.cfg = cfg
        self.narration = narration
        self.threshold_cfg = threshold  # the top-level `threshold` group (memeval/conf/threshold/)
        self.scorer = scorer
        self.policy = resolve_policy(threshold.policy)
        self.embedder = embedder
        self.rejections = rejections
        self.accepts = accepts
        self.threshold: float | None = None
        self.unavailable = "not built yet"
        self.rebuilds = 0
        self.auditing = True
        self._audit_draws = np.random.default_rng(cfg.seed)
        self._since_rebuild = 0
        self._static: tuple[np.ndarray, np.ndarray] | None = None
        self._fitted = False
        # acceptance text -> its score before it was learned (None: no model existed then)
        self._prequential: dict[str, float | None] = {}
        self.calibrations: Counter[str] = Counter()  # which score source set each cut
        self.accepted_median: float | None = None  # of the last calibration's acceptance scores

    def restart(self) -> None:
        """Forget what only lived in memory (a restarted daemon keeps its stores, not its model's
        past scores), then rebuild and calibrate from the stores."""
        self._fitted, self._prequential = False, {}
        self.scorer.forget()
        self.rebuild(calibrate=True)

    def learning_state(self) -> dict[str, Any]:
        """What carries over a restart besides the stores: counters, the audit draws, the cut
        (kept as is when `threshold.refresh` is off) and the median that disputes SKIPs."""
        return {"rebuilds": self.rebuilds, "calibrations": dict(self.calibrations),
                "audit_draws": self._audit_draws.bit_generator.state,
                "threshold": self.threshold, "accepted_median": self.accepted_median}

    def restore_learning_state(self, state: dict[str, Any]) -> None:
        self.rebuilds = int(state["rebuilds"])
        self.calibrations = Counter(state["calibrations"])
        self._audit_draws.bit_generator.state = state["audit_draws"]
        self.threshold = state["threshold"]
        self.accepted_median = state.get("accepted_median")  # absent from older checkpoints

    def view(self, text: str) -> str:
        return scored_view(self.cfg, self.narration, text)

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return self.embedder.embed(texts)

    def _embed_learned(self, store: RingStore) -> tuple[np.ndarray, list[str]]:
        """The store's recent texts that can be embedded now: one text the embedding server
        never saw must not switch the whole gate off (none at all does)."""
        texts = [self.view(text) for text in store.recent_texts(self.cfg.learn_last)]
        vectors = embed_available(self.embedder, texts) if texts else []
        kept = [(v, t) for v, t in zip(vectors, texts, strict=True) if v is not None]
        if len(kept) < len(texts):
            log.warning("learning from %d of %d stored texts: the others could not be embedded",
                        len(kept), len(texts))
        if not kept:
            if texts:
                raise EmbeddingError(f"none of the {len(texts)} stored texts could be embedded")
            return np.zeros((0, self.embedder.dim), dtype=np.float32), []
        return np.stack([v for v, _ in kept]), [t for _, t in kept]

    def rebuild(self, calibrate: bool = False) -> None:
        """(Re)learn prototypes and threshold from the stores, as the daemon does at start-up;
        the threshold is re-derived on every `calibrate_every`-th rebuild or when asked."""
        self.rebuilds += 1
        self._since_rebuild = 0
        try:
            if self._static is None:
                self._static = (self._embed(self.scorer.static_quality_texts),
                                self._embed(self.scorer.static_noise_texts))
            noise, noise_texts = self._embed_learned(self.rejections)
            quality, quality_texts = self._embed_learned(self.accepts)
            protos = Prototypes(
                static_quality=self._static[0], static_noise=self._static[1],
                learned_noise=noise, learned_quality=quality,
                learned_noise_texts=noise_texts, learned_quality_texts=quality_texts,
            )
        except EmbeddingError as err:
            log.warning("content scorer unavailable, gate skipped: %s", err)
            self.threshold, self.unavailable = None, f"embedding failed: {err}"
            return
        with single_threaded_blas():
            self._learn(protos, calibrate)

    def _learn(self, protos: Prototypes, calibrate: bool) -> None:
        settings = self.threshold_cfg
        if settings.scores == "prequential":
            self._score_fresh_acceptances(protos)
        self._fitted = self.scorer.fit(protos)
        if not self._fitted:
            self.threshold, self.unavailable = None, "too little learned data"
            return
        due = settings.refresh and (calibrate or self.rebuilds % self.cfg.calibrate_every == 0)
        if due or self.threshold is None:
            self.threshold = self.policy(settings, self._calibration_scores,
                                         len(protos.learned_quality))
        self.unavailable = "" if self.threshold is not None else "threshold not calibrated yet"

    def _score_fresh_acceptances(self, protos: Prototypes) -> None:
        """Score acceptances added since the last fit with the model that has not learned them
        yet (None when no model existed); keep only acceptances still in the learning window."""
        texts = protos.learned_quality_texts
        fresh = [i for i, text in enumerate(texts) if text not in self._prequential]
        scores: list[float | None] = [None] * len(fresh)
        if self._fitted and fresh:
            vectors, fresh_texts = protos.learned_quality[fresh], [texts[i] for i in fresh]
            scores = list(self.scorer.score(vectors, fresh_texts).tolist())
        self._prequential.update(zip((texts[i] for i in fresh), scores, strict=True))
        window = set(texts)
        self._prequential = {t: s for t, s in self._prequential.items() if t in window}

    def _calibration_scores(self) -> np.ndarray:
        settings = self.threshold_cfg
        known = [s for s in self._prequential.values() if s is not None]
        if settings.scores == "prequential" and len(known) >= settings.min_accepted:
            self.calibrations["prequential"] += 1
            scores = np.array(known, dtype=np.float32)
        else:
            self.calibrations["held_out"] += 1
            scores = self.scorer.calibration_scores()
        self.accepted_median = float(np.median(scores))
        return scores

    def disputes(self, score: float | None) -> bool:
        """Whether a judge SKIP of a text with this score goes unlearned (`dispute_skips`)."""
        return (self.cfg.dispute_skips and score is not None
                and self.accepted_median is not None and score >= self.accepted_median)

    def note_addition(self) -> None:
        self._since_rebuild += 1
        if self._since_rebuild >= self.cfg.rebuild_every:
            self.rebuild()

    def __call__(self, item: Candidate) -> StageResult:
        if self.threshold is None:
            return StageResult(self.name, passed=True, detail=f"skipped: {self.unavailable}")
        if item.vector is None:
            return StageResult(self.name, passed=True, detail="skipped: no embedding")
        score = float(self.scorer.score(item.vector[None, :], [item.embedded])[0])
        passed = score >= self.threshold
        audited = (not passed and self.auditing and self.cfg.audit_rate > 0
                   and self._audit_draws.random() < self.cfg.audit_rate)
        return StageResult(self.name, passed=passed or audited, score=score,
                           threshold=self.threshold, detail="audit" if audited else "")


@STAGES.register("content_score", ContentScoreConfig)
def build_content_score(cfg: ContentScoreConfig, *, threshold: ThresholdConfig,
                        scorer: ContentScorer, embedder: Embedder, rejections: RingStore,
                        accepts: RingStore, narration: Narration,
                        **_: object) -> ContentScoreGate:
    return ContentScoreGate(cfg, threshold, scorer, embedder, rejections, accepts, narration)
