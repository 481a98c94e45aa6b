"""conflict_detection and mqs_calibration pushed to a real Phoenix on loopback, on small inputs:
the datasets, one experiment per detector or scorer with a run and evaluations per item, the
figures in the metadata, secrets redacted, and a second push adding nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memeval.config import compose
from memeval.paths import data_path
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.files import PHOENIX_DIR
from memeval.reporting.phoenix.headline import headline_evaluations
from memeval.reporting.phoenix.pushers import push_run
from memeval.reporting.phoenix.quality_items import ItemSet, item_sets
from memeval.results.run_dir import read_metrics
from memeval.runner import run_experiment
from tests.phoenix.test_push import experiments_of, pages

pytestmark = pytest.mark.integration

SECRET = "sk-ant-api03-" + "Z" * 48
EVALUATIONS = {"conflict_detection": {"correct", "any_conflict_correct"},
               "mqs_calibration": {"abs_error", "band_agrees"}}
HEADLINE = {"conflict_detection": "any_conflict_recall_ci95", "mqs_calibration": "brier_ci95"}


def head(folder: Path, bundled: str, lines: int, *planted: dict[str, Any]) -> str:
    """The first `lines` lines of a bundled set, plus planted ones, as a file of its own."""
    rows = Path(data_path(bundled)).read_text().splitlines()[:lines]
    path = folder / Path(bundled).name
    path.write_text("\n".join([*rows, *(json.dumps(p) for p in planted)]) + "\n")
    return str(path)


def overrides(folder: Path) -> dict[str, list[str]]:
    pair = {"pair_id": "s1", "conflict": "none",
            "a": {"content": f"CI reads the key {SECRET}", "path": "MEMORY.md",
                  "timestamp": "2026-01-02"},
            "b": {"content": "Deploys go through ArgoCD.", "path": "memory/2026-02-03.md",
                  "timestamp": "2026-02-03"}}
    record = {"id": "s1", "content": f"The staging token is {SECRET}", "confidence": 0.9,
              "label": "untrusted"}
    return {
        "conflict_detection": [
            f"experiment.pairs={head(folder, 'conflicts/memory_pairs_v1.jsonl', 12, pair)}",
            f"experiment.dev_pairs=[{head(folder, 'conflicts/memory_pairs_v2.jsonl', 40)}]",
            "experiment.test_pairs="
            f"{head(folder, 'conflicts/memory_pairs_heldout_v1.jsonl', 20)}",
            "experiment.folds=2"],
        "mqs_calibration": [
            f"experiment.records={head(folder, 'mqs/memory_records_v1.jsonl', 15, record)}",
            "experiment.scenarios=null",
            f"experiment.dev_records=[{head(folder, 'mqs/memory_records_v2.jsonl', 40)}]",
            "experiment.test_records="
            f"{head(folder, 'mqs/memory_records_heldout_v1.jsonl', 20)}",
            "experiment.folds=2"]}


def run(folder: Path, experiment: str, endpoint: str, *extra: str) -> Path:
    cfg = compose([f"+experiment={experiment}", "embedder=hashing", "progress=false",
                   "plots=false", "bootstrap=20", f"cache_dir={folder / 'cache'}",
                   f"reporting.phoenix.endpoint={endpoint}", *overrides(folder)[experiment],
                   *extra])
    run_experiment(cfg, folder / experiment)
    return folder / experiment


@pytest.fixture(scope="module")
def pushed(phoenix_url: str, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[dict[str, Path], httpx.Client]]:
    folder = tmp_path_factory.mktemp("quality")
    runs = {name: run(folder, name, phoenix_url) for name in EVALUATIONS}
    with httpx.Client(base_url=phoenix_url, timeout=30) as client:
        yield runs, client


def _sets(run_dir: Path) -> list[ItemSet]:
    return item_sets(run_dir, read_metrics(run_dir))


@pytest.mark.parametrize("experiment", sorted(EVALUATIONS))
def test_each_detector_is_an_experiment_with_a_run_and_evaluations_per_item(
        pushed: tuple[dict[str, Path], httpx.Client], experiment: str) -> None:
    runs, client = pushed
    run_dir = runs[experiment]
    metrics = read_metrics(run_dir)
    assert json.loads((run_dir / PHOENIX_DIR / "push.json").read_text())["run_id"] == \
        metrics["run_id"]  # pushed at the run's end
    sets = _sets(run_dir)
    datasets = {d["name"]: d for d in pages(client, "/v1/datasets")}
    experiments = {(e["metadata"]["set"], e["metadata"]["detector"]): e
                   for e in experiments_of(client, metrics["run_id"])}
    assert len(experiments) == sum(len(s.detectors) for s in sets) >= 6
    for item_set in sets:
        found = [d for name, d in datasets.items()
                 if name.startswith(f"memeval {item_set.name} ")]
        assert any(d["example_count"] == len(item_set.examples) for d in found)
        for detector in item_set.detectors:
            experiment_row = experiments[(item_set.name, detector.name)]
            assert experiment_row["successful_run_count"] == len(detector.outputs) > 0
            figure = HEADLINE[experiment] if item_set.name != "mai scenarios" else "accuracy"
            assert experiment_row["metadata"][figure] == detector.metrics[figure]
            body = client.get(f"/v1/experiments/{experiment_row['id']}/json").json()
            assert len(body) == len(detector.outputs)
            headline = {e["name"] for e in headline_evaluations(detector.scores, "")}
            carried = []
            for phoenix_run in body:
                names = {a["name"] for a in phoenix_run["annotations"]}
                assert names - headline == set(item_set.evaluation_names)
                carried += sorted(names & headline)
            assert sorted(carried) == sorted(headline)  # each figure on one run


@pytest.mark.parametrize("experiment", sorted(EVALUATIONS))
def test_a_planted_secret_arrives_redacted(pushed: tuple[dict[str, Path], httpx.Client],
                                           experiment: str) -> None:
    runs, client = pushed
    metrics = read_metrics(runs[experiment])
    names = {f"memeval {s.name} " for s in _sets(runs[experiment])}
    sent = [client.get(f"/v1/datasets/{d['id']}/examples").text
            for d in pages(client, "/v1/datasets") if any(d["name"].startswith(n)
                                                          for n in names)]
    sent += [client.get(f"/v1/experiments/{e['id']}/json").text
             for e in experiments_of(client, metrics["run_id"])]
    text = "\n".join(sent)
    assert "[REDACTED:" in text and SECRET not in text


@pytest.mark.parametrize("experiment", sorted(EVALUATIONS))
def test_pushing_again_creates_nothing(pushed: tuple[dict[str, Path], httpx.Client],
                                       experiment: str) -> None:
    runs, client = pushed
    metrics = read_metrics(runs[experiment])
    datasets = len(list(pages(client, "/v1/datasets")))
    before = len(experiments_of(client, metrics["run_id"]))
    report = push_run(runs[experiment], PhoenixConfig(endpoint=str(client.base_url)),
                      progress=False)
    assert report.runs_created == 0 and report.evaluations == 0
    assert len(list(pages(client, "/v1/datasets"))) == datasets
    assert len(experiments_of(client, metrics["run_id"])) == before


def test_disabled_reporting_pushes_nothing(pushed: tuple[dict[str, Path], httpx.Client],
                                           tmp_path: Path) -> None:
    _, client = pushed
    run_dir = run(tmp_path, "mqs_calibration", str(client.base_url),
                  "reporting.phoenix.enabled=false")
    assert not (run_dir / PHOENIX_DIR).exists()
    assert experiments_of(client, read_metrics(run_dir)["run_id"]) == []
