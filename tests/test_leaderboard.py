"""`python -m memeval leaderboard`: systems × benchmarks from runs, each figure with its CI, in
Markdown, HTML and versioned JSON; a failed or unfinished run is listed as failed and every
other run keeps its figures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from memeval.cli.leaderboard import main
from memeval.reporting.leaderboard import SCHEMA, VERSION, Candidate, _chosen
from memeval.reporting.outputs import Score, item_key, items_of
from memeval.runner import run_experiment
from tests.systems.fakes import WordOverlapSystem  # noqa: F401 (registered)

LOCOMO = Path(__file__).parent / "data" / "corpora" / "locomo_small.json"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from memeval.config import compose

    root = tmp_path_factory.mktemp("runs")
    base = ["embedder=hashing", f"cache_dir={root / 'cache'}", "progress=false", "plots=false",
            "reporting.phoenix.endpoint=null", "bootstrap=50"]
    for name, overrides in {
        "gate": ["+experiment=three_pass", "dataset.limit=40"],
        "retrieval": ["+experiment=retrieval_replay", "dataset=locomo",
                      f"dataset.path={LOCOMO}", "experiment.passes=1"],
        "retrieval-overlap": ["+experiment=retrieval_replay", "dataset=locomo",
                              f"dataset.path={LOCOMO}", "experiment.passes=1",
                              "system.name=word-overlap"],
        "conflicts-overlap": ["+experiment=conflict_detection", "system.name=word-overlap"],
    }.items():
        run_experiment(compose([*base, *overrides]), root / "all" / name)
    failed = root / "all" / "qa-failed"  # a run whose answerer failed: its file says so
    shutil.copytree(root / "all" / "retrieval-overlap", failed)
    metrics = json.loads((failed / "metrics.json").read_text())
    metrics["failures"] = ["answerer: 11 of 11 answers failed"]
    (failed / "metrics.json").write_text(json.dumps(metrics))
    unfinished = root / "all" / "unfinished" / ".hydra"  # a run that died before its results
    unfinished.mkdir(parents=True)
    (unfinished / "config.yaml").write_text("system: {name: crashing}\n"
                                            "experiment: {name: memory_qa}\n")
    return root


@pytest.mark.slow  # runs whole experiments: not the quick tier
def test_the_table_holds_every_system_s_figures_and_names_the_failed_runs(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(runs / "all"), "--out", str(runs / "board")]) == 0
    table = json.loads((runs / "board" / "leaderboard.json").read_text())
    assert table["schema"] == SCHEMA and table["version"] == VERSION == 2
    assert sorted(table["systems"]) == ["crashing", "reference", "word-overlap"]
    reference, overlap = table["cells"]["reference"], table["cells"]["word-overlap"]
    assert reference["three_pass (write_gate_v1, 40 entries) / recall"]["ci95"] is not None
    ndcg = "retrieval (locomo_small) / nDCG@5"
    assert 0 <= overlap[ndcg]["value"] <= 1 and 0 <= reference[ndcg]["value"] <= 1
    assert overlap[ndcg]["value"] != reference[ndcg]["value"]  # each system's own search
    assert overlap["conflicts (memory_pairs_v1) / recall"]["value"] is not None
    reasons = {f["run"].rsplit("/", 1)[-1]: f["reason"] for f in table["failed"]}
    assert reasons["qa-failed"] == "answerer: 11 of 11 answers failed"
    assert reasons["unfinished"].startswith("no metrics.json")
    markdown = (runs / "board" / "leaderboard.md").read_text()
    assert "| word-overlap |" in markdown and "## Failed runs" in markdown
    assert "<table" in (runs / "board" / "leaderboard.html").read_text()
    printed = capsys.readouterr().out
    assert "retrieval (locomo_small)" in printed and "nDCG@5 ↑" in printed
    assert all(len(line) <= 100 for line in printed.splitlines())
    used = {(u["system"], u["benchmark"]) for u in table["runs_used"]}
    assert ("word-overlap", "retrieval (locomo_small)") in used
    (paired,) = [d for d in table["differences"] if d["key"] == ndcg]
    assert (paired["system"], paired["against"]) == ("word-overlap", "reference")
    assert paired["items"] > 0 and paired["delta"] == pytest.approx(
        overlap[ndcg]["value"] - reference[ndcg]["value"])
    low, high = paired["delta_ci95"]
    assert low <= paired["delta"] <= high and "differences (paired, 95% CI):" in printed
    cell = reference["three_pass (write_gate_v1, 40 entries) / recall"]
    assert cell["configuration"].startswith("settings not recorded")  # run_experiment's
    assert cell["shown"].endswith("]")


@pytest.mark.slow
def test_a_folder_with_no_runs_is_refused(tmp_path: Path) -> None:
    assert main([str(tmp_path), "--out", str(tmp_path / "board")]) == 2


def candidate(value: float, configuration: str, started: str,
              higher_is_better: bool = True) -> Candidate:
    score = Score("b", "m", value, higher_is_better=higher_is_better)
    return Candidate("s", "b", (score,), f"run-{value}-{started}", configuration, "e", started)


@pytest.mark.parametrize(("found", "chosen"), [
    # a default run beats a better non-default one, and the latest default wins
    ([candidate(0.9, "defaults", "1"), candidate(0.99, "embedder=x", "2"),
      candidate(0.8, "defaults", "3")], "run-0.8-3"),
    # with no default run, the best on the first figure, whichever way is better
    ([candidate(0.9, "seed=1", "1"), candidate(0.95, "seed=2", "2")], "run-0.95-2"),
    ([candidate(0.2, "seed=1", "1", False), candidate(0.1, "seed=2", "2", False)], "run-0.1-2"),
])
def test_the_board_chooses_in_the_open(found: list[Candidate], chosen: str) -> None:
    assert _chosen(found).run == chosen


def test_a_measure_of_several_benchmarks_pairs_each_benchmark_s_own_items() -> None:
    dev, blind = pd.Series([1.0], index=["a"]), pd.Series([0.0], index=["b"])
    found = {item_key("bench (dev)", "F1"): dev, item_key("bench (blind)", "F1"): blind,
             "recall": dev}
    assert items_of(found, Score("bench (blind)", "F1", 0.0)) is blind
    assert items_of(found, Score("bench (dev)", "F1", 1.0)) is dev
    assert items_of(found, Score("other", "recall", 1.0)) is dev  # one benchmark: by measure
    assert items_of(found, Score("other", "F1", 1.0)) is None
