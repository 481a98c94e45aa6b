"""The System seam: experiments ask for capabilities and refuse, by name, a system without them;
any system that can ingest runs the three-pass protocol with the same per-pass metrics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.metrics.gate_metrics import SystemFailure
from memeval.registry import ConfigError
from memeval.runner import run_experiment
from memeval.systems.base import Capability, Hit, require
from tests.systems.fakes import (  # noqa: F401 (registered)
    KeepAllConfig,
    KeepAllSystem,
    OutsideTheProtocol,
    WordOverlapSystem,
)

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier


def test_require_names_what_is_missing_and_what_the_system_has() -> None:
    with pytest.raises(ConfigError) as caught:
        require(KeepAllSystem(), [Capability.INGEST, Capability.FREEZE, Capability.SEARCH],
                "three_pass_holdout")
    assert str(caught.value).startswith(
        "system 'keep-all' cannot run experiment three_pass_holdout: it needs freeze_learning, "
        "search (this system has: ingest, reset_memories)")


def test_any_ingesting_system_runs_the_three_pass_protocol(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config("+experiment=three_pass", "system.name=keep-all",
                                         "dataset.limit=60"), tmp_path / "run")
    passes = metrics["passes"]
    assert [p["pass"] for p in passes] == [1, 2, 3]
    assert all(p["memories"] == p["stage_counts"]["stored"] for p in passes)
    assert passes[0]["judge_calls"] == 0 and "stored_mqs" not in passes[0]
    assert passes[0]["substantive_recall"] is not None


@pytest.mark.parametrize(("experiment", "message"), [
    ("three_pass_holdout", "it needs freeze_learning"),
    ("feedback_loop", "does not run system=keep-all: it studies memeval's reference engine"),
    ("retrieval_replay", "studies memeval's reference engine: run it with system=reference"),
])
def test_experiments_refuse_a_system_without_what_they_need(
        tmp_path: Path, fast_config: Callable[..., DictConfig], experiment: str,
        message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        run_experiment(fast_config(f"+experiment={experiment}", "system.name=keep-all"),
                       tmp_path / "run")
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_mqs_calibration_scores_records_with_the_system_under_test(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config("+experiment=mqs_calibration",
                                         "system.name=word-overlap", "bootstrap=30",
                                         "plots=true"), tmp_path / "run")
    mqs = metrics["mqs"]
    assert mqs["system"] == "word-overlap" and mqs["configured"]["n"] == 80
    assert mqs["score"] == "word-overlap's trust score"
    assert mqs["fitted_out_of_fold"] is None and mqs["gate_actions"] == {}
    assert "fitted for system=reference" in mqs["notes"]["fitted_out_of_fold"]
    # the reference engine's MQS beside it, on the same records; its constants are not the
    # system's, and memeval's own models (MAI, the learned trust score) are not run for it
    assert mqs["reference_mqs"]["n"] == 80
    assert mqs["reference_mqs"]["spearman"] != mqs["configured"]["spearman"]
    assert metrics["mqs_constants"] is None and metrics["mai"] is None
    assert "trust_score" not in metrics
    assert (tmp_path / "run" / "figures" / "mqs_reliability.png").is_file()


def test_conflict_detection_runs_the_system_s_own_detector(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config("+experiment=conflict_detection",
                                         "system.name=word-overlap", "bootstrap=30",
                                         "plots=true"), tmp_path / "run")
    conflicts = metrics["conflicts"]
    assert conflicts["detectors"] == ["word-overlap", "reference"]  # on the same pairs
    assert conflicts["word-overlap"]["any_conflict"]["support"] == 46
    assert conflicts["word-overlap"]["accuracy"] != conflicts["reference"]["accuracy"]
    assert "conflicts_learned" not in metrics  # memeval's own model: not trained for it
    assert (tmp_path / "run" / "figures" / "conflict_confusion.png").is_file()


@pytest.mark.parametrize(("experiment", "needs"), [("mqs_calibration", "score_records"),
                                                   ("conflict_detection", "detect_conflicts")])
def test_quality_experiments_refuse_a_system_that_cannot_serve_them(
        tmp_path: Path, fast_config: Callable[..., DictConfig], experiment: str,
        needs: str) -> None:
    with pytest.raises(ConfigError, match=f"cannot run experiment {experiment}: it needs {needs}"):
        run_experiment(fast_config(f"+experiment={experiment}", "system.name=keep-all"),
                       tmp_path / "run")


@pytest.mark.parametrize(("experiment", "why"), [
    ("mai_calibration", "it studies memeval's reference engine"),
    ("compare_systems", "it runs the systems listed in experiment.systems"),
])
def test_an_experiment_that_would_not_run_the_system_refuses_it_by_name(
        tmp_path: Path, fast_config: Callable[..., DictConfig], experiment: str,
        why: str) -> None:
    with pytest.raises(ConfigError, match=f"experiment {experiment} does not run "
                                          f"system=word-overlap: {why}"):
        run_experiment(fast_config(f"+experiment={experiment}", "system.name=word-overlap"),
                       tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_an_outcome_outside_the_protocol_fails_the_run_naming_it(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    with pytest.raises(SystemFailure, match=r"system 'outside-protocol' answered entry '.+' "
                                            r"\(pass 1\) with outcome 'dropped', which is not "
                                            r"one of prefilter, length"):
        run_experiment(fast_config("+experiment=three_pass", "system.name=outside-protocol",
                                   "dataset.limit=30"), tmp_path / "run")


def test_a_conflict_type_outside_the_protocol_fails_the_run_naming_it(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    with pytest.raises(SystemFailure, match=r"system 'outside-protocol' answered pair '.+' with "
                                            r"conflict type 'contradicts'"):
        run_experiment(fast_config("+experiment=conflict_detection",
                                   "system.name=outside-protocol"), tmp_path / "run")


LOCOMO = Path(__file__).parents[1] / "data" / "corpora" / "locomo_small.json"


def test_retrieval_replay_searches_a_corpus_through_the_system_beside_the_reference(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config("+experiment=retrieval_replay", "dataset=locomo",
                                         f"dataset.path={LOCOMO}", "system.name=word-overlap",
                                         "bootstrap=30", "experiment.passes=2"),
                             tmp_path / "run")
    last = metrics["passes"][-1]
    assert last["arms"][-1] == "word-overlap" and "cosine" in last["arms"]
    assert metrics["retrieval"]["system"]["name"] == "word-overlap"
    mine, base = last["word-overlap"], last["cosine"]
    assert 0.0 <= mine["ndcg"] <= 1.0 and mine["gini_access"] is None
    assert last["deltas"]["word-overlap"]["ndcg"] == pytest.approx(mine["ndcg"] - base["ndcg"])
    # the system is asked once per query: the same answers every pass
    assert metrics["passes"][0]["word-overlap"]["ndcg"] == mine["ndcg"]


class ForeignIds(WordOverlapSystem):
    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit("not-given", 1.0)]


def test_a_search_answer_naming_a_memory_never_given_fails_the_run(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    from memeval.systems.base import SYSTEMS

    if "foreign-ids" not in SYSTEMS.names():
        SYSTEMS.register("foreign-ids", KeepAllConfig)(lambda cfg, **_: ForeignIds())
    with pytest.raises(SystemFailure, match=r"answered search\('.+', k=\d+\) with memory id "
                                            r"'not-given', which it was not given"):
        run_experiment(fast_config("+experiment=retrieval_replay", "dataset=locomo",
                                   f"dataset.path={LOCOMO}", "system.name=foreign-ids"),
                       tmp_path / "run")
