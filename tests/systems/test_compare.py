"""`+experiment=compare_systems`: every system on the same items, one table per capability, the
paired difference with the first system, and the capabilities a system lacks named."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.paths import data_path
from memeval.registry import ConfigError
from memeval.reporting.plots import make_figures
from memeval.results.run_dir import read_decisions
from memeval.runner import run_experiment
from tests.systems.fakes import KeepAllSystem, WordOverlapSystem  # noqa: F401 (registered)

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier

ONLY_REFERENCE = "~system@experiment.systems.memledger"  # the default pair is reference, memledger
BUNDLED = "dataset=bundled"  # the write gate's default input is 1,861 real turns
TWO = ["+experiment=compare_systems", ONLY_REFERENCE, "+system@experiment.systems.keep=reference",
       "experiment.systems.keep.name=keep-all", BUNDLED, "dataset.limit=60", "experiment.passes=2",
       "bootstrap=50"]


def test_two_systems_side_by_side(tmp_path: Path,
                                  fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config(*TWO), tmp_path / "run")
    tables, skipped = metrics["compare"], metrics["skipped"]
    assert list(metrics["arms"]) == ["reference", "keep"]
    gate = tables["write_gate"]
    assert gate["pass"] == 2 and set(gate["systems"]) == {"reference", "keep"}
    paired = gate["paired"]["keep"]
    assert paired["vs"] == "reference" and paired["entries"] == 60
    keep_calls = gate["systems"]["keep"]["judge_calls"]
    assert keep_calls == 0 and paired["judge_call_rate"]["second"] == 0.0
    # a one-rule gate keeps every long text: its recall is never below the reference's
    assert paired["recall"]["delta"] >= 0
    assert gate["systems"]["keep"]["noise_stored"] >= gate["systems"]["reference"]["noise_stored"]
    # the ranking weighs the same last pass's figures: 1·missed + 0.5·noise + 0.1·judged
    ranking = gate["ranking"]
    assert ranking["entries"] == 60 and set(ranking["systems"]) == {"reference", "keep"}
    for name, row in ranking["systems"].items():
        figures = gate["systems"][name]
        assert row["missed"] == pytest.approx(1 - figures["substantive_recall"])
        assert row["noise"] * ranking["labelled"]["noise"] == figures["noise_stored"]
        assert row["judged"] == pytest.approx(figures["judge_calls"] / 60)
        assert row["cost"] == pytest.approx(row["missed"] + 0.5 * row["noise"]
                                            + 0.1 * row["judged"])
    costs = [row["cost"] for row in ranking["systems"].values()]
    assert costs == sorted(costs) and ranking["systems"]["keep"]["judged"] == 0
    # keep-all cannot score, detect conflicts or search: those tables hold the reference only
    assert skipped["trust"] == {"keep": "lacks score_records"}
    assert skipped["search"] == {"keep": "lacks search"}
    assert set(tables["trust"]["systems"]) == {"reference"}
    assert tables["trust"]["records"] == 80 and tables["conflicts"]["pairs"] == 84
    assert 0 < tables["search"]["ndcg_vs_first"]["reference"]["mean"] <= 1
    decisions = read_decisions(tmp_path / "run")
    assert set(decisions["arm"]) == {"reference", "keep"} and len(decisions) == 2 * 2 * 60
    figures = {p.name for p in make_figures(tmp_path / "run")}
    assert figures >= {"systems_write_gate.png", "systems_trust.png", "systems_conflicts.png",
                       "systems_search.png", "funnel.png"}


def test_a_system_against_itself_differs_by_nothing(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config(
        "+experiment=compare_systems", ONLY_REFERENCE, "+system@experiment.systems.again=reference",
        BUNDLED, "dataset.limit=40", "experiment.passes=1", "bootstrap=50"), tmp_path / "run")
    tables = metrics["compare"]
    for test in ("mcnemar_recall", "mcnemar_decisions"):
        assert tables["write_gate"]["paired"]["again"][test]["p_value"] == 1.0
    assert tables["trust"]["brier_vs_first"]["again"]["delta"] == 0.0
    assert tables["search"]["ndcg_vs_first"]["again"]["delta"] == 0.0


def test_the_write_gate_replays_the_blind_splits_by_default(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    run = tmp_path / "run"
    metrics = run_experiment(fast_config(
        "+experiment=compare_systems", ONLY_REFERENCE, "+system@experiment.systems.keep=reference",
        "experiment.systems.keep.name=keep-all", "experiment.passes=1", "bootstrap=50",
        *(f"experiment.{name}=null" for name in ("records", "pairs", "queries", "corpus"))), run)
    gate = metrics["compare"]["write_gate"]
    assert gate["splits"] == ["test4", "test5"] and gate["paired"]["keep"]["entries"] == 1861
    # the card's counts of the two blind splits: 249 + 214 substantive, 670 + 641 noise
    assert gate["ranking"]["labelled"] == {"substantive": 463, "noise": 1311}
    split = {e.id: e.meta["split"] for e in load_labeled_jsonl(
        data_path("labeled/claude_code_entire_v1.jsonl")).entries}
    assert {split[i] for i in read_decisions(run)["entry_id"]} == {"test4", "test5"}
    ranks = sorted(row["rank"] for row in gate["ranking"]["systems"].values())
    assert ranks in ([1, 2], [1, 1])


def test_search_needs_both_queries_and_corpus(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    with pytest.raises(ConfigError, match="queries and corpus go together"):
        run_experiment(fast_config("+experiment=compare_systems", "experiment.corpus=null"),
                       tmp_path / "run")


def test_a_system_without_a_write_gate_is_compared_on_the_rest(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config(
        "+experiment=compare_systems", ONLY_REFERENCE, "+system@experiment.systems.words=reference",
        "experiment.systems.words.name=word-overlap", BUNDLED, "dataset.limit=40",
        "experiment.passes=1", "bootstrap=50"), tmp_path / "run")
    tables = metrics["compare"]
    assert metrics["skipped"]["write_gate"] == {"words": "lacks ingest, reset_memories"}
    assert set(tables["write_gate"]["systems"]) == {"reference"}
    words = tables["conflicts"]["systems"]["words"]
    assert words["typed"] is False and tables["conflicts"]["systems"]["reference"]["typed"]
    assert tables["trust"]["brier_vs_first"]["words"]["vs"] == "reference"
    search = tables["search"]["ndcg_vs_first"]
    low, high = search["words"]["delta_ci95"]
    assert low <= search["words"]["delta"] <= high
    assert metrics["notes"] == {"words": {"search": "word overlap"}}


@pytest.mark.slow
def test_the_default_pair_fills_every_table_for_both(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    pytest.importorskip("memledger")
    metrics = run_experiment(fast_config("+experiment=compare_systems", BUNDLED, "dataset.limit=60",
                                         "experiment.passes=2", "bootstrap=50"), tmp_path / "run")
    tables = metrics["compare"]
    both = ["reference", "memledger"]
    assert list(metrics["arms"]) == both and metrics["skipped"] == {
        what: {} for what in ("write_gate", "trust", "conflicts", "search")}
    assert list(tables["write_gate"]["systems"]) == both
    assert list(tables["trust"]["systems"]) == both
    assert list(tables["conflicts"]["systems"]) == both
    assert list(tables["search"]["ndcg_vs_first"]) == both
    memledger = tables["write_gate"]["systems"]["memledger"]
    assert memledger["judge_calls"] == 0 and memledger["substantive_recall"] == 1.0
    assert tables["conflicts"]["systems"]["memledger"]["typed"] is False
    assert tables["search"]["ndcg_vs_first"]["memledger"]["vs"] == "reference"
    assert "sqlite-vec via sqlean" in metrics["notes"]["memledger"]["search_path"]


def test_a_system_failing_one_capability_keeps_everyone_else_s_figures(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    from memeval.metrics.gate_metrics import SystemFailure

    with pytest.raises(SystemFailure, match="system gone failed in search: search in the daemon "
                                            "failed"):
        run_experiment(fast_config(
            "+experiment=compare_systems", ONLY_REFERENCE,
            "+system@experiment.systems.gone=reference",
            "experiment.systems.gone.name=search-goes-away", BUNDLED, "dataset.limit=40",
            "experiment.passes=1", "bootstrap=30"), tmp_path / "run")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())  # written first
    compare = metrics["compare"]
    assert list(compare["search"]["ndcg_vs_first"]) == ["reference"]
    assert set(compare["trust"]["systems"]) == {"reference", "gone"}  # its other tables stand
    assert metrics["skipped"]["search"]["gone"].startswith("failed: search in the daemon failed")
    assert metrics["failures"] == ["system gone failed in search: search in the daemon failed: "
                                   "ConnectError (the daemon went away)"]
