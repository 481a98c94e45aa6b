"""The learned conflict detector: value extraction, the newer side, the combiner, and an
evaluation that never trains on what it scores."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig, OmegaConf

from memeval.data.quality_sets import LabelledPair, PairSide, load_conflict_pairs
from memeval.experiments import conflict_detection as experiment
from memeval.experiments.conflict_detection import (
    ConflictDetection,
    ConflictDetectionConfig,
    by_file,
    by_source,
    folds_of,
    out_of_fold,
)
from memeval.paths import CONF_DIR
from memeval.quality.conflict_features import (
    EDIT_FEATURES,
    FEATURES,
    ConflictSide,
    edit_features,
    newer_side,
    pair_features,
)
from memeval.quality.conflict_model import (
    CONFLICT_DETECTORS,
    LearnedConflictConfig,
    LearnedConflictDetector,
    Pair,
)
from memeval.quality.conflict_values import ConflictWords, ValueReader
from memeval.quality.difference_words import DifferenceWords, said_by_one
from memeval.registry import ConfigError, to_dataclass
from memeval.results.run_dir import read_table
from memeval.runner import run_experiment
from memeval.systems.reference.stored_models import labelled_sides
from memeval.utils.progress import Progress, quiet

CONF = CONF_DIR / "conflict_detector" / "learned.yaml"


def _words() -> ConflictWords:
    detector = OmegaConf.to_container(OmegaConf.load(CONF))
    assert isinstance(detector, dict)
    return ConflictWords(**detector["words"])


READ = ValueReader(_words())


@pytest.mark.parametrize(("text", "kind", "expected"), [
    ("The request timeout is 30 s", "numbers", {"30000ms"}),
    ("The request timeout is 30,000 ms", "numbers", {"30000ms"}),
    ("Workers get 2 GB of memory", "numbers", {"2000MB"}),
    ("Sample 5% of traces", "numbers", {"5%"}),
    ("signup-api runs on Python 3.12", "versions", {"3.12"}),
    ("Pin the chart to v1.4.2", "versions", {"1.4.2"}),
    ("Postgres listens on port 5433", "places", {":5433"}),
    ("The API lives at https://api.example.com/v2", "places", {"https://api.example.com/v2"}),
    ("Configs live in deploy/helm/values.yaml", "places", {"deploy/helm/values.yaml"}),
    ("Set `RUST_LOG` before running", "identifiers", {"rust_log"}),
    ("Run the tests with --no-capture", "identifiers", {"--no-capture"}),
    ("The ledger_sync job owns retries", "identifiers", {"ledger_sync"}),
])
def test_values_are_read_in_one_form(text: str, kind: str, expected: set[str]) -> None:
    assert expected <= set(getattr(READ.read(text), kind))


def test_settings_switches_stance_and_cues() -> None:
    kv = READ.read("Set `max_connections`=20 for the pool")
    assert kv.settings["max_connections"] == "20"
    assert READ.read("Crash reporting is enabled").switched == 1
    assert READ.read("Crash reporting is disabled").switched == -1
    allow, deny = READ.read("Allow force pushes"), READ.read("Deny force pushes")
    assert set(allow.stance) & set(deny.stance)
    assert any(allow.stance[k] != deny.stance[k] for k in set(allow.stance) & set(deny.stance))
    cued = READ.read("CI has moved to Buildkite and now runs there")
    assert cued.change and cued.current and not READ.read("CI runs on Jenkins").current
    assert READ.read("We used to deploy by hand").past


@pytest.mark.parametrize(("a", "b", "newer"), [
    (ConflictSide("CI now runs on Buildkite", "2025-01-01"),
     ConflictSide("CI runs on Jenkins", "2025-06-01"), "a"),
    (ConflictSide("We used to deploy by hand", "2025-06-01"),
     ConflictSide("Deploys go through ArgoCD", "2025-01-01"), "b"),
    (ConflictSide("The pool size is 10", "2026-03-01"),
     ConflictSide("The pool size is 20", "2025-03-01"), "a"),
    (ConflictSide("The pool size is 10", "2025-03-01"),
     ConflictSide("The pool size is 20", "2026-03-01"), "b"),
])
def test_the_newer_side_follows_cues_then_timestamps(a: ConflictSide, b: ConflictSide,
                                                     newer: str) -> None:
    assert newer_side(READ.read(a.content), READ.read(b.content), a, b) == newer


def _toy(n: int, offset: int = 0) -> tuple[list[Pair], list[str]]:
    """Four cleanly separable kinds of pair over `n` invented services each."""
    pairs: list[Pair] = []
    labels: list[str] = []
    for i in range(offset, offset + n):
        s = f"svc{i}"
        pairs += [(ConflictSide(f"{s} debug logging is enabled", "2025-01-01"),
                   ConflictSide(f"{s} debug logging is disabled", "2025-01-02")),
                  (ConflictSide(f"{s} listens on port {5000 + i}", "2025-01-01"),
                   ConflictSide(f"{s} listens on port {6000 + i}", "2025-01-02")),
                  (ConflictSide(f"{s} deploys with Helm", "2025-01-01"),
                   ConflictSide(f"{s} has now moved to ArgoCD for deploys", "2025-05-01")),
                  (ConflictSide(f"{s} is written in Go", "2025-01-01"),
                   ConflictSide(f"The user's timezone is zone{i}", "2025-01-02"))]
        labels += ["contradiction", "semantic", "temporal", "none"]
    return pairs, labels


@pytest.mark.parametrize("classifier", ["boosted_trees", "logistic"])
def test_the_combiner_learns_a_separable_toy_set(classifier: str) -> None:
    detector = LearnedConflictDetector(LearnedConflictConfig(words=_words(),
                                                             classifier=classifier))
    train, labels = _toy(10)
    detector.fit(train, labels)
    held, truth = _toy(5, offset=100)
    assert detector.predict(held) == truth


def test_by_file_holds_out_each_development_file_in_turn() -> None:
    assert [fold.tolist() for fold in by_file([2, 3, 1])] == [[0, 1], [2, 3, 4], [5]]


def test_by_source_holds_out_every_file_of_one_author_together() -> None:
    folds = by_source([2, 3, 1, 2], ["memeval", "team", "memeval", "other"])
    assert [fold.tolist() for fold in folds] == [[0, 1, 5], [2, 3, 4], [6, 7]]


def test_an_outside_set_that_is_also_a_development_file_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "team.jsonl", _rows("team", 8))
    cfg = ConflictDetectionConfig(pairs=path, dev_pairs=[path], outside_pairs=[path])
    with pytest.raises(ValueError, match=r"team\.jsonl is also in dev_pairs"):
        cfg.validate()


@pytest.mark.slow
def test_each_source_is_held_out_whole_beside_each_file(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    files = [_write(tmp_path / f"{name}.jsonl", _rows(name, 24))
             for name in ("brief_a", "brief_b", "team")]
    metrics = run_experiment(fast_config(
        "+experiment=conflict_detection", "bootstrap=20", "experiment.test_pairs=null",
        "experiment.outside_pairs=[]", f"experiment.dev_pairs=[{','.join(files)}]",
        "experiment.sources={brief_a: brief, brief_b: brief}"), tmp_path / "run")
    section = metrics["conflicts_learned"]
    assert [d["author"] for d in section["dev"]] == ["brief", "brief", "team"]
    assert section["cv_by_source"]["pairs"] == section["cv_by_file"]["pairs"] == 72
    assert set(section["by_source"]) == {"brief", "team"}
    assert set(section["by_source"]["team"]["headline"]) == set(section["cv"]["headline"])
    assert section["by_source"]["team"]["pairs"] == 24  # with its CIs, as every other figure


def test_only_the_cross_validations_asked_for_are_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        fast_config: Callable[..., DictConfig]) -> None:
    """A detector that takes minutes per fit is cross-validated by source alone: one fit per
    source, then the final one; held-out sets' gaps are taken from that run."""
    spy = _spying(monkeypatch)
    files = [_write(tmp_path / f"{name}.jsonl", _rows(name, 12)) for name in ("a", "b", "c")]
    outside = _write(tmp_path / "elsewhere.jsonl", _rows("outside", 6))
    metrics = run_experiment(fast_config(
        "+experiment=conflict_detection", "bootstrap=20", "experiment.test_pairs=null",
        f"experiment.outside_pairs=[{outside}]", f"experiment.dev_pairs=[{','.join(files)}]",
        "experiment.cv=[by_source]"), tmp_path / "run")
    section = metrics["conflicts_learned"]
    assert len(spy.fits) == 3 + 1
    assert "cv" not in section and "cv_by_file" not in section
    assert section["gap_from"] == "cv_by_source" and set(section["by_source"]) == {"a", "b", "c"}
    (scored,) = section["outside"]
    assert set(scored["gap"]) == set(section["cv_by_source"]["headline"])
    dev = read_table(tmp_path / "run", "conflict_learned").query("split == 'dev'")
    assert len(dev) == 36 and dev["learned_predicted"].notna().all()


@pytest.mark.bad_input
def test_an_unknown_cross_validation_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "team.jsonl", _rows("team", 8))
    with pytest.raises(ValueError, match=r"experiment.cv must name one or more of \['folds', "):
        ConflictDetectionConfig(pairs=path, cv=["loo"]).validate()


def test_a_none_probability_floor_trades_conflicts_for_none() -> None:
    """At floor 0 every pair is none (P(none) >= 0 always); at 1 only a certain none is."""
    train, labels = _toy(10)
    held, truth = _toy(5, offset=100)
    guessed = {}
    for floor in (0.0, None, 1.0):
        detector = LearnedConflictDetector(LearnedConflictConfig(words=_words(),
                                                                 none_probability=floor))
        detector.fit(train, labels)
        guessed[floor] = detector.predict(held)
    assert guessed[0.0] == ["none"] * len(held)
    assert guessed[None] == truth
    assert [g for g, t in zip(guessed[1.0], truth, strict=True) if t != "none"] == \
        [t for t in truth if t != "none"]


@pytest.mark.bad_input
def test_a_none_probability_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="none_probability must be null or"):
        to_dataclass(LearnedConflictConfig, {"none_probability": 1.5}, "experiment.detector")


@pytest.mark.bad_input
def test_an_unknown_classifier_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"classifier must be one of \['boosted_trees', "
                                         r"'logistic'\], got 'svm'"):
        LearnedConflictConfig(classifier="svm").validate()


def _row(a: str, b: str) -> dict[str, float]:
    features = pair_features(READ.read(a), READ.read(b), ConflictSide(a), ConflictSide(b))
    return dict(zip(FEATURES, features, strict=True))


def test_scopes_that_differ_are_a_feature() -> None:
    apart = _row("signup-api staging DB host is db.stg.internal",
                 "signup-api prod DB host is db.prod.internal")
    assert (apart["scope_differs"], apart["scope_same"]) == (1.0, 0.0)
    same = _row("staging DB host is db1.internal", "staging DB host is db2.internal")
    assert (same["scope_differs"], same["scope_same"]) == (0.0, 1.0)
    assert _row("DB host is db1", "DB host is db2")["scope_differs"] == 0.0


def test_a_one_for_one_swap_differs_from_an_addition() -> None:
    swap = _row("The default branch of platform-infra is main",
                "The default branch of platform-infra is develop")
    assert swap["unique_both"] == 1.0 and swap["swap"] == swap["containment"] > 0.5
    added = _row("Redis runs on localhost",
                 "Redis runs on localhost and the tests start it with docker compose up")
    assert added["containment"] == 1.0 and added["unique_both"] == 0.0 and added["swap"] == 0.0


def test_an_unfitted_model_refuses_to_predict() -> None:
    with pytest.raises(RuntimeError, match="after fit"):
        LearnedConflictDetector(LearnedConflictConfig(words=_words())).predict(_toy(1)[0])


def test_both_detectors_are_registered_by_name() -> None:
    assert {"rules", "learned"} <= set(CONFLICT_DETECTORS.names())
    rules = CONFLICT_DETECTORS.build({"name": "rules"})
    pair = (ConflictSide("User likes tabs"), ConflictSide("User dislikes tabs"))
    assert rules.predict([pair]) == ["contradiction"]


class Spy:
    """A detector that records what it was trained on and asked about."""

    def __init__(self) -> None:
        self.fits: list[set[str]] = []
        self.asked: list[set[str]] = []

    def fit(self, pairs: Sequence[Pair], labels: Sequence[str],
            cosines: Sequence[float] | None = None, progress: Progress = quiet,
            newer: Sequence[str | None] | None = None) -> None:
        self.fits.append({a.content for a, _ in pairs})

    def predict(self, pairs: Sequence[Pair], cosines: Sequence[float] | None = None,
                progress: Progress = quiet) -> list[str]:
        self.asked.append({a.content for a, _ in pairs})
        return ["none"] * len(pairs)


def _pair(i: int, label: str) -> LabelledPair:
    return LabelledPair(f"p{i}", PairSide(f"memory {i}"), PairSide(f"other {i}"), label)


def test_cross_validation_never_trains_on_the_fold_it_scores() -> None:
    labels = ["none"] * 12 + ["contradiction"] * 6 + ["temporal"] * 6 + ["semantic"] * 6
    pairs = [_pair(i, label) for i, label in enumerate(labels)]
    folds = folds_of(labels, 3, seed=7)
    assert sorted(np.concatenate(folds).tolist()) == list(range(len(labels)))
    for held in folds:  # stratified: each fold holds a third of every label
        assert sorted(labels[i] for i in held).count("none") == 4
    spy = Spy()
    out_of_fold(spy, pairs, 3, seed=7)
    assert len(spy.fits) == len(spy.asked) == 3
    for trained, scored in zip(spy.fits, spy.asked, strict=True):
        assert not trained & scored and len(trained | scored) == len(pairs)


def _write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _rows(prefix: str, n: int) -> list[dict[str, Any]]:
    kinds = ["contradiction", "temporal", "semantic", "none"]
    return [{"pair_id": f"{prefix}{i}", "a": {"content": f"{prefix} memory {i}"},
             "b": {"content": f"{prefix} other {i}"}, "conflict": kinds[i % 4],
             "newer": "b" if kinds[i % 4] == "temporal" else None} for i in range(n)]


def _spying(monkeypatch: pytest.MonkeyPatch) -> Spy:
    """The experiment builds a spy wherever it would build the learned detector."""
    spy = Spy()
    real = experiment.CONFLICT_DETECTORS

    class Detectors:
        def validate(self, node: Any, key: str | None = None) -> Any:
            return real.validate(node, key)

        def build(self, node: Any, **deps: Any) -> Any:
            return spy if node["name"] == "learned" else real.build(node, **deps)

    monkeypatch.setattr(experiment, "CONFLICT_DETECTORS", Detectors())
    return spy


def test_the_test_and_outside_sets_are_never_trained_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        fast_config: Callable[..., DictConfig]) -> None:
    spy = _spying(monkeypatch)
    dev = _write(tmp_path / "dev.jsonl", _rows("dev", 20))
    test = _write(tmp_path / "test.jsonl", _rows("test", 8))
    outside = _write(tmp_path / "elsewhere.jsonl", _rows("outside", 6))
    metrics = run_experiment(fast_config("+experiment=conflict_detection", "bootstrap=20",
                                         f"experiment.dev_pairs=[{dev}]",
                                         f"experiment.test_pairs={test}",
                                         f"experiment.outside_pairs=[{outside}]"),
                             tmp_path / "run")
    assert len(spy.fits) == 5 + 1  # one per fold, then the final model on every dev pair
    assert all(c.startswith("dev ") for fit in spy.fits for c in fit)
    assert spy.asked[-2:] == [{f"test memory {i}" for i in range(8)},
                              {f"outside memory {i}" for i in range(6)}]
    section = metrics["conflicts_learned"]
    assert section["test"]["pairs"] == 8 and section["rules_test"]["pairs"] == 8
    assert set(section["gap"]) == set(section["cv"]["headline"])
    (scored,) = section["outside"]
    assert scored["name"] == "elsewhere" and scored["source"]["pairs"] == 6
    assert scored["learned"]["pairs"] == scored["rules"]["pairs"] == 6
    assert set(scored["gap"]) == set(section["cv"]["headline"])
    splits = set(read_table(tmp_path / "run", "conflict_learned")["split"])
    assert splits == {"dev", "test", "outside elsewhere"}


@pytest.mark.bad_input
def test_a_bad_development_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    rows = _rows("dev", 3)
    rows[1]["newer"] = "c"
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[1]) + "\n{oops\n"
                    + json.dumps(rows[2]) + "\n")
    cfg = ConflictDetectionConfig(pairs=str(path), dev_pairs=[str(path)])
    pairs, sources = ConflictDetection(cfg)._load([str(path)])
    assert [p.id for p in pairs] == ["dev0", "dev2"] and sources[0]["skipped"] == 2
    problems = " ".join(map(str, sources[0]["problems"]))
    assert f"{path}:2" in problems and "newer" in problems and f"{path}:3" in problems
    with pytest.raises(Exception, match="newer"):
        load_conflict_pairs(path, on_error="raise")


@pytest.mark.slow
def test_the_reference_section_keeps_the_documented_figures(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """docs/quality.md quotes the v1 run: memeval 0.68 / 0.37, compat 0.60 / 0.20."""
    metrics = run_experiment(fast_config("+experiment=conflict_detection",
                                         "experiment.test_pairs=null"), tmp_path / "run")
    conflicts = metrics["conflicts"]
    assert conflicts["pairs"] == 84 and conflicts["detectors"] == ["memeval", "compat"]
    for mode, (p, r) in {"memeval": (0.68, 0.37), "compat": (0.60, 0.20)}.items():
        stats = conflicts[mode]["any_conflict"]
        assert (round(stats["precision"], 2), round(stats["recall"], 2)) == (p, r)
    learned = metrics["conflicts_learned"]
    assert learned["cv"]["pairs"] == 84 + 366 + 165 + 219 + 220 + 219 and "test" not in learned
    assert learned["cv_by_file"]["pairs"] == learned["cv"]["pairs"]  # each file held out once


def test_the_embedder_cosine_is_a_feature_when_asked(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    dev = _write(tmp_path / "dev.jsonl", _rows("dev", 20))
    cfg = fast_config("+experiment=conflict_detection", "bootstrap=20", "experiment.embed=true",
                      f"experiment.dev_pairs=[{dev}]", "experiment.test_pairs=null")
    section = run_experiment(cfg, tmp_path / "run")["conflicts_learned"]
    assert section["embed"] is True and section["cv"]["pairs"] == 20
    pairs = load_conflict_pairs(dev)[0]
    sides = labelled_sides(pairs)
    detector = LearnedConflictDetector(LearnedConflictConfig(words=_words()))
    detector.fit(sides, [p.conflict for p in pairs], [0.5] * 20)
    column = FEATURES.index("cosine")
    assert detector.features(sides, [0.25] * 20)[:, column].tolist() == [0.25] * 20


def test_difference_words_are_the_words_one_side_says() -> None:
    assert said_by_one("User hates emoji in commits", "User likes emoji in commits") == \
        said_by_one("User likes emoji in commits", "User hates emoji in commits") == "hat lik"


def test_difference_word_probabilities_on_the_training_pairs_come_out_of_fold() -> None:
    """Each pair says one word nothing else says: a model that saw the pair is sure of its label,
    one that did not cannot be, so the training-pair probabilities show which one gave them."""
    texts = [(f"shared words w{i}", "shared words") for i in range(40)]
    labels = ["none" if i % 2 else "semantic" for i in range(40)]
    model = DifferenceWords(inverse_regularisation=100.0, folds=5, seed=0)
    held_out = model.fit(texts, labels)
    seen = model.probabilities(texts)
    truth = np.array([0 if label == "none" else 1 for label in labels])  # columns: none, semantic
    assert (seen[np.arange(40), truth] > 0.9).all()
    assert np.allclose(held_out, 0.5, atol=0.05)


def test_the_stacked_words_add_one_column_per_label(tmp_path: Path) -> None:
    pairs = load_conflict_pairs(_write(tmp_path / "dev.jsonl", _rows("dev", 20)))[0]
    sides, labels = labelled_sides(pairs), [p.conflict for p in pairs]
    widths = {}
    for stacked in (True, False):
        detector = LearnedConflictDetector(LearnedConflictConfig(words=_words(),
                                                                 difference_words=stacked))
        detector.fit(sides, labels)
        widths[stacked] = detector.features(sides).shape[1]
    assert widths == {True: len(FEATURES) + 4, False: len(FEATURES)}


@pytest.mark.parametrize(("a", "b", "expected"), [
    # one backticked value swapped inside an unchanged entry: how real files get rewritten
    ("Logs go to the `entire/sessions` branch on commit",
     "Logs go to the `entire/checkpoints/v1` branch on commit", [7 / 8, 1.0, 0.0, 1.0]),
    # detail added, nothing replaced
    ("A warning is shown", "A warning is shown in the same directory", [4 / 8, 0.0, 1.0, 0.0]),
    # a paraphrase: most words replaced, none of them a code-like value
    ("Always run plan before apply", "Never apply without reviewing the plan",
     [1 / 6, 1.0, 0.0, 0.0]),
    ("Same text", "same text", [1.0, 0.0, 0.0, 0.0]),
])
def test_edit_features_describe_how_one_entry_became_the_other(a: str, b: str,
                                                               expected: list[float]) -> None:
    assert edit_features(a, b) == pytest.approx(expected)
    assert edit_features(b, a) == pytest.approx(expected)  # symmetric
    assert len(expected) == len(EDIT_FEATURES)


def test_the_edit_features_switch_adds_its_columns(tmp_path: Path) -> None:
    pairs = load_conflict_pairs(_write(tmp_path / "dev.jsonl", _rows("dev", 20)))[0]
    sides, labels = labelled_sides(pairs), [p.conflict for p in pairs]
    widths = {}
    for edits in (True, False):
        detector = LearnedConflictDetector(LearnedConflictConfig(
            words=_words(), difference_words=False, edit_features=edits))
        detector.fit(sides, labels)
        widths[edits] = detector.features(sides).shape[1]
    assert widths == {True: len(FEATURES) + len(EDIT_FEATURES), False: len(FEATURES)}
