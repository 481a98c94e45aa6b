"""Classifier judge: every training entry is judged by a fold model that never saw it."""

from __future__ import annotations

import random
from typing import Any, ClassVar

import pytest

import memeval.backends.judges.classifier as classifier_module
from memeval.backends.judges.base import JudgeError
from memeval.backends.judges.classifier import ClassifierJudge, ClassifierJudgeConfig
from memeval.entry import Entry

GOOD = ["index", "partition", "timeout", "replica", "migration", "cache", "schema", "latency"]
BAD = ["happy", "help", "sure", "glad", "anything", "else", "thanks", "welcome"]


def dataset(n_per_class: int = 15, seed: int = 0) -> list[Entry]:
    rng = random.Random(seed)
    entries = []
    for i in range(n_per_class):
        good = " ".join(rng.choice(GOOD) for _ in range(8)) + f" value {i}"
        bad = " ".join(rng.choice(BAD) for _ in range(8)) + f" note {i}"
        entries.append(Entry(f"s{i}", "q", good, "substantive"))
        entries.append(Entry(f"n{i}", "q", bad, "noise"))
    return entries


class Recording:
    """A pipeline stand-in that remembers what it was trained on and what it was asked."""

    registry: ClassVar[list[Recording]] = []

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: set[str] = set()
        self.asked: list[str] = []
        Recording.registry.append(self)

    def fit(self, texts: list[str], targets: Any) -> Recording:
        self.seen = set(texts)
        self.inner.fit(texts, targets)
        return self

    def predict_proba(self, texts: list[str]) -> Any:
        self.asked.extend(texts)
        return self.inner.predict_proba(texts)


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> list[Recording]:
    Recording.registry = []
    real = classifier_module._model
    monkeypatch.setattr(classifier_module, "_model", lambda cfg: Recording(real(cfg)))
    return Recording.registry


def verdict(judge: ClassifierJudge, e: Entry) -> bool:
    return judge.judge(e, e.user_prompt, e.assistant_response).skip


def test_training_entries_are_judged_out_of_fold(recording: list[Recording]) -> None:
    entries = dataset()
    judge = ClassifierJudge(ClassifierJudgeConfig(folds=5), entries)
    *folds, everything = recording
    assert len(folds) == 5
    assert everything.seen == {e.assistant_response for e in entries}
    for e in entries:
        verdict(judge, e)
        (used,) = [m for m in recording if m.asked and m.asked[-1] == e.assistant_response]
        assert used in folds
        assert e.assistant_response not in used.seen  # the judging model never saw it
        used.asked.clear()
    assert not everything.asked  # the all-data model is never used for a training entry


def test_unseen_entries_use_the_all_data_model(recording: list[Recording]) -> None:
    entries = dataset()
    judge = ClassifierJudge(ClassifierJudgeConfig(folds=5), entries)
    everything = recording[-1]
    # same text as a training entry, new id: not in the training set, so the full model judges it
    copy = Entry("new-id", "q", entries[0].assistant_response, "substantive")
    verdict(judge, copy)
    assert everything.asked == [copy.assistant_response]


def test_judges_an_easy_split_well() -> None:
    entries = dataset(20)
    judge = ClassifierJudge(ClassifierJudgeConfig(folds=5, seed=1), entries)
    correct = [verdict(judge, e) == (e.label == "noise") for e in entries]
    assert sum(correct) / len(correct) >= 0.9
    result = judge.judge(entries[0], "q", entries[0].assistant_response)
    assert result.raw.startswith("p(keep)=") and result.model.startswith("classifier(")


def test_deterministic_for_a_seed() -> None:
    entries = dataset(12)
    a = ClassifierJudge(ClassifierJudgeConfig(folds=3, seed=4), entries)
    b = ClassifierJudge(ClassifierJudgeConfig(folds=3, seed=4), entries)
    assert [a.judge(e, "q", e.assistant_response).raw for e in entries] == [
        b.judge(e, "q", e.assistant_response).raw for e in entries]


def test_needs_folds_entries_of_each_class() -> None:
    entries = dataset(10)
    few_noise = [e for e in entries if e.label == "substantive"] + [
        e for e in entries if e.label == "noise"][:4]
    with pytest.raises(JudgeError, match="at least `folds`"):
        ClassifierJudge(ClassifierJudgeConfig(folds=5), few_noise)
    ClassifierJudge(ClassifierJudgeConfig(folds=4), few_noise)  # 4 per class is enough for 4


def test_needs_both_classes() -> None:
    only_good = [e for e in dataset(10) if e.label == "substantive"]
    with pytest.raises(JudgeError):
        ClassifierJudge(ClassifierJudgeConfig(folds=2), only_good)


def test_unlabelled_entries_are_ignored_for_training() -> None:
    entries = [*dataset(5), Entry("u", "q", "unlabelled text here", None)]
    judge = ClassifierJudge(ClassifierJudgeConfig(folds=5), entries)
    assert "u" not in judge._fold_of
