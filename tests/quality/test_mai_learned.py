"""The learned MAI: its features, its out-of-fold scoring, and `+experiment=mai_calibration`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig

from memeval.config import validate
from memeval.data.quality_sets import load_scenarios
from memeval.paths import data_path
from memeval.quality.mai import MAI_LABELS, AttributedMemory, MAIRubric
from memeval.quality.mai_features import (
    DECISION_TEXT,
    FEATURES,
    METADATA,
    MAIFeatures,
    MAIFeatureWords,
    names_a_memory,
)
from memeval.quality.mai_learned import LearnedMAI, LearnedMAIConfig, out_of_fold
from memeval.registry import ConfigError
from memeval.results.run_dir import read_table
from memeval.runner import run_experiment

WORDS = MAIFeatureWords(relies=["per", "based on"], empty=["returned nothing"],
                        hedged=["probably"], subagent=["subagent"])


def test_features_read_what_the_rubric_ignores() -> None:
    memories = [
        AttributedMemory("m1", 0.9, ["a1", "gone"], "claude-code-subagent", "s1",
                         namespace="proj/a"),
        AttributedMemory("m2", 0.3, [], None, None, hedged=True, namespace="proj/b"),
    ]
    ancestors = [AttributedMemory("a1", 0.2, [], "user", "s0")]
    row = MAIFeatures(WORDS, MAIRubric())(
        memories, ancestors, "Pinned it per m1; the cause is probably the cache.")
    assert set(row) == set(FEATURES)
    assert row["memories"] == 2 and row["hedged_share"] == 0.5
    assert row["subagent_share"] == 0.5 and row["unknown_creator_share"] == 0.5
    assert row["no_session_share"] == 0.5 and row["namespace_spread"] == 1.0
    assert row["missing_ancestors"] == 1 and row["weak_ancestors"] == 1
    assert (row["confidence_min"], row["confidence_max"]) == (0.3, 0.9)
    assert row["confidence_mean"] == pytest.approx(0.6)
    assert row["cited_share"] == 0.5  # m1 named, m2 not
    assert (row["decision_relies"], row["decision_empty"], row["decision_hedged"]) == (1, 0, 1)
    assert row["term_weak_chain"] < 0 and row["term_attribution"] < 0


def test_an_empty_retrieval_is_all_zero_but_the_rubric_and_the_text() -> None:
    row = MAIFeatures(WORDS, MAIRubric())([], [], "Edited it; retrieval returned nothing.")
    assert row["rubric_score"] == 0.0 and row["term_no_memories"] == -1.0
    assert row["memories"] == 0 and row["confidence_max"] == 0 and row["cited_share"] == 0
    assert row["decision_empty"] == 1 and row["decision_relies"] == 0


def _synthetic(n: int, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """Separable-ish rows: each label shifts a few features; every row is distinct."""
    rng = np.random.default_rng(seed)
    labels = [MAI_LABELS[i % 3] for i in range(n)]
    x = rng.normal(size=(n, len(FEATURES)))
    x[:, 0] += [MAI_LABELS.index(label) * 2.0 for label in labels]
    return x, labels


def test_contributions_add_up_to_the_models_logit() -> None:
    x, labels = _synthetic(60)
    model = LearnedMAI(LearnedMAIConfig(), seed=0).fit(x, labels)
    logits = model.model.decision_function(model._standard(x[:1]))[0]
    for label, logit in zip(model.model.classes_, logits, strict=True):
        assert sum(model.contributions(x[0])[str(label)].values()) == pytest.approx(logit)
    assert model.predict(x).count(labels[0]) > 0


def test_the_l2_strength_is_chosen_by_inner_cross_validation() -> None:
    x, labels = _synthetic(90)
    keep = [i for i, label in enumerate(labels) if label == "unattributed" or i % 2]
    x, labels = x[keep], [labels[i] for i in keep]  # unattributed is now the majority
    x[:, :8] += [[3.0 * MAI_LABELS.index(label)] for label in labels]  # a clear signal
    crushed = LearnedMAI(LearnedMAIConfig(c=[1e-6]), 0).fit(x, labels)
    chosen = LearnedMAI(LearnedMAIConfig(c=[1e-6, 1.0]), 0).fit(x, labels)
    assert set(crushed.predict(x)) == {"unattributed"}  # so flat only the intercept speaks
    assert chosen.model.C == 1.0 and len(set(chosen.predict(x))) == 3


def test_a_label_missing_from_training_is_refused() -> None:
    x, labels = _synthetic(6)
    with pytest.raises(ValueError, match="partially_attributed"):
        LearnedMAI(LearnedMAIConfig(), 0).fit(x[[0, 2, 3, 5]], [labels[i] for i in (0, 2, 3, 5)])


def test_out_of_fold_never_trains_on_the_fold_it_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    x, labels = _synthetic(45)
    calls: list[tuple[str, set[bytes]]] = []
    fit, predict = LearnedMAI.fit, LearnedMAI.predict

    def spy_fit(self: LearnedMAI, rows: np.ndarray, y: Any) -> LearnedMAI:
        calls.append(("fit", {r.tobytes() for r in rows}))
        return fit(self, rows, y)

    def spy_predict(self: LearnedMAI, rows: np.ndarray) -> list[str]:
        calls.append(("predict", {r.tobytes() for r in rows}))
        return predict(self, rows)

    monkeypatch.setattr(LearnedMAI, "fit", spy_fit)
    monkeypatch.setattr(LearnedMAI, "predict", spy_predict)
    predicted = out_of_fold(x, labels, LearnedMAIConfig(), 5, seed=3)
    assert len(predicted) == 45 and set(predicted) <= set(MAI_LABELS)
    pairs = list(zip(calls[::2], calls[1::2], strict=True))
    assert len(pairs) == 5 and all(f[0] == "fit" and p[0] == "predict" for f, p in pairs)
    scored: set[bytes] = set()
    for (_, trained), (_, held) in pairs:
        assert not trained & held
        scored |= held
    assert scored == {r.tobytes() for r in x}  # every scenario scored exactly once overall


def _scenario(sid: str, label: str, confidence: float, decision: str) -> dict[str, Any]:
    """One memory whose confidence makes each scenario's features unique."""
    well, unattributed = label == "well_attributed", label == "unattributed"
    memories = [{"id": "m1", "created_by": "user" if well else None,
                 "confidence": confidence / 5 if unattributed else confidence,
                 "session_id": None if unattributed else "s1", "derived_from": [],
                 "hedged": False, "namespace": "proj/x"}]
    return {"scenario_id": sid, "ground_truth": label, "agent_decision": decision,
            "retrieved_memories": memories, "ancestors": []}


def _write(path: Path, rows: list[Any]) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def _sets(tmp_path: Path) -> tuple[str, str]:
    dev = [_scenario(f"d{i}", MAI_LABELS[i % 3], 0.5 + i / 100, f"Did {i} per m1.")
           for i in range(30)]
    test = [_scenario(f"t{i}", MAI_LABELS[i % 3], 0.51 + i / 100 + 0.003, f"Test {i} per m1.")
            for i in range(9)]
    return _write(tmp_path / "dev.jsonl", dev), _write(tmp_path / "test.jsonl", test)


def test_the_test_split_never_reaches_the_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              fast_config: Callable[..., DictConfig],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    dev, test = _sets(tmp_path)
    fitted: list[set[bytes]] = []
    fit = LearnedMAI.fit

    def spy_fit(self: LearnedMAI, rows: np.ndarray, y: Any) -> LearnedMAI:
        fitted.append({r.tobytes() for r in rows})
        return fit(self, rows, y)

    monkeypatch.setattr(LearnedMAI, "fit", spy_fit)
    cfg = fast_config("+experiment=mai_calibration", f"experiment.scenarios=[{dev}]",
                      f"experiment.test_scenarios={test}", "experiment.golden=false",
                      "experiment.folds=3", "bootstrap=20",
                      "reporting.phoenix.enabled=false")
    metrics = run_experiment(cfg, tmp_path / "run")
    from memeval.experiments.base import EXPERIMENTS
    from memeval.experiments.mai_calibration import MAICalibration

    experiment = MAICalibration(EXPERIMENTS.choose(cfg.experiment).params)
    test_rows = {r.tobytes() for r in experiment.matrix(load_scenarios(test)[0])}
    dev_rows = {r.tobytes() for r in experiment.matrix(load_scenarios(dev)[0])}
    # Three folds for each view (every feature, metadata only), then both final models on every
    # development scenario.
    assert len(fitted) == 8
    assert fitted[-2] == fitted[-1] == dev_rows and all(not rows & test_rows for rows in fitted)
    assert metrics["test"]["features"] == "all"  # its decisions name their memories
    assert metrics["development"]["scenarios"] == 30 and metrics["test"]["learned"]["n"] == 9
    table = read_table(tmp_path / "run", "mai_test")
    assert len(table) == 9 and "contribution_intercept" in table
    printed = capsys.readouterr().out  # tables within a terminal, each accuracy with its CI
    assert max(len(line) for line in printed.splitlines()) <= 100
    learned = metrics["test"]["learned"]
    low, high = learned["accuracy_ci95"]
    assert f"learned  {learned['accuracy']:.3f} [{low:.3f}–{high:.3f}]" in printed
    from memeval.experiments.mai_calibration import report
    from memeval.results.run import Run

    sections = report(Run.load(tmp_path / "run"))  # the report shows what was printed
    assert any("test split" in s.title and s.table is not None for s in sections)
    gap = metrics["cv_minus_test"]["learned"]["accuracy"]
    assert gap == pytest.approx(metrics["development"]["learned"]["accuracy"]
                                - metrics["test"]["learned"]["accuracy"])


def test_names_a_memory_reads_ids_as_whole_words() -> None:
    memories = [AttributedMemory("m1", 0.9, [], "user", "s1")]
    assert names_a_memory(memories, "Pinned it per m1.")
    assert not names_a_memory(memories, "Pinned it per m12 and the runbook.")
    assert not names_a_memory([], "per m1")


def _uncited(tmp_path: Path) -> str:
    """Nine scenarios whose decisions name none of their memories (memledger's convention)."""
    return _write(tmp_path / "uncited.jsonl", [
        _scenario(f"u{i}", MAI_LABELS[i % 3], 0.52 + i / 100, f"Shipped fix {i} as planned.")
        for i in range(9)])


@pytest.mark.slow
def test_a_set_whose_decisions_name_no_memory_is_read_by_the_metadata_model(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    dev, _ = _sets(tmp_path)
    uncited = _uncited(tmp_path)
    metrics = run_experiment(fast_config(
        "+experiment=mai_calibration", f"experiment.scenarios=[{dev}]",
        f"experiment.test_scenarios={uncited}", "experiment.golden=false", "experiment.folds=3",
        "bootstrap=20"), tmp_path / "run")
    assert metrics["test"]["features"] == "metadata"
    columns = set(read_table(tmp_path / "run", "mai_test"))
    assert {f"contribution_{name}" for name in METADATA} <= columns
    assert not {f"contribution_{name}" for name in DECISION_TEXT} & columns
    assert "learned_metadata" in metrics["development"]
    assert set(metrics["coefficients"]) == {"all", "metadata"}


@pytest.mark.slow
def test_the_golden_style_split_is_scored_beside_the_test_split_by_the_metadata_model(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    dev, test = _sets(tmp_path)
    uncited = _uncited(tmp_path)
    metrics = run_experiment(fast_config(
        "+experiment=mai_calibration", f"experiment.scenarios=[{dev}]",
        f"experiment.test_scenarios={test}", f"experiment.golden_style_scenarios={uncited}",
        "experiment.golden=false", "experiment.folds=3", "bootstrap=20", "plots=true"),
        tmp_path / "run")
    style = metrics["golden_style"]
    assert style["features"] == "metadata" and metrics["test"]["features"] == "all"
    assert style["source"]["source"] == uncited and style["learned"]["n"] == 9
    assert len(read_table(tmp_path / "run", "mai_golden_style")) == 9
    assert (tmp_path / "run" / "figures" / "mai_confusion_golden_style.png").is_file()


def test_the_experiment_composes_and_runs_without_a_test_split(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    dev, _ = _sets(tmp_path)
    metrics = run_experiment(fast_config(
        "+experiment=mai_calibration", f"experiment.scenarios=[{dev}]",
        "experiment.test_scenarios=null", "experiment.golden_style_scenarios=null",
        "experiment.golden=false", "experiment.folds=3", "bootstrap=20", "plots=true"),
        tmp_path / "run")
    dev_block = metrics["development"]
    assert metrics["test"] is None and metrics["golden_style"] is None
    assert metrics["golden"] is None
    for scorer in ("rubric", "learned"):
        s = dev_block[scorer]
        low, high = s["accuracy_ci95"]
        assert low <= s["accuracy"] <= high
        assert sum(sum(row.values()) for row in s["confusion"].values()) == 30
    figures = {p.name for p in (tmp_path / "run" / "figures").iterdir()}
    assert figures == {"mai_confusion_development.png"}


@pytest.mark.parametrize("split", ["test_scenarios", "golden_style_scenarios"])
def test_a_test_split_among_the_development_sets_is_a_config_error(
        tmp_path: Path, fast_config: Callable[..., DictConfig], split: str) -> None:
    dev, _ = _sets(tmp_path)
    cfg = fast_config("+experiment=mai_calibration", f"experiment.scenarios=[{dev}]",
                      f"experiment.{split}={dev}")
    with pytest.raises(ConfigError, match=f"{split} .* kept out of training"):
        validate(cfg)


@pytest.mark.slow
@pytest.mark.bad_input
def test_a_bad_development_line_is_reported_with_file_and_line(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    dev, _ = _sets(tmp_path)
    rows = Path(dev).read_text().splitlines()
    bad = _write(tmp_path / "bad.jsonl", [*rows[:4], "{not json", *rows[4:]])
    base = ["+experiment=mai_calibration", f"experiment.scenarios=[{bad}]",
            "experiment.test_scenarios=null", "experiment.golden=false", "experiment.folds=3",
            "bootstrap=20"]
    metrics = run_experiment(fast_config(*base), tmp_path / "skip")
    source = metrics["development"]["sources"][0]
    assert source["skipped"] == 1 and source["problems"][0].startswith(f"{bad}:5:")
    with pytest.raises(ValueError, match=f"{bad}:5:"):
        run_experiment(fast_config(*base, "experiment.on_error=raise"), tmp_path / "raise")


@pytest.mark.slow
def test_the_bundled_development_sets_run_end_to_end(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """The development sets only: the test split is for the final report."""
    metrics = run_experiment(fast_config("+experiment=mai_calibration",
                                         "experiment.test_scenarios=null", "bootstrap=100"),
                             tmp_path / "run")
    dev = metrics["development"]
    assert dev["scenarios"] == 197 and set(dev["labels"]) == set(MAI_LABELS)
    assert [s["source"] for s in dev["sources"]] == [
        str(data_path(f"mai/attribution_scenarios_v{v}.jsonl")) for v in (1, 2)]
    assert len(read_table(tmp_path / "run", "mai_development")) == 197
