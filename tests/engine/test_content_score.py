"""Content-score gate: graceful degradation, rebuild cadence, frozen cut, audits, failures."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.engine.gate.base import STAGES, Candidate
from memeval.engine.gate.content_score import ContentScoreConfig, ContentScoreGate
from memeval.engine.gate.narration import Narration, NarrationConfig
from memeval.engine.gate.threshold import ThresholdConfig
from memeval.engine.store.ring_store import RingStore
from memeval.entry import Entry
from memeval.registry import ConfigError, to_dataclass
from tests.engine.fakes import FailingEmbedder, FakeScorer, stage_node

DIM = 64


def item(first: float, text: str = "some text") -> Candidate:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[0] = first
    return Candidate(Entry("e", "q", text), "q", text, vector)


def make(scorer: FakeScorer | None = None, embedder: object | None = None,
         threshold: ThresholdConfig | None = None,
         **cfg: object) -> tuple[ContentScoreGate, RingStore, RingStore]:
    rejections, accepts = RingStore(None, capacity=50), RingStore(None, capacity=50)
    settings = ContentScoreConfig(**{"rebuild_every": 3, "audit_rate": 0.0, **cfg})  # type: ignore[arg-type]
    gate = ContentScoreGate(settings, threshold or ThresholdConfig(policy="fixed", value=0.0),
                            scorer or FakeScorer(), embedder or HashingEmbedder(DIM),
                            rejections, accepts, Narration(NarrationConfig(plans=["let me"])))
    return gate, rejections, accepts


def test_shipped_stage_config() -> None:
    cfg = to_dataclass(ContentScoreConfig, stage_node("content_score"), "content_score")
    assert (cfg.learn_last, cfg.rebuild_every, cfg.audit_rate, cfg.seed) == (150, 25, 0.1, 0)


def test_passes_everything_before_first_build() -> None:
    gate, _, _ = make()
    result = gate(item(-1.0))
    assert result.passed
    assert result.detail == "skipped: not built yet"
    assert result.score is None


def test_passes_everything_until_fitted() -> None:
    gate, _, _ = make(FakeScorer(min_noise=2))
    gate.rebuild()
    assert gate.threshold is None
    result = gate(item(-1.0))
    assert result.passed and result.detail == "skipped: too little learned data"


def test_rejects_below_threshold_once_fitted() -> None:
    gate, rejections, _ = make()
    rejections.add("judge", "q", "noise text")
    gate.rebuild()
    assert gate.threshold == 0.0 and gate.unavailable == ""
    low, high, edge = gate(item(-0.5)), gate(item(0.5)), gate(item(0.0))
    assert not low.passed and low.score == pytest.approx(-0.5) and low.threshold == 0.0
    assert high.passed and high.detail == ""
    assert edge.passed  # score >= threshold passes


def test_missing_vector_passes() -> None:
    gate, rejections, _ = make()
    rejections.add("judge", "q", "noise")
    gate.rebuild()
    result = gate(Candidate(Entry("e", "q", "t"), "q", "t", None))
    assert result.passed and result.detail == "skipped: no embedding"


def test_rebuilds_after_rebuild_every_additions() -> None:
    scorer = FakeScorer()
    gate, rejections, _ = make(scorer, rebuild_every=3)
    gate.rebuild()
    assert gate.rebuilds == 1 and gate.threshold is None
    for n in range(1, 3):
        rejections.add("judge", "q", f"noise {n}")
        gate.note_addition()
    assert gate.rebuilds == 1 and gate.threshold is None  # 2 additions: not yet
    rejections.add("judge", "q", "noise 3")
    gate.note_addition()
    assert gate.rebuilds == 2 and gate.threshold == 0.0
    assert scorer.last is not None and scorer.last.learned_noise_texts == [
        "noise 1", "noise 2", "noise 3"]
    for _ in range(3):
        gate.note_addition()
    assert gate.rebuilds == 3


def test_learns_only_the_last_learn_last_texts() -> None:
    scorer = FakeScorer()
    gate, rejections, accepts = make(scorer, learn_last=2)
    for t in "abc":
        rejections.add("judge", "q", t)
        accepts.add("judge", "q", t.upper())
    gate.rebuild()
    assert scorer.last is not None
    assert scorer.last.learned_noise_texts == ["b", "c"]
    assert scorer.last.learned_quality_texts == ["B", "C"]
    assert scorer.last.learned_noise.shape == (2, DIM)
    np.testing.assert_allclose(scorer.last.learned_quality,
                               HashingEmbedder(DIM).embed(["B", "C"]))


@pytest.mark.parametrize(("refresh", "expected"), [(True, 0.4), (False, 0.1)])
def test_refresh_false_keeps_the_first_threshold(refresh: bool, expected: float) -> None:
    settings = ThresholdConfig(policy="fixed", value=0.1, refresh=refresh)
    gate, rejections, _ = make(threshold=settings)
    rejections.add("judge", "q", "noise")
    gate.rebuild()
    assert gate.threshold == 0.1
    settings.value = 0.4  # the policy would now give a different cut
    gate.rebuild()
    assert gate.threshold == expected


def test_uncalibrated_threshold_skips_the_gate() -> None:
    gate, rejections, _ = make(threshold=ThresholdConfig(policy="judge_quantile", min_accepted=5))
    rejections.add("judge", "q", "noise")
    gate.rebuild()  # fitted, but fewer than min_accepted acceptances to calibrate from
    assert gate.threshold is None
    result = gate(item(-1.0))
    assert result.passed and result.detail == "skipped: threshold not calibrated yet"


def test_audit_lets_a_would_be_rejection_through() -> None:
    gate, rejections, _ = make(audit_rate=1.0)
    rejections.add("judge", "q", "noise")
    gate.rebuild()
    result = gate(item(-0.5))
    assert result.passed and result.detail == "audit"
    assert result.score == pytest.approx(-0.5)
    assert gate(item(0.5)).detail == ""  # a pass is never an audit
    gate.auditing = False
    off = gate(item(-0.5))
    assert not off.passed and off.detail == ""


def test_audit_rate_is_seeded_and_about_right() -> None:
    def draws(seed: int) -> list[bool]:
        gate, rejections, _ = make(audit_rate=0.25, seed=seed)
        rejections.add("judge", "q", "noise")
        gate.rebuild()
        return [gate(item(-1.0)).passed for _ in range(2000)]

    first = draws(7)
    assert first == draws(7)
    assert first != draws(8)
    assert 0.21 < np.mean(first) < 0.29


def test_embedding_failure_during_rebuild_skips_the_gate() -> None:
    embedder = FailingEmbedder()
    gate, rejections, _ = make(FakeScorer(static_quality_texts=["q"]), embedder)
    rejections.add("judge", "q", "noise")
    gate.rebuild()  # must not raise
    assert embedder.calls == 1
    assert gate.threshold is None
    assert gate.unavailable.startswith("embedding failed")
    result = gate(item(-1.0))
    assert result.passed and "embedding failed: server down" in result.detail


def test_recovers_after_embedding_comes_back() -> None:
    class Flaky(HashingEmbedder):
        down = True

        def embed(self, texts: object) -> np.ndarray:  # type: ignore[override]
            if self.down:
                return FailingEmbedder().embed([])
            return super().embed(texts)  # type: ignore[arg-type]

    embedder = Flaky(DIM)
    gate, rejections, _ = make(embedder=embedder)
    rejections.add("judge", "q", "noise")
    gate.rebuild()
    assert gate.threshold is None
    embedder.down = False
    gate.rebuild()
    assert gate.threshold == 0.0
    assert not gate(item(-1.0)).passed


@pytest.mark.parametrize(("params", "match"), [
    ({"audit_rate": 1.5}, "audit_rate"),
    ({"rebuild_every": 0}, "rebuild_every"),
    ({"learn_lst": 5}, "did you mean 'learn_last'"),
])
def test_invalid_config(params: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        STAGES.validate({"name": "content_score", **params})


class ShiftingScorer(FakeScorer):
    """Each fit moves every score by +100, so a score tells which fit produced it."""

    def score(self, vectors: np.ndarray, texts: Sequence[str] = ()) -> np.ndarray:
        return np.asarray(vectors[:, 0] + 100.0 * self.fits, dtype=np.float32)

    def calibration_scores(self) -> np.ndarray:
        return np.array([-999.0, -999.0], dtype=np.float32)  # marks a held-out calibration


def prequential_gate(**cfg: object) -> tuple[ContentScoreGate, RingStore, RingStore]:
    settings = ThresholdConfig(policy="judge_quantile", estimator="empirical", target_recall=1.0,
                               min_accepted=2, scores="prequential")
    gate, rejections, accepts = make(ShiftingScorer(), threshold=settings, **cfg)
    rejections.add("judge", "q", "noise")
    return gate, rejections, accepts


def test_prequential_scores_come_from_the_fit_before_learning() -> None:
    gate, _, accepts = prequential_gate()
    accepts.add("judge", "q", "A")
    accepts.add("judge", "q", "B")
    gate.rebuild()  # first fit: nothing was scored before it, so held-out refits set the cut
    assert gate.threshold == -999.0 and gate.calibrations == {"held_out": 1}
    accepts.add("judge", "q", "C")
    accepts.add("judge", "q", "D")
    gate.rebuild()  # C and D are scored by fit 1, which never saw them; A and B get no score
    first = HashingEmbedder(DIM).embed(["C", "D"])[:, 0]
    assert gate.threshold == pytest.approx(float(first.min()) + 100.0)
    assert gate.calibrations == {"held_out": 1, "prequential": 1}


def test_prequential_scores_leave_with_their_texts() -> None:
    gate, _, accepts = prequential_gate(learn_last=2)
    for text in "AB":
        accepts.add("judge", "q", text)
    gate.rebuild()
    for text in "CD":
        accepts.add("judge", "q", text)
    gate.rebuild()  # window C, D: two fresh scores
    accepts.add("judge", "q", "E")
    gate.rebuild()  # window D, E: C's score is dropped, E's is fresh (from fit 2)
    second = HashingEmbedder(DIM).embed(["D", "E"])[:, 0] + [100.0, 200.0]
    assert gate.threshold == pytest.approx(float(second.min()))


def test_restart_forgets_prequential_scores() -> None:
    gate, _, accepts = prequential_gate()
    for text in "ABCD":
        accepts.add("judge", "q", text)
        gate.rebuild()
    assert gate.calibrations["prequential"] >= 1
    gate.restart()  # a new process: the past scores are gone, refits calibrate again
    assert gate.threshold == -999.0 and gate.calibrations["held_out"] == 2
