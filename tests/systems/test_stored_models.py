"""The learned conflict detector and the content-aware trust score on a pass's stored memories:
candidate pairs, per-memory columns, the per-pass section, and the switch that leaves them out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig

from memeval.engine.gate.gate import Decision
from memeval.engine.store.memory_store import StoredMemory
from memeval.paths import data_path
from memeval.quality.conflict_model import LearnedConflictConfig, LearnedConflictDetector, Pair
from memeval.quality.mqs import MQSConstants
from memeval.quality.stored import StoredMQSConfig
from memeval.quality.trust_terms import TERMS, trust_terms
from memeval.reporting.table import pass_table
from memeval.results.result import load_result
from memeval.results.run_dir import read_table
from memeval.runner import run_experiment
from memeval.systems.reference.stored_models import (
    StoredModels,
    StoredModelsConfig,
    fit_stored_models,
    stored_model_quality,
)
from memeval.systems.reference.stored_quality import stored_records
from memeval.utils.fit_cache import FitCache
from memeval.utils.progress import Progress, quiet

DEV = StoredModelsConfig(
    dev_pairs=[data_path("conflicts/memory_pairs_v1.jsonl")],
    dev_records=[data_path("mqs/memory_records_v1.jsonl")])


class Scripted(LearnedConflictDetector):
    """The learned detector's interface with fixed answers: a pair's label by its texts, and
    the later side ("b") always the newer."""

    def __init__(self, labels: dict[tuple[str, str], str]) -> None:
        super().__init__(LearnedConflictConfig())
        self.labels = labels
        self.asked: list[tuple[str, str]] = []

    def predict(self, pairs: Sequence[Pair], cosines: Sequence[float] | None = None,
                progress: Progress = quiet) -> list[str]:
        self.asked += [(a.content, b.content) for a, b in pairs]
        return [self.labels.get((a.content, b.content), "none") for a, b in pairs]

    def newer(self, pairs: Sequence[Pair]) -> list[str]:
        return ["b"] * len(pairs)


def unit(*rows: list[float]) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


TEXTS = ["CI runs on Jenkins.", "CI moved to GitHub Actions.", "Tabs, not spaces.",
         "The team prefers spaces.", "Lunch is at noon."]


def stand_in_gate() -> SimpleNamespace:
    """What stored_model_quality reads of a gate: its store and content gate (none: every
    confidence is missing)."""
    memories = [StoredMemory(f"m{i}", text, f"e{i}", 1) for i, text in enumerate(TEXTS)]
    vectors = unit([1, 0, 0], [0.9, 0.2, 0], [0, 1, 0], [0.1, 0.95, 0], [0, 0, 1])
    return SimpleNamespace(memories=SimpleNamespace(memories=memories, vectors=vectors),
                           content_gate=None)


def decisions(labels: Sequence[str]) -> list[Decision]:
    return [Decision(1, "eval", f"e{i}", label, "human", 10, "stored", True)
            for i, label in enumerate(labels)]


class Bars:
    """A `Progress` that keeps each bar's name, total and the items that went through it."""

    def __init__(self) -> None:
        self.shown: list[tuple[str, int, int]] = []

    def __call__(self, items: Iterable[Any], total: int, desc: str,
                 unit: str = "item") -> Iterator[Any]:
        done = 0
        for item in items:
            done += 1
            yield item
        self.shown.append((desc, total, done))


FIT_BARS = Bars()


@pytest.fixture(scope="module")
def fitted() -> StoredModels:
    """Fitted here, not taken from a fit this process made elsewhere, so its bars are seen."""
    return fit_stored_models(DEV, MQSConstants(), FitCache(None, code="bars seen"), FIT_BARS)


def test_each_long_step_of_fitting_and_scoring_shows_a_bar_of_its_items(
        fitted: StoredModels) -> None:
    pairs, records = fitted.fitted_on["pairs"], fitted.fitted_on["records"]
    assert FIT_BARS.shown == [("conflict pair files", 1, 1), ("difference words", 5, 5),
                              ("conflict pairs", pairs, pairs), ("conflict classifier", 1, 1),
                              ("trust terms", records, records)]
    scoring = Bars()
    stored_model_quality(stand_in_gate(), decisions(["substantive"] * 5),  # type: ignore[arg-type]
                         StoredMQSConfig(), fitted, resamples=20, seed=0, progress=scoring)
    assert scoring.shown == [("conflict pairs", 2, 2), ("trust terms", 5, 5)]


def scored(fitted: StoredModels, detector: Scripted, labels: Sequence[str],
           neighbours: int = 3, max_words: int = 60
           ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    cfg = StoredModelsConfig(neighbours=neighbours, min_similarity=0.5, max_words=max_words)
    models = StoredModels(cfg, detector, fitted.trust, fitted.signals, fitted.mqs)
    return stored_model_quality(stand_in_gate(), decisions(labels),  # type: ignore[arg-type]
                                StoredMQSConfig(), models, resamples=50, seed=0)


def test_each_memory_is_asked_about_its_near_earlier_memories_only(
        fitted: StoredModels) -> None:
    detector = Scripted({})
    summary, _ = scored(fitted, detector, ["substantive"] * 5)
    assert detector.asked == [(TEXTS[0], TEXTS[1]), (TEXTS[2], TEXTS[3])]  # (earlier, later)
    assert summary["candidate_pairs"] == 2
    assert summary["conflicts_by_kind"] == {"contradiction": 0, "temporal": 0, "semantic": 0}
    assert summary["in_conflict_share"] == 0.0 and summary["superseded"] == 0


def test_a_pair_with_a_memory_longer_than_the_detectors_range_is_counted_not_labelled(
        fitted: StoredModels) -> None:
    """"CI moved to GitHub Actions." is 5 words, the other pair's memories at most 4."""
    detector = Scripted({(TEXTS[0], TEXTS[1]): "temporal"})
    summary, columns = scored(fitted, detector, ["substantive"] * 5, max_words=4)
    assert detector.asked == [(TEXTS[2], TEXTS[3])]
    assert (summary["candidate_pairs"], summary["pairs_too_long"]) == (1, 1)
    assert columns["m1"]["learned_conflicts"] == []


def test_conflicts_land_on_both_memories_and_a_temporal_one_names_the_superseder(
        fitted: StoredModels) -> None:
    detector = Scripted({(TEXTS[0], TEXTS[1]): "temporal", (TEXTS[2], TEXTS[3]): "contradiction"})
    summary, columns = scored(fitted, detector, ["substantive", "substantive", "substantive",
                                                 "low_value", "low_value"])
    assert [c["with"] for c in columns["m0"]["learned_conflicts"]] == ["m1"]
    assert [c["with"] for c in columns["m1"]["learned_conflicts"]] == ["m0"]
    assert columns["m0"]["learned_conflicts"][0]["newer"] == "m1"
    assert (columns["m0"]["superseded"], columns["m1"]["superseded"]) == (True, False)
    assert columns["m2"]["learned_conflict_kinds"] == ["contradiction"]
    assert columns["m3"]["learned_conflicts"][0]["newer"] is None  # only temporal ones say
    assert columns["m4"]["learned_conflicts"] == [] and not columns["m4"]["superseded"]
    assert summary["conflicts_by_kind"] == {"contradiction": 1, "temporal": 1, "semantic": 0}
    assert summary["in_conflict_share"] == pytest.approx(4 / 5) and summary["superseded"] == 1
    assert summary["trust_separation"]["substantive"] == 3
    assert summary["trust_separation"]["low_value"] == 2


def test_the_trust_score_is_the_fitted_model_on_the_record_mqs_scores(
        fitted: StoredModels) -> None:
    summary, columns = scored(fitted, Scripted({}), ["substantive"] * 5)
    _, _, records = stored_records(stand_in_gate(), decisions(["substantive"] * 5),  # type: ignore[arg-type]
                                   StoredMQSConfig())
    ledger = {r.id: r for r in records}
    x = np.asarray([[trust_terms(r, ledger, fitted.mqs, fitted.signals)[t] for t in TERMS]
                    for r in records])
    expected = fitted.trust.score(x)
    assert [columns[r.id]["trust_score"] for r in records] == pytest.approx(expected.tolist())
    trust = summary["trust"]
    assert trust["mean"] == pytest.approx(expected.mean())
    assert trust["p50"] == pytest.approx(float(np.median(expected)))
    for name in ("mean", "p10", "p50", "p90"):
        low, high = trust[f"{name}_ci95"]
        assert low <= trust[name] <= high


def test_the_fit_reads_every_development_file(fitted: StoredModels) -> None:
    detector = fitted.detector
    assert isinstance(detector, LearnedConflictDetector) and detector.model is not None
    assert len(fitted.trust.terms) == len(TERMS)
    assert set(fitted.fitted_on["fingerprints"]) == {"memory_pairs_v1.jsonl",
                                                     "memory_records_v1.jsonl"}
    assert fitted.fitted_on["pairs"] > 0 and fitted.fitted_on["records"] > 0


@pytest.mark.bad_input
@pytest.mark.parametrize(("cfg", "message"), [
    (StoredModelsConfig(), "needs dev_pairs and dev_records"),
    (StoredModelsConfig(dev_pairs=DEV.dev_pairs, dev_records=DEV.dev_records, neighbours=0),
     "neighbours must be at least 1"),
    (StoredModelsConfig(dev_pairs=DEV.dev_pairs, dev_records=DEV.dev_records,
                        min_similarity=1.5), "cosine"),
])
def test_bad_settings_are_refused_by_name(cfg: StoredModelsConfig, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cfg.validate()


def test_switched_off_nothing_is_checked() -> None:
    StoredModelsConfig(enabled=False, neighbours=0).validate()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[Path, dict[str, Any]]]:
    """The same small replay with the models on and off."""
    from memeval.config import compose

    root = tmp_path_factory.mktemp("stored_models")
    found = {}
    for enabled in (True, False):
        cfg = compose(["+experiment=three_pass", "embedder=hashing", f"cache_dir={root / 'c'}",
                       "progress=false", "bootstrap=100", "plots=false", "dataset.limit=120",
                       "experiment.passes=2", "judge.error_rate=0.4",
                       "reporting.phoenix.endpoint=null",
                       f"experiment.stored_models.enabled={str(enabled).lower()}"])
        found[enabled] = (root / str(enabled), run_experiment(cfg, root / str(enabled)))
    return found


@pytest.mark.slow
def test_a_replay_reports_the_models_per_pass(
        runs: dict[bool, tuple[Path, dict[str, Any]]]) -> None:
    run_dir, metrics = runs[True]
    table = read_table(run_dir, "stored_memories")
    for p in metrics["passes"]:
        section = p["stored_models"]
        mine = table[table["pass"] == p["pass"]]
        assert section["memories"] == len(mine) == p["stored_mqs"]["memories"]
        assert section["in_conflict_share"] == pytest.approx(
            mine["learned_conflicts"].map(len).gt(0).mean())
        assert section["superseded"] == int(mine["superseded"].sum())
        assert mine["trust_score"].between(0, 100).all()
        assert section["trust"]["mean"] == pytest.approx(mine["trust_score"].mean())
    printed = pass_table(load_result(run_dir).passes)
    assert "Learned conflicts among stored memories" in printed
    assert "Trust score of stored memories" in printed
    assert "MQS of stored memories" in printed


@pytest.mark.slow
def test_switched_off_the_models_leave_mqs_as_it_was(
        runs: dict[bool, tuple[Path, dict[str, Any]]]) -> None:
    (on_dir, on), (off_dir, off) = runs[True], runs[False]
    assert [p["stored_mqs"] for p in on["passes"]] == [p["stored_mqs"] for p in off["passes"]]
    assert all("stored_models" not in p for p in off["passes"])
    on_table = read_table(on_dir, "stored_memories")
    off_table = read_table(off_dir, "stored_memories")
    assert "trust_score" not in off_table.columns
    assert on_table[list(off_table.columns)].equals(off_table)
    assert "Learned conflicts" not in pass_table(load_result(off_dir).passes)


def test_the_development_sets_are_named_once(fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=three_pass", "dev_sets.conflict_pairs=[a.jsonl]")
    assert list(cfg.experiment.stored_models.dev_pairs) == ["a.jsonl"]
    for experiment, key, group in (("conflict_detection", "dev_pairs", "conflict_pairs"),
                                   ("mqs_calibration", "dev_records", "memory_records")):
        composed = fast_config(f"+experiment={experiment}", f"dev_sets.{group}=[b.jsonl]")
        assert list(composed.experiment[key]) == ["b.jsonl"]
