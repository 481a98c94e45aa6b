"""Gate end to end: stage order, which verdicts feed which store, restarts, judge failures."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.backends.judges.labels import LabelJudge, LabelJudgeConfig
from memeval.engine.gate.gate import DISPUTED, Decision, Gate, GateConfig
from memeval.engine.gate.threshold import ThresholdConfig
from memeval.entry import Entry
from memeval.registry import ConfigError, to_dataclass
from memeval.utils.redact import redact
from tests.engine.fakes import (
    CountingEmbedder,
    FailingEmbedder,
    FakeScorer,
    RaisingJudge,
    gate_node,
)

SUBST = Entry("s1", "why is the orders report slow?",
              "The orders report is slow because orders.customer_id has no index; a composite "
              "index on (customer_id, created_at) cut it from 9 s to 40 ms.",
              "substantive", "human")
SUBST2 = Entry("s2", "why do settlement consumers lag?",
               "payments.settled has 16 partitions keyed by merchant_id, so settlement-writer "
               "tops out at 16 active consumers; maxReplicas: 16 in hpa.yaml matches that.",
               "substantive", "human")
NOISE = Entry("n1", "can you look at the report",
              "Happy to help with that! I am always glad to assist with your project. Let me "
              "know if there is anything else you would like me to look into today.",
              "noise", "human")
ACK = Entry("a1", "ok.", "I'll run the full test suite now and report back with whatever "
            "fails, then fix the failures one at a time.", "noise", "human")
NOISE2 = Entry("n2", "thanks", "You're very welcome, it was a pleasure working through this "
               "with you today.", "noise", "human")
SHORT = Entry("t1", "what's the port?", "It's 8080 on the staging box.", "low_value", "human")


def config(**changes: Any) -> GateConfig:
    node = gate_node()
    node["stages"]["content_score"]["audit_rate"] = 0.0
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = node
        for key in parents:
            target = target[key]
        target[leaf] = value
    return to_dataclass(GateConfig, node, "gate")


# The FakeScorer fits with one learned rejection; these cuts are above (rejecting) or below
# (passing) any unit-vector coordinate it scores.
REJECTING = ThresholdConfig(policy="fixed", value=2.0)
PASSING = ThresholdConfig(policy="fixed", value=-2.0)


def make(tmp_path: Path, cfg: GateConfig | None = None, *, judge: Any = None,
         scorer: Any = None, embedder: Any = None,
         threshold: ThresholdConfig = PASSING) -> Gate:
    return Gate(replace(cfg or config(), threshold=threshold),
                embedder=embedder or HashingEmbedder(64),
                judge=judge or LabelJudge(LabelJudgeConfig()), scorer=scorer or FakeScorer(),
                redact=redact, state_dir=tmp_path)


def run(gate: Gate, *entries: Entry, pass_no: int = 1) -> list[Decision]:
    return list(gate.run_pass(gate.prepare(entries), pass_no))


def test_shipped_config_composes() -> None:
    cfg = config()
    assert cfg.order == ["prefilter", "length", "content_score", "judge"]
    assert cfg.rejection_store.feed_stages == ["judge"]
    assert cfg.rejection_store.text_chars == 4000 and cfg.accept_store.capacity == 500


def test_outcomes_of_each_stage(tmp_path: Path) -> None:
    gate = make(tmp_path)
    gate.restart()
    outcomes = [d.outcome for d in run(gate, ACK, SHORT, NOISE, SUBST)]
    assert outcomes == ["prefilter", "length", "judge", "stored"]
    assert [m.source_id for m in gate.memories.memories] == ["s1"]


def test_only_judge_skips_feed_the_rejection_store_by_default(tmp_path: Path) -> None:
    gate = make(tmp_path)
    gate.restart()
    run(gate, ACK, SHORT, NOISE, SUBST)
    (rejected,) = gate.rejections.records
    assert (rejected.stage, rejected.source_id) == ("judge", "n1")
    (kept,) = gate.accepts.records
    assert (kept.stage, kept.source_id) == ("judge", "s1")
    # persisted where a restart will find them
    assert (tmp_path / "rejection_store.jsonl").read_text().count("\n") == 1
    assert (tmp_path / "accept_store.jsonl").read_text().count("\n") == 1


def test_prefilter_and_length_feed_when_listed(tmp_path: Path) -> None:
    gate = make(tmp_path, config(rejection_store__feed_stages=["prefilter", "length", "judge"]))
    gate.restart()
    run(gate, ACK, SHORT, NOISE)
    assert [r.stage for r in gate.rejections.records] == ["prefilter", "length", "judge"]


@pytest.mark.parametrize(("feed", "fed"), [(["judge"], False),
                                           (["judge", "content_score"], True)])
def test_content_score_rejections_feed_only_when_listed(tmp_path: Path, feed: list[str],
                                                        fed: bool) -> None:
    gate = make(tmp_path, config(rejection_store__feed_stages=feed), threshold=REJECTING)
    gate.rejections.add("judge", "q", "seed rejection so the scorer can fit")
    gate.restart()
    assert gate.content_gate is not None and gate.content_gate.threshold == 2.0
    (decision,) = run(gate, SUBST)
    assert decision.outcome == "content_score" and not decision.retained
    assert not decision.judge_called
    stages = [r.stage for r in gate.rejections.records]
    assert stages == (["judge", "content_score"] if fed else ["judge"])
    assert len(gate.accepts) == 0


def test_additions_trigger_rebuilds(tmp_path: Path) -> None:
    gate = make(tmp_path, config(stages__content_score__rebuild_every=2))
    gate.restart()
    assert gate.content_gate is not None
    before = gate.content_gate.rebuilds
    run(gate, NOISE, SUBST)  # one rejection + one acceptance = 2 additions
    assert gate.content_gate.rebuilds == before + 1
    assert gate.content_gate.threshold == -2.0  # the scorer fits on the new rejection


def test_repeated_verdicts_do_not_trigger_rebuilds(tmp_path: Path) -> None:
    gate = make(tmp_path, config(stages__content_score__rebuild_every=2))
    gate.restart()
    assert gate.content_gate is not None
    before = gate.content_gate.rebuilds
    run(gate, NOISE, NOISE, NOISE)  # the same rejection three times: one new text
    assert gate.content_gate.rebuilds == before
    run(gate, SUBST)  # the second new text
    assert gate.content_gate.rebuilds == before + 1


def test_learning_off_feeds_nothing_and_stops_audits(tmp_path: Path) -> None:
    cfg = config(stages__content_score__audit_rate=1.0,
                 rejection_store__feed_stages=["judge", "content_score"])
    gate = make(tmp_path, cfg, threshold=REJECTING)
    gate.rejections.add("judge", "q", "seed rejection")
    gate.restart()
    assert gate.content_gate is not None
    (audited,) = run(gate, SUBST)
    assert audited.audited and audited.judge_called and audited.outcome == "stored"
    gate.learning = False
    assert not gate.content_gate.auditing
    rejections, accepts = len(gate.rejections), len(gate.accepts)
    decisions = run(gate, SUBST2, NOISE)
    assert [d.outcome for d in decisions] == ["content_score", "content_score"]
    assert not any(d.audited for d in decisions)
    assert (len(gate.rejections), len(gate.accepts)) == (rejections, accepts)
    gate.learning = True
    assert gate.content_gate.auditing


def test_learning_off_does_not_feed_judge_verdicts(tmp_path: Path) -> None:
    gate = make(tmp_path)
    gate.restart()
    gate.learning = False
    decisions = run(gate, NOISE, SUBST)
    assert [d.outcome for d in decisions] == ["judge", "stored"]
    assert len(gate.rejections) == 0 and len(gate.accepts) == 0
    assert not (tmp_path / "rejection_store.jsonl").exists()


def test_restart_wipes_memories_but_keeps_stores(tmp_path: Path) -> None:
    gate = make(tmp_path)
    gate.restart()
    first = run(gate, NOISE, SUBST)
    assert first[1].outcome == "stored" and len(gate.memories) == 1
    gate.restart(wipe_memories=True)
    assert len(gate.memories) == 0
    assert [r.source_id for r in gate.rejections.records] == ["n1"]
    assert [r.source_id for r in gate.accepts.records] == ["s1"]
    (again,) = run(gate, SUBST, pass_no=2)
    assert again.outcome == "stored"  # not a duplicate of a wiped memory
    assert gate.memories.memories[0].id == "m2-0"


def test_restart_can_keep_memories(tmp_path: Path) -> None:
    gate = make(tmp_path)
    gate.restart()
    run(gate, SUBST)
    gate.restart(wipe_memories=False)
    (again,) = run(gate, SUBST, pass_no=2)
    assert again.outcome == "dedup" and again.retained


def test_stores_survive_a_new_gate_instance(tmp_path: Path) -> None:
    gate = make(tmp_path)
    gate.restart()
    run(gate, NOISE, SUBST)
    fresh = make(tmp_path)
    assert [r.source_id for r in fresh.rejections.records] == ["n1"]
    assert [r.source_id for r in fresh.accepts.records] == ["s1"]
    assert len(fresh.memories) == 0


def test_judge_error_on_error_store_keeps_the_entry(tmp_path: Path) -> None:
    judge = RaisingJudge()
    gate = make(tmp_path, judge=judge)
    gate.restart()
    (decision,) = run(gate, NOISE)
    assert judge.calls == 1
    assert decision.outcome == "stored" and decision.retained
    assert decision.judge_called and decision.judge_error
    assert decision.judge_skip is None
    assert len(gate.rejections) == 0 and len(gate.accepts) == 0
    stage = next(s for s in gate.stages if s.name == "judge")
    assert stage.errors == 1  # type: ignore[attr-defined]


def test_judge_error_on_error_skip_drops_the_entry_and_feeds_nothing(tmp_path: Path) -> None:
    gate = make(tmp_path, config(stages__judge__on_error="skip"), judge=RaisingJudge())
    gate.restart()
    (decision,) = run(gate, SUBST)
    assert decision.outcome == "judge" and not decision.retained
    assert decision.judge_error and decision.judge_skip is None
    # a failed call is not a SKIP verdict: it must not teach the noise prototypes
    assert len(gate.rejections) == 0
    assert len(gate.accepts) == 0


def test_decision_fields(tmp_path: Path) -> None:
    gate = make(tmp_path)
    gate.rejections.add("judge", "q", "seed rejection")
    gate.restart()
    secret = Entry("x1", "where is the db?",
                   "Connect with postgres://app:hunter2secret@db.internal:5432/orders; the "
                   "orders table lives there and the report reads it nightly.",
                   "substantive", "synthetic")
    items = gate.prepare([secret, NOISE])
    assert "hunter2secret" not in items[0].text
    decision = gate.process(items[0], pass_no=3, phase="learn")
    assert (decision.pass_no, decision.phase, decision.entry_id) == (3, "learn", "x1")
    assert (decision.label, decision.label_source) == ("substantive", "synthetic")
    assert decision.asst_len == len(items[0].text) != len(secret.assistant_response)
    assert decision.outcome == "stored" and decision.retained
    assert decision.threshold == -2.0 and decision.score is not None
    assert decision.scorer_note == "" and not decision.audited
    assert decision.judge_called and decision.judge_skip is False and not decision.judge_error
    assert set(decision.latency_ms) == {"prefilter", "length", "content_score", "judge", "write"}
    assert all(ms >= 0 for ms in decision.latency_ms.values())
    assert decision.arm == "main"
    assert abs(decision.started_at - time.time()) < 60
    skipped = gate.process(items[1], pass_no=3)
    assert skipped.judge_skip is True and skipped.outcome == "judge"
    assert "write" not in skipped.latency_ms


def test_prepare_embeds_once_only_when_a_content_gate_exists(tmp_path: Path) -> None:
    counting = CountingEmbedder(HashingEmbedder(64))
    gate = make(tmp_path, embedder=counting)
    items = gate.prepare([SUBST, NOISE])
    # the content stage's view (claims, the shipped default): NOISE's "Let me know…" is a plan
    claims = "Happy to help with that! I am always glad to assist with your project."
    assert counting.batches == [[SUBST.assistant_response, claims]]
    assert all(i.vector is not None and i.vector.shape == (64,) for i in items)
    no_scorer = config(order=["prefilter", "length", "judge"])
    counting2 = CountingEmbedder(HashingEmbedder(64))
    plain = make(tmp_path / "b", no_scorer, embedder=counting2)
    assert plain.content_gate is None
    assert all(i.vector is None for i in plain.prepare([SUBST]))
    assert counting2.batches == []


FINDING = Entry("f1", "why does the paper not build?",
                "Perfect! The issue is the percent sign in \"68%\", which LaTeX reads as a "
                "comment. Let me fix it.", "substantive", "human")


@pytest.mark.parametrize(("view", "embedded"), [
    ("claims", "The issue is the percent sign in \"68%\", which LaTeX reads as a comment."),
    ("whole", FINDING.assistant_response),
])
def test_the_scorer_reads_its_view_and_the_store_the_whole_text(
        tmp_path: Path, view: str, embedded: str) -> None:
    counting = CountingEmbedder(HashingEmbedder(64))
    gate = make(tmp_path, config(stages__content_score__view=view), embedder=counting)
    gate.restart()
    (item,) = gate.prepare([FINDING])
    assert item.embedded == embedded and counting.batches[-1] == [embedded]
    counting.batches.clear()
    (decision,) = gate.run_pass([item], 1)
    assert decision.outcome == "stored"
    # a memory is the whole turn, embedded as such: the view's vector is reused only if equal
    assert counting.batches == ([] if view == "whole" else [[FINDING.assistant_response]])
    (memory,) = gate.memories.memories
    assert memory.text == FINDING.assistant_response
    expected = HashingEmbedder(64).embed([FINDING.assistant_response])[0]
    assert gate.memories.vectors[0] == pytest.approx(expected)


def test_embedding_failure_degrades_to_judge_only(tmp_path: Path) -> None:
    gate = make(tmp_path, embedder=FailingEmbedder())
    gate.rejections.add("judge", "q", "seed rejection")
    gate.restart()  # rebuild fails to embed: content gate skipped, not crashed
    decisions = run(gate, NOISE, SUBST)
    assert [d.outcome for d in decisions] == ["judge", "stored"]
    assert decisions[1].scorer_note.startswith("skipped: embedding failed")


@pytest.mark.parametrize(("changes", "match"), [
    ({"order": ["prefilter", "lenght", "judge"]}, "gate.order names 'lenght'"),
    ({"rejection_store__feed_stages": ["judge", "scorer"]}, "unknown stage 'scorer'"),
    ({"order": ["prefilter", "judge"], "rejection_store__feed_stages": ["length"]},
     "unknown stage 'length'"),
    ({"stages__length__min_char": 5}, "did you mean 'min_chars'"),
    ({"stages__judge__on_error": "retry"}, "on_error"),
    ({"write__dedup_scale": "raw"}, "dedup_scale"),
    ({"stages__content_score__view": "sentences"}, "view must be one of whole, claims"),
    ({"narration__plans": []}, "narration.plans is empty"),
])
def test_gate_config_validation(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        config(**changes)


def test_unknown_stage_name_in_stages_and_order() -> None:
    node = gate_node()
    node["order"] = [*node["order"], "sentiment"]
    node["stages"]["sentiment"] = {}
    with pytest.raises(ConfigError, match="unknown gate stage 'sentiment'"):
        to_dataclass(GateConfig, node, "gate")


@pytest.mark.parametrize("dispute", [True, False])
def test_a_skip_the_scorer_ranks_with_the_acceptances_is_not_learned(tmp_path: Path,
                                                                     dispute: bool) -> None:
    """dispute_skips: a judge SKIP of a text scored at or above the acceptances' median is kept
    out of the rejection store, and the decision says so; below the median it is learned."""
    gate = make(tmp_path, config(stages__content_score__dispute_skips=dispute))
    gate.rejections.add("judge", "q", "seed rejection so the scorer can fit")
    gate.restart()
    content = gate.content_gate
    assert content is not None
    content.accepted_median = -1.0  # every hashed score is at least -1: the scorer disagrees
    (disputed,) = run(gate, NOISE)
    assert disputed.outcome == "judge" and disputed.judge_skip
    assert (disputed.scorer_note == DISPUTED) is dispute
    assert len(gate.rejections) == (1 if dispute else 2)
    content.accepted_median = 1.01  # above every score: the scorer agrees with the SKIP
    (learned,) = run(gate, NOISE2)
    assert learned.outcome == "judge" and learned.scorer_note == ""
    assert len(gate.rejections) == (2 if dispute else 3)
