"""Quality experiments to Phoenix, with stand-ins: the run directory's per-item tables read as
labelled sets, and the requests a push makes (datasets, experiments, runs, evaluations)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import DictConfig

from memeval.paths import DATA_DIR, shown_path
from memeval.reporting.phoenix import quality_push
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.files import PHOENIX_DIR
from memeval.reporting.phoenix.headline import headline_evaluations
from memeval.reporting.phoenix.push import PUSH_RECORD, report_run
from memeval.reporting.phoenix.pushers import push_run
from memeval.reporting.phoenix.quality_items import item_sets
from memeval.results.run_dir import read_table
from memeval.runner import run_experiment

SECRET = "AKIAZ7QF3X2KJ4LM5NPQ"
CI = [0.1, 0.9]


def _stats(**values: float) -> dict[str, Any]:
    return {**{k: v for k, v in values.items()}, **{f"{k}_ci95": CI for k in values}}


def _conflict_score() -> dict[str, Any]:
    return {"pairs": 2, "any_conflict": _stats(precision=1.0, recall=0.5),
            "per_type": {t: _stats(recall=0.5) for t in ("contradiction", "temporal",
                                                          "semantic")},
            **_stats(temporal_newer_recall=1.0)}


def _pair(pair_id: str, label: str, a: str, **guesses: str) -> dict[str, Any]:
    return {"pair_id": pair_id, "label": label, "newer": "b" if label == "temporal" else None,
            "kind": "tooling", "same_source": False, "a": a, "a_path": "MEMORY.md",
            "a_timestamp": "2026-01-02", "b": "deploys use the staging key",
            "b_path": "memory/2026-03-04.md", "b_timestamp": "2026-03-04", "note": "",
            **{f"{d}_predicted": g for d, g in guesses.items()}}


def conflict_run(folder: Path) -> Path:
    """A conflict_detection run directory as the experiment writes it, on two pairs."""
    folder.mkdir()
    pairs = [_pair("p1", "temporal", f"deploys use key {SECRET}", memeval="temporal",
                   compat="none"),
             _pair("p2", "none", "tabs are fine", memeval="contradiction", compat="none")]
    for row in pairs:
        row.update(memeval_reason="marker", compat_reason="")
    learned = [{"split": split, **_pair(f"{split}{i}", label, "x", memeval="none",
                                        compat="none", learned=label),
                "learned_newer": "b" if label == "temporal" else None}
               for split in ("dev", "test") for i, label in enumerate(("temporal", "none"))]
    pd.DataFrame(pairs).to_parquet(folder / "conflict_pairs.parquet")
    pd.DataFrame(learned).to_parquet(folder / "conflict_learned.parquet")
    modes = {"memeval": _conflict_score(), "compat": _conflict_score()}
    metrics = {"run_id": "r" * 32, "experiment": "conflict_detection", "seed": 0,
               "conflicts": {"source": "pairs.jsonl", "detectors": ["memeval", "compat"],
                             **{m: {**s, **_stats(accuracy=0.5)} for m, s in modes.items()}},
               "conflicts_learned": {"detector": "learned", "dev": [{"source": "dev.jsonl"}],
                                     "test_source": {"source": "test.jsonl"},
                                     "cv": _conflict_score(), "test": _conflict_score(),
                                     "rules_modes": {"dev": modes, "test": modes}}}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def trust_run(folder: Path) -> Path:
    """An mqs_calibration run directory with the trust score's two splits, on four records."""
    folder.mkdir()
    rows = [{"split": split, "source": f"/data/{split}.jsonl", "record_id": f"{split}{i}",
             "content": f"the staging token is {SECRET}" if i == 0 else "use pnpm",
             "namespace": "proj", "record_confidence": 0.9, "derived_from": [],
             "label": label, "trust": grade, "score": score, "mqs": 60.0, "intercept": -1.0,
             "term_confidence": 0.5}
            for split in ("dev", "test")
            for i, (label, grade, score) in enumerate((("trusted", 0.9, 80.0),
                                                        ("untrusted", None, 50.0)))]
    pd.DataFrame(rows).to_parquet(folder / "trust_records.parquet")
    report = {"against": "label", "n": 2, **_stats(spearman=0.8, kendall=0.7, brier=0.1,
                                                   ece=0.05)}
    metrics = {"run_id": "t" * 32, "experiment": "mqs_calibration", "seed": 0, "mqs": None,
               "trust_score": {"dev": {"trust_out_of_fold": report, "mqs": report},
                               "test": {"trust": report, "mqs": report}}}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def test_conflict_tables_become_one_set_per_split_with_every_detector(tmp_path: Path) -> None:
    run_dir = conflict_run(tmp_path / "run")
    sets = {s.name: s for s in item_sets(run_dir, json.loads((run_dir / "metrics.json")
                                                              .read_text()))}
    assert list(sets) == ["conflicts pairs", "conflicts dev", "conflicts test"]
    assert [d.name for d in sets["conflicts test"].detectors] == [
        "rules memeval", "rules compat", "learned (fitted on dev)"]
    first = sets["conflicts pairs"].examples[0]
    assert first["input"]["a"] == {"content": f"deploys use key {SECRET}", "path": "MEMORY.md",
                                   "timestamp": "2026-01-02"}
    assert first["output"] == {"label": "temporal", "newer": "b", "kind": "tooling"}
    memeval = sets["conflicts pairs"].detectors[0]
    assert memeval.outputs["1"] == {"predicted": "contradiction", "any_conflict": True,
                                    "reason": "marker"}
    assert [(e["name"], e["score"]) for e in memeval.evaluations["1"]] == [
        ("correct", 0.0), ("any_conflict_correct", 0.0)]
    learned = sets["conflicts dev"].detectors[-1]
    assert learned.outputs["0"]["newer"] == "b"
    assert learned.metrics["temporal_newer_recall_ci95"] == CI
    assert learned.metrics["any_conflict_precision"] == 1.0
    assert memeval.metrics["accuracy_ci95"] == CI


def test_trust_scores_are_judged_against_the_grade_else_the_outcome(tmp_path: Path) -> None:
    run_dir = trust_run(tmp_path / "run")
    sets = item_sets(run_dir, json.loads((run_dir / "metrics.json").read_text()))
    assert [s.name for s in sets] == ["trust dev", "trust test"]
    trust, mqs = sets[0].detectors
    assert (trust.name, mqs.name) == ("trust score (out of fold)", "MQS memledger")
    assert trust.outputs["0"] == {"score": 80.0, "band": "trusted", "intercept": -1.0,
                                  "terms": {"confidence": 0.5}}
    graded = {e["name"]: e["score"] for e in trust.evaluations["0"]}
    assert graded == {"abs_error": pytest.approx(0.1), "band_agrees": 1.0}
    ungraded = {e["name"]: e["score"] for e in trust.evaluations["1"]}  # untrusted, P = 0.5
    assert ungraded == {"abs_error": pytest.approx(0.5), "band_agrees": 0.0}
    assert trust.metrics["brier_ci95"] == CI and trust.metrics["against"] == "label"
    assert sets[0].examples[1]["metadata"]["source"] == "dev.jsonl"
    assert sets[0].examples[0]["input"]["metadata"]["record_confidence"] == 0.9


def test_descriptions_name_data_files_from_the_repository_never_absolutely(
        tmp_path: Path) -> None:
    run_dir = trust_run(tmp_path / "run")
    rows = read_table(run_dir, "trust_records")
    rows["source"] = [str(DATA_DIR / "mqs" / "memory_records_v1.jsonl"), "/home/dana/x.jsonl"] * 2
    rows.to_parquet(run_dir / "trust_records.parquet")
    sets = item_sets(run_dir, json.loads((run_dir / "metrics.json").read_text()))
    assert sets[0].description == ("memeval memory records, dev split: "
                                   "data/mqs/memory_records_v1.jsonl, x.jsonl")
    assert shown_path(str(DATA_DIR / "labeled" / ".." / "mqs" / "a.jsonl")) == "data/mqs/a.jsonl"
    assert shown_path("") == ""


@dataclass
class Held:
    """What the stand-in Phoenix holds, and every request body it was sent."""

    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    experiments_by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, dict[str, str]] = field(default_factory=dict)  # experiment -> node -> run
    evaluations: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    annotation_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    sent: list[Any] = field(default_factory=list)


class StandInREST:
    """Phoenix's REST API as far as a push uses it, in memory."""

    def __init__(self, held: Held) -> None:
        self.held = held
        self.datasets, self.experiments_by_id = held.datasets, held.experiments_by_id
        self.runs, self.evaluations, self.sent = held.runs, held.evaluations, held.sent

    def close(self) -> None:
        pass

    def healthy(self) -> bool:
        return True

    def dataset_id(self, name: str) -> str | None:
        return next((i for i, d in self.datasets.items() if d["name"] == name), None)

    def create_dataset(self, name: str, description: str,
                       examples: Sequence[Mapping[str, Any]]) -> str:
        self.sent.append([name, description, list(examples)])
        dataset_id = f"d{len(self.datasets)}"
        self.datasets[dataset_id] = {"name": name, "examples": list(examples)}
        return dataset_id

    def example_node_ids(self, dataset_id: str) -> dict[str, str]:
        return {e["id"]: f"{dataset_id}/{e['id']}" for e in self.datasets[dataset_id]["examples"]}

    def experiments(self, dataset_id: str) -> list[dict[str, Any]]:
        return [e for e in self.experiments_by_id.values() if e["dataset"] == dataset_id]

    def create_experiment(self, dataset_id: str, name: str, description: str,
                          metadata: Mapping[str, Any]) -> str:
        self.sent.append([name, description, dict(metadata)])
        experiment_id = f"e{len(self.experiments_by_id)}"
        self.experiments_by_id[experiment_id] = {"id": experiment_id, "name": name,
                                                 "description": description,
                                                 "dataset": dataset_id,
                                                 "metadata": dict(metadata)}
        self.runs[experiment_id] = {}
        return experiment_id

    def update_experiment(self, experiment_id: str, name: str, description: str,
                          metadata: Mapping[str, Any]) -> None:
        self.sent.append([name, description, dict(metadata)])
        self.experiments_by_id[experiment_id].update(name=name, description=description,
                                                     metadata=dict(metadata))

    def experiment_runs(self, experiment_id: str) -> dict[str, str]:
        return dict(self.runs[experiment_id])

    def missing_evaluations(self, experiment_id: str, names: Sequence[str]
                            ) -> dict[str, set[str]]:
        missing = {run: {name for name in names if (run, name) not in self.evaluations}
                   for run in self.runs[experiment_id].values()}
        return {run: lacking for run, lacking in missing.items() if lacking}

    def create_run(self, experiment_id: str, run: Mapping[str, Any]) -> str:
        self.sent.append(dict(run))
        run_id = f"{experiment_id}/r{len(self.runs[experiment_id])}"
        self.runs[experiment_id][run["dataset_example_id"]] = run_id
        return run_id

    def evaluate(self, evaluation: Mapping[str, Any]) -> None:
        self.sent.append(dict(evaluation))
        self.evaluations[(evaluation["experiment_run_id"], evaluation["name"])] = dict(evaluation)

    def annotation_config_names(self) -> set[str]:
        return set(self.held.annotation_configs)

    def create_annotation_config(self, config: Mapping[str, Any]) -> None:
        assert config["name"] not in self.held.annotation_configs
        self.held.annotation_configs[config["name"]] = dict(config)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Held:
    held = Held()
    monkeypatch.setattr(quality_push, "PhoenixREST",
                        lambda base_url, timeout_s, max_body_bytes: StandInREST(held))
    return held


@pytest.mark.parametrize("make", [conflict_run, trust_run])
def test_a_push_sends_each_set_once_redacted_and_a_second_adds_nothing(
        tmp_path: Path, stand_in: Held, make: Callable[[Path], Path]) -> None:
    run_dir = make(tmp_path / "run")
    settings = PhoenixConfig(endpoint="http://127.0.0.1:1")
    report = push_run(run_dir, settings, progress=False)
    sets = item_sets(run_dir, json.loads((run_dir / "metrics.json").read_text()))
    runs = sum(len(d.outputs) for s in sets for d in s.detectors)
    assert len(stand_in.datasets) == len(sets)
    assert len(stand_in.experiments_by_id) == sum(len(s.detectors) for s in sets)
    headlines = sum(len(headline_evaluations(d.scores, ""))
                    for s in sets for d in s.detectors)
    assert report.runs_created == runs and report.evaluations == 2 * runs + headlines
    for experiment in stand_in.experiments_by_id.values():
        assert experiment["metadata"]["memeval_run_id"] == report.run_id
        assert any(k.endswith("_ci95") for k in experiment["metadata"])
        name, metadata = experiment["name"], experiment["metadata"]
        assert len(name) <= 60  # the detector first: Phoenix's list shows ~22 characters
        assert name.startswith(f"{metadata['detector']} s") or \
            name.startswith(metadata["detector"][:20])
        assert name.endswith(f" | {metadata['experiment']}") or name.endswith("...")
        assert report.run_id in experiment["description"]
    sent = json.dumps(stand_in.sent)
    assert SECRET not in sent and "[REDACTED:" in sent
    assert (run_dir / PHOENIX_DIR / PUSH_RECORD).is_file()

    again = push_run(run_dir, settings, progress=False)
    assert again.runs_created == 0 and again.evaluations == 0
    assert len(stand_in.datasets) == len(sets)
    assert len(stand_in.experiments_by_id) == sum(len(s.detectors) for s in sets)


def test_an_experiment_an_older_push_named_is_renamed_not_duplicated(
        tmp_path: Path, stand_in: Held) -> None:
    run_dir = trust_run(tmp_path / "run")
    settings = PhoenixConfig(endpoint="http://127.0.0.1:1")
    push_run(run_dir, settings, progress=False)
    experiment = next(iter(stand_in.experiments_by_id.values()))
    name = experiment["name"]
    experiment["name"] = f"01-00-10 {experiment['metadata']['memeval_run_id'][:8]} {name}"
    again = push_run(run_dir, settings, progress=False)
    assert again.runs_created == 0 and experiment["name"] == name
    assert len(stand_in.experiments_by_id) == len(again.experiments)


def test_a_push_interrupted_before_its_evaluations_finishes_them(
        tmp_path: Path, stand_in: Held) -> None:
    run_dir = trust_run(tmp_path / "run")
    settings = PhoenixConfig(endpoint="http://127.0.0.1:1")
    first = push_run(run_dir, settings, progress=False)
    dropped = next(iter(stand_in.evaluations))
    del stand_in.evaluations[dropped]
    again = push_run(run_dir, settings, progress=False)
    assert again.runs_created == 0 and again.evaluations == 1  # the one dropped
    assert len(stand_in.evaluations) == first.evaluations


def test_calibration_figures_are_evaluations_with_their_direction_rounded_as_printed(
        tmp_path: Path, stand_in: Held) -> None:
    run_dir = trust_run(tmp_path / "run")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["trust_score"]["test"]["trust"] |= {"brier": 0.0394, "ece": 0.02127}
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    push_run(run_dir, PhoenixConfig(endpoint="http://127.0.0.1:1"), progress=False)
    trust = next(e for e in stand_in.experiments_by_id.values()
                 if e["metadata"]["detector"] == "trust score (fitted on dev)")
    mine = {name: e for (run, name), e in stand_in.evaluations.items()
            if run.startswith(trust["id"] + "/")}
    # one run carries each figure, so its mean in Phoenix is the figure; in hundredths, since
    # Phoenix cuts a mean below 1 to two decimals (0.039 would show as 0.03)
    assert [run for (run, name) in stand_in.evaluations if name == "Brier x100 (lower is better)"
            and run.startswith(trust["id"] + "/")] == [f"{trust['id']}/r0"]
    brier = mine["Brier x100 (lower is better)"]["result"]
    assert (brier["score"], brier["label"]) == (3.9, "0.039 [0.100–0.900]")
    assert "lower is better" in brier["explanation"]
    assert mine["ECE x100 (lower is better)"]["result"]["score"] == 2.1
    assert mine["Spearman x100 (higher is better)"]["result"]["score"] == 80.0
    directions = {n: c["optimization_direction"] for n, c in stand_in.annotation_configs.items()}
    assert directions == {"Brier x100 (lower is better)": "MINIMIZE",
                          "ECE x100 (lower is better)": "MINIMIZE",
                          "Spearman x100 (higher is better)": "MAXIMIZE"}


def test_mai_scenarios_are_a_set_with_the_accuracy_as_headline(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    pd.DataFrame([{"scenario_id": "mai-001", "ground_truth": "well_attributed",
                   "predicted": "well_attributed", "score": 0.9, "memories": 2, "note": "n",
                   "term_sessions": 0.5},
                  {"scenario_id": "mai-002", "ground_truth": "unattributed",
                   "predicted": "well_attributed", "score": 0.8, "memories": 1, "note": "m",
                   "term_sessions": None}]).to_parquet(run_dir / "mai_scenarios.parquet")
    metrics = {"mai": {"source": str(DATA_DIR / "mai" / "s.jsonl"), "scenarios": 2,
                       "accuracy": 0.5764, "accuracy_ci95": CI, "pass_mark": 0.7}}
    (mai,) = item_sets(run_dir, metrics)
    assert (mai.name, mai.description) == ("mai scenarios",
                                           "memeval attribution scenarios data/mai/s.jsonl")
    (detector,) = mai.detectors
    assert detector.outputs["0"] == {"predicted": "well_attributed", "score": 0.9,
                                     "terms": {"sessions": 0.5}}
    assert [e["score"] for key in ("0", "1") for e in detector.evaluations[key]] == [1.0, 0.0]
    (accuracy,) = headline_evaluations(detector.scores, "MAI")
    assert (accuracy["name"], accuracy["score"], accuracy["label"]) == (
        "MAI accuracy % (higher is better)", 57.6, "57.6% [10–90]")


def test_a_directory_with_nothing_to_push_says_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text(json.dumps({"run_id": "x", "experiment": "mai"}))
    with pytest.raises(FileNotFoundError, match="conflict_detection or mqs_calibration"):
        push_run(tmp_path, PhoenixConfig(), progress=False)


def test_without_phoenix_a_quality_run_says_where_its_tables_are(tmp_path: Path) -> None:
    run_dir = trust_run(tmp_path / "run")
    out = io.StringIO()
    assert report_run(run_dir, PhoenixConfig(endpoint=None), lambda: run_dir, False, out) is None
    assert f"per-item tables kept in {run_dir}" in " ".join(out.getvalue().split())
    assert f"python -m memeval phoenix push {run_dir}" in out.getvalue()


@pytest.mark.slow
def test_conflict_detection_keeps_each_detectors_guess_on_every_split(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config("+experiment=conflict_detection", "bootstrap=20",
                                         "plots=false"), tmp_path / "run")
    table = read_table(tmp_path / "run", "conflict_learned")
    learned = metrics["conflicts_learned"]
    assert table["split"].value_counts().to_dict() == {
        "dev": sum(d["pairs"] for d in learned["dev"]), "test": learned["test"]["pairs"],
        **{f"outside {o['name']}": o["learned"]["pairs"] for o in learned["outside"]}}
    for column in ("memeval_predicted", "compat_predicted", "learned_predicted",
                   "learned_newer", "a_path", "a_timestamp", "b_path", "b_timestamp", "kind"):
        assert column in table
    test = table[table["split"] == "test"]
    assert (test["learned_predicted"] != "none").sum() == learned["test"]["per_type"][
        "contradiction"]["predicted"] + sum(learned["test"]["per_type"][t]["predicted"]
                                            for t in ("temporal", "semantic"))
    assert set(learned["rules_modes"]["test"]) == {"memeval", "compat"}
    pairs = read_table(tmp_path / "run", "conflict_pairs")
    assert pairs["a_timestamp"].notna().all()


@pytest.mark.slow
def test_mqs_calibration_keeps_each_records_content_and_metadata(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    run_experiment(fast_config("+experiment=mqs_calibration", "bootstrap=20", "plots=false",
                               "experiment.scenarios=null"), tmp_path / "run")
    for table in ("mqs_records", "trust_records"):
        rows = read_table(tmp_path / "run", table)
        assert rows["content"].str.len().gt(0).all()
        assert {"namespace", "record_confidence", "created_at", "derived_from"} <= set(rows)


def test_the_push_command_picks_the_quality_pusher(
        tmp_path: Path, stand_in: Held, capsys: pytest.CaptureFixture[str]) -> None:
    from memeval.cli.phoenix import main

    run_dir = conflict_run(tmp_path / "run")
    assert main(["push", str(run_dir), "--endpoint", "http://127.0.0.1:1", "--no-progress"]) == 0
    assert len(stand_in.experiments_by_id) == 8  # (2 rules + learned) x 2 splits, 2 on the pairs
    out = capsys.readouterr().out
    assert "8 experiments" in out and "spans" not in out  # it traced nothing


def test_a_system_under_tests_detector_is_named_as_such(tmp_path: Path) -> None:
    run_dir = conflict_run(tmp_path / "run")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["conflicts"]["detectors"] = ["memledger"]
    metrics["conflicts"]["memledger"] = metrics["conflicts"]["memeval"]
    table = read_table(run_dir, "conflict_pairs").rename(
        columns={"memeval_predicted": "memledger_predicted"})
    table.to_parquet(run_dir / "conflict_pairs.parquet")
    pairs = item_sets(run_dir, metrics)[0]
    assert [d.name for d in pairs.detectors] == ["system memledger"]
    assert pairs.detectors[0].outputs["1"]["predicted"] == "contradiction"
