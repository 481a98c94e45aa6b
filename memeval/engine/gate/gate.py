"""The gate: stages in configured order, the write pipeline, and the learning feedback.

Which rejections feed the rejection store is configuration (`feed_stages`, default the judge's
SKIPs only). Feeding the content scorer's own rejections back is the positive-feedback loop the
memoryd authors hit; it is allowed only so the `feedback_loop` experiment can show the collapse.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memeval.backends.embedders.base import Embedder, EmbeddingError, embed_available
from memeval.backends.judges.base import Judge
from memeval.engine.gate.base import STAGES, Candidate, Stage, StageResult
from memeval.engine.gate.content_score import ContentScoreGate, scored_view
from memeval.engine.gate.narration import Narration, NarrationConfig
from memeval.engine.gate.threshold import ThresholdConfig
from memeval.engine.gate.write import NOT_EMBEDDED, WriteConfig, WritePipeline, clean
from memeval.engine.scorers.base import ContentScorer
from memeval.engine.store.memory_store import MemoryStore
from memeval.engine.store.ring_store import RingStore
from memeval.entry import Entry
from memeval.registry import ConfigError, bounded

log = logging.getLogger(__name__)

# A decision's scorer note when the judge said SKIP but the scorer disputed it, so the SKIP was
# not learned (content_score.dispute_skips).
DISPUTED = "skip disputed"


@dataclass
class StoreConfig:
    capacity: int = bounded(500, 1)
    text_chars: int = bounded(500, 1)
    distinct: bool = True
    flush_every: int = bounded(25, 1)

    def validate(self) -> None:
        if self.capacity < 1 or self.text_chars < 1 or self.flush_every < 1:
            raise ValueError("capacity, text_chars and flush_every must be at least 1")


@dataclass
class RejectionStoreConfig(StoreConfig):
    feed_stages: list[str] = field(default_factory=lambda: ["judge"])


@dataclass
class GateConfig:
    """`max_embedding_failure_share`: a run in which the gate could not embed more than this share
    of the entries it was given ends as a failure (after its results are written): the
    content-score stage it measures hardly ran."""

    order: list[str] = field(default_factory=list)
    stages: dict[str, Any] = field(default_factory=dict)
    write: WriteConfig = field(default_factory=WriteConfig)
    rejection_store: RejectionStoreConfig = field(default_factory=RejectionStoreConfig)
    accept_store: StoreConfig = field(default_factory=StoreConfig)
    max_embedding_failure_share: float = bounded(0.05, 0, 1)
    # What counts as narration (narration.py): read by the stages that set it aside.
    narration: NarrationConfig = field(default_factory=lambda: NarrationConfig(plans=["let me"]))
    # The content-score stage's cut: the top-level `threshold` group, not a key of the gate's
    # YAML; validating a run's settings puts it here, so the gate carries all it decides with.
    threshold: ThresholdConfig = field(default_factory=ThresholdConfig)

    def validate(self) -> None:
        self.narration.validate()
        self.write.validate()
        self.rejection_store.validate()
        self.accept_store.validate()
        if not 0.0 <= self.max_embedding_failure_share <= 1.0:
            raise ValueError("max_embedding_failure_share must be in [0, 1] (1: never fail)")
        for name in self.order:
            if name not in self.stages:
                raise ConfigError(f"gate.order names '{name}' but gate.stages has no '{name}'")
            self.stage_config(name)
        for stage in self.rejection_store.feed_stages:
            if stage not in self.order:
                raise ConfigError(f"rejection_store.feed_stages names unknown stage '{stage}' "
                                  f"(stages: {', '.join(self.order)})")

    def stage_config(self, name: str) -> Any:
        """The validated settings of stage `name`; None when the gate does not run it."""
        if name not in self.order:
            return None
        return STAGES.validate({"name": name, **(self.stages[name] or {})})


@dataclass
class Decision:
    """One entry's path through the gate in one pass: a row of decisions.parquet."""

    pass_no: int
    phase: str
    entry_id: str
    label: str | None
    label_source: str | None
    asst_len: int
    outcome: str
    retained: bool
    score: float | None = None
    threshold: float | None = None
    scorer_note: str = ""
    embedded: bool = True  # False: stored although the write path could not embed (no dedup)
    embedding_error: str = ""  # why the gate could not embed the text on entry ("" if it could)
    audited: bool = False
    judge_called: bool = False
    judge_skip: bool | None = None
    judge_cached: bool = False
    judge_error: str = ""  # why the judge gave no verdict ("" if it gave one), redacted
    judge_tokens_in: int = 0
    judge_tokens_out: int = 0
    judge_cost_usd: float = 0.0
    system_error: str = ""  # why the system under test gave no decision ("" if it gave one)
    latency_ms: dict[str, float] = field(default_factory=dict)
    arm: str = "main"
    started_at: float = 0.0  # wall clock (epoch s) when the entry entered the gate: span times


class _FirstError:
    """Passes calls through to an embedder and keeps the first error's message: `embed_available`
    turns failures into None, and the run must still say why (and where) embedding failed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.error = ""

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        try:
            return self.inner.embed(texts)
        except EmbeddingError as err:
            self.error = self.error or str(err) or type(err).__name__
            raise


def embedded_texts(cfg: GateConfig, redact: Callable[[str], str],
                   entries: Sequence[Entry]) -> list[str]:
    """The distinct texts a replay of `entries` through this gate embeds, for warming a cache
    ahead of it: the content stage's view of each redacted response (what `prepare` embeds) and
    of its start as the learning stores keep it (what a scorer rebuild embeds), and the memory
    the write stage would store from it (which it embeds to deduplicate)."""
    responses = [redact(e.assistant_response) for e in entries]
    texts = [written if written == text else redact(written)
             for text in responses for written in [clean(text, cfg.write.max_chars)]]
    if "content_score" in cfg.order:
        view = content_view(cfg)
        kept = {cfg.rejection_store.text_chars, cfg.accept_store.text_chars}
        texts = [view(text) for text in responses] + [
            view(text[:chars]) for chars in sorted(kept) for text in responses
            if len(text) > chars] + texts
    return list(dict.fromkeys(texts))


def prepared_texts(cfg: GateConfig, redact: Callable[[str], str],
                   entries: Sequence[Entry]) -> list[str]:
    """The distinct texts every replay of `entries` embeds (`prepare`: the content stage's view
    of each redacted response); `embedded_texts` adds those only some entries reach."""
    return list(dict.fromkeys(_views(cfg, [redact(e.assistant_response) for e in entries])))


def content_view(cfg: GateConfig) -> Callable[[str], str]:
    """The part of a text the content stage, as `cfg` sets it, embeds and scores (its settings
    read whether or not the gate runs it, unlike `stage_config`: the content encoder's fit
    reads them too)."""
    stage = STAGES.validate({"name": "content_score", **(cfg.stages.get("content_score") or {})})
    narration = Narration(cfg.narration)
    return lambda text: scored_view(stage, narration, text)


def _views(cfg: GateConfig, responses: list[str]) -> list[str]:
    """The content stage's view of each response; none without a content stage."""
    if "content_score" not in cfg.order:
        return []
    view = content_view(cfg)
    return [view(text) for text in responses]


class Gate:
    def __init__(self, cfg: GateConfig, *, embedder: Embedder, judge: Judge,
                 scorer: ContentScorer, redact: Callable[[str], str], state_dir: Path,
                 content_embedder: Embedder | None = None) -> None:
        """`content_embedder`: what the content stage embeds with, when not `embedder` (which
        deduplicates what is written)."""
        self.cfg = cfg
        self.embedder = embedder
        self.redact = redact
        self.state_dir = state_dir
        self.rejections = self._store(state_dir / "rejection_store.jsonl", cfg.rejection_store)
        self.accepts = self._store(state_dir / "accept_store.jsonl", cfg.accept_store)
        deps = {"embedder": content_embedder or embedder, "judge": judge, "scorer": scorer,
                "threshold": cfg.threshold, "rejections": self.rejections, "accepts": self.accepts,
                "narration": Narration(cfg.narration)}
        self.stages: list[Stage] = [
            STAGES.build({"name": name, **(cfg.stages[name] or {})}, **deps) for name in cfg.order
        ]
        self.memories = MemoryStore(embedder.dim)
        self.writer = WritePipeline(cfg.write, embedder, redact, self.memories,
                                    reuse_vectors=content_embedder in (None, embedder))
        self._learning = True
        self._embedding_errors: dict[str, str] = {}  # entry id -> why it could not be embedded

    @property
    def learning(self) -> bool:
        """Whether verdicts feed the stores (and content-score audits run); off for evaluation."""
        return self._learning

    @learning.setter
    def learning(self, value: bool) -> None:
        self._learning = value
        if self.content_gate is not None:
            self.content_gate.auditing = value

    @staticmethod
    def _store(path: Path, cfg: StoreConfig) -> RingStore:
        return RingStore(path, cfg.capacity, cfg.text_chars, cfg.distinct, cfg.flush_every)

    @property
    def stores(self) -> tuple[RingStore, RingStore]:
        """The persisted stores: judge rejections, then acceptances."""
        return self.rejections, self.accepts

    @property
    def content_gate(self) -> ContentScoreGate | None:
        return next((s for s in self.stages if isinstance(s, ContentScoreGate)), None)

    def restart(self, wipe_memories: bool = True) -> None:
        """A daemon restart: reload stores from disk, rebuild the scorer, maybe wipe memories."""
        for store in self.stores:
            store.reload()
        if wipe_memories:
            self.memories = MemoryStore(self.embedder.dim)
            self.writer.store = self.memories
        if self.content_gate is not None:
            self.content_gate.restart()

    def learning_state(self) -> dict[str, Any]:
        """What a restart keeps besides the stores on disk (see experiments/checkpoint.py)."""
        content = self.content_gate
        return {"content_score": content.learning_state() if content is not None else None}

    def restore_learning_state(self, state: dict[str, Any]) -> None:
        content, saved = self.content_gate, state["content_score"]
        if content is not None and saved is not None:
            content.restore_learning_state(saved)

    def prepare(self, entries: Sequence[Entry]) -> list[Candidate]:
        """Redact once, embed every text (the content stage's view of it) in one batch (cached):
        the scorer reads vectors."""
        prompts = [self.redact(e.user_prompt) for e in entries]
        texts = [self.redact(e.assistant_response) for e in entries]
        vectors: list[np.ndarray | None] = [None] * len(texts)
        content = self.content_gate
        views = [content.view(text) for text in texts] if content is not None else texts
        if content is not None:
            recorder = _FirstError(content.embedder)
            vectors = embed_available(recorder, views)
            reason = self.redact(recorder.error)
            for entry, vector in zip(entries, vectors, strict=True):
                if vector is None:
                    self._embedding_errors[entry.id] = reason
                else:
                    self._embedding_errors.pop(entry.id, None)
            failed = sum(v is None for v in vectors)
            if failed:
                log.warning("embedding %d of %d entries failed (%s); the content-score gate "
                            "passes them to the judge unscored", failed, len(texts), reason)
        return [Candidate(e, p, t, v, w)
                for e, p, t, v, w in zip(entries, prompts, texts, vectors, views, strict=True)]

    def _disputed(self, rejected_by: StageResult, decision: Decision) -> bool:
        content = self.content_gate
        return rejected_by.stage == "judge" and content is not None \
            and content.disputes(decision.score)

    def _learn(self, rejected_by: StageResult | None, item: Candidate,
               kept: StageResult | None, decision: Decision) -> None:
        if not self._learning:
            return
        # A judge that failed (on_error: skip) gave no verdict: that is not a SKIP to learn from.
        judge_failed = rejected_by is not None and rejected_by.stage == "judge" \
            and rejected_by.verdict is None
        if (rejected_by is not None and not judge_failed
                and rejected_by.stage in self.cfg.rejection_store.feed_stages):
            if self._disputed(rejected_by, decision):
                decision.scorer_note = DISPUTED
            else:
                self._notify(self.rejections.add(rejected_by.stage, item.user_prompt, item.text,
                                                 item.entry.id))
        if kept is not None and kept.verdict is not None and not kept.verdict.skip:
            self._notify(self.accepts.add("judge", item.user_prompt, item.text, item.entry.id))

    def _notify(self, new_text: bool) -> None:
        """A store gained a new text: count it towards the scorer's next rebuild (a repeat in a
        distinct store only reorders it, so it does not)."""
        if new_text and self.content_gate is not None:
            self.content_gate.note_addition()

    def process(self, item: Candidate, pass_no: int, phase: str = "eval") -> Decision:
        decision = Decision(pass_no, phase, item.entry.id, item.entry.label,
                            item.entry.label_source, len(item.text), outcome="", retained=False,
                            started_at=time.time(),
                            embedding_error=self._embedding_errors.get(item.entry.id, ""))
        judged: StageResult | None = None
        for stage in self.stages:
            start = time.perf_counter()
            result = stage(item)
            decision.latency_ms[stage.name] = (time.perf_counter() - start) * 1000
            self._record(decision, result)
            if result.stage == "judge":
                judged = result
            if not result.passed:
                decision.outcome = result.stage
                self._learn(result, item, None, decision)
                return decision
        start = time.perf_counter()
        memory_text = judged.verdict.memory if judged and judged.verdict else None
        written = self.writer.write(item, memory_text, pass_no)
        decision.latency_ms["write"] = (time.perf_counter() - start) * 1000
        decision.outcome = written.stage
        decision.retained = written.stage in ("stored", "dedup")
        decision.embedded = NOT_EMBEDDED not in written.detail
        self._learn(None, item, judged, decision)
        return decision

    @staticmethod
    def _record(decision: Decision, result: StageResult) -> None:
        if result.stage == "content_score":
            decision.score, decision.threshold = result.score, result.threshold
            decision.scorer_note = result.detail
            decision.audited = result.detail == "audit"
        elif result.stage == "judge":
            decision.judge_called = True
            decision.judge_error = result.detail if result.verdict is None else ""
            if result.verdict is not None:
                verdict = result.verdict
                decision.judge_skip = verdict.skip
                decision.judge_cached = verdict.cached
                decision.judge_tokens_in = verdict.input_tokens
                decision.judge_tokens_out = verdict.output_tokens
                decision.judge_cost_usd = verdict.cost_usd

    def run_pass(self, items: Sequence[Candidate], pass_no: int,
                 phase: str = "eval") -> Iterator[Decision]:
        for item in items:
            yield self.process(item, pass_no, phase)
        for store in self.stores:
            store.sync()  # a pass always ends with its stores on disk
