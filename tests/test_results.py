"""The typed run result: written as schema 2, read back the same; committed schema-1 runs still
read by the table, figures, report, sweep summary and regression gate, with unchanged output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memeval.cli.report import main as report_main
from memeval.cli.sweep import main as sweep_main
from memeval.components import load_components
from memeval.experiments.base import Replay
from memeval.experiments.compare_systems import Compared
from memeval.experiments.conflict_detection import ConflictFindings
from memeval.experiments.mqs_calibration import Calibrated
from memeval.regression import gate as regression_gate
from memeval.reporting.outputs import outputs_of
from memeval.reporting.plots import make_figures
from memeval.reporting.report import write_report
from memeval.reporting.systems_table import systems_summary
from memeval.reporting.table import pass_table, threshold_footer
from memeval.results.result import (
    SCHEMA_VERSION,
    ContentThreshold,
    PassMetrics,
    RunResult,
    UnreadableResult,
    UnsupportedSchema,
    load_result,
)
from memeval.results.run import Run
from memeval.results.run_dir import read_metrics, write_run
from memeval.sweep.summary import summarise
from tests.test_cli import unwrapped

RUNS = Path(__file__).parent / "data" / "runs"
THREE_PASS = RUNS / "schema1_three_pass"  # written before the typed result, by three_pass
CALIBRATION = RUNS / "schema1_mqs_calibration"  # and by mqs_calibration
SYSTEMS = RUNS / "schema1_compare_systems"  # and by compare_systems (reference vs memledger)
RETRIEVAL = RUNS / "schema1_retrieval_replay"
CONFLICTS = RUNS / "schema1_conflict_detection"
ALL = [THREE_PASS, CALIBRATION, SYSTEMS, RETRIEVAL, CONFLICTS]


def test_schema_1_runs_load_typed() -> None:
    gate = load_result(THREE_PASS)
    assert gate.schema_version == 1 and gate.experiment == "three_pass"
    assert gate.fingerprint == "1d2bf5b8a9482398" and gate.embedder == "hashing-v1-256"
    assert gate.scorer is not None and gate.scorer.name == "logistic"
    assert gate.system is not None and gate.system.name == "reference"
    assert [p.pass_no for p in gate.passes] == [1, 2, 3] and gate.arms == {}
    first = gate.passes[0]
    assert first.substantive_recall == pytest.approx(111 / 112)
    assert first.substantive_recall_ci95 == (pytest.approx(109 / 112), 1.0)
    assert first.judge_calls == 163 and first.stage_counts["stored"] == 111
    assert isinstance(first.content_score_threshold, ContentThreshold) and first.gated
    assert first.failures["judge"].errors == 0 and first.stored_mqs is not None
    assert first.stored_mqs.memories == 111 and first.stored_mqs.mqs.auroc is None
    assert first.content_score_auroc is None  # written before runs kept it

    calibration = load_result(CALIBRATION)
    assert calibration.passes == () and calibration.dataset is None
    mqs, mai = calibration.of(Calibrated).mqs, calibration.of(Calibrated).mai
    assert mqs is not None and mqs.configured is not None
    assert mqs.configured.spearman == pytest.approx(0.7801, abs=1e-4)
    assert mqs.fingerprint == "ea1926a69444c7f3"
    assert mai is not None and mai.accuracy == pytest.approx(20 / 41)


def test_write_then_load_gives_the_same_typed_values(tmp_path: Path) -> None:
    for fixture, kind in ((THREE_PASS, Replay), (CALIBRATION, Calibrated)):
        metrics = read_metrics(fixture)
        metrics.pop("schema_version")
        run_dir = tmp_path / fixture.name
        written = write_run(run_dir, metrics, [], "seed: 0\n", {"git_commit": None})
        loaded = load_result(run_dir)
        assert json.loads((run_dir / "metrics.json").read_text())["schema_version"] == 2
        assert loaded == written and loaded.schema_version == SCHEMA_VERSION == 2
        old = load_result(fixture)
        assert loaded.passes == old.passes and loaded.of(kind) == old.of(kind)
        assert loaded.dataset == old.dataset and loaded.scorer == old.scorer


HEADER = {"schema_version", "run_id", "started_at", "experiment", "seed", "dataset", "embedder",
          "system", "judge", "scorer", "passes", "wall_seconds", "timing", "failures"}
"""What the runner writes of every run; the rest of metrics.json is the experiment's own."""


@pytest.mark.parametrize("fixture", ALL, ids=lambda p: p.name)
def test_the_declared_type_writes_back_every_section_a_run_wrote(fixture: Path) -> None:
    """Read with the type its experiment declared and written again, a run's own sections come
    back key for key, in order: nothing the experiment measured is lost or reordered."""
    load_components()
    result = load_result(fixture)
    written = result.of(outputs_of(result.experiment).findings).to_dict()
    own = [(key, value) for key, value in result.sections.items() if key not in HEADER]
    assert list(written.items()) == own


def test_a_run_read_as_a_type_it_does_not_hold_is_refused_naming_both() -> None:
    with pytest.raises(UnreadableResult, match="this three_pass run holds no Calibrated"):
        load_result(THREE_PASS).of(Calibrated)


@pytest.mark.slow
def test_the_report_command_shows_the_sections_an_experiment_declares(tmp_path: Path) -> None:
    """As a user runs it, in a fresh process: the command loads the experiments that declare
    their report sections, so an mqs_calibration report has its calibration table."""
    run_dir = tmp_path / "run"
    shutil.copytree(CALIBRATION, run_dir)
    done = subprocess.run([sys.executable, "-m", "memeval", "report", str(run_dir)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "## MQS on 80 labelled records (P(trusted) = score/100; 5 equal-count bins)\n" in \
        (run_dir / "report.md").read_text()


def test_a_file_without_schema_version_predates_it_and_is_schema_1() -> None:
    metrics = read_metrics(THREE_PASS)
    metrics.pop("schema_version")
    assert RunResult.from_dict(metrics).schema_version == 1


def newer_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "newer"
    shutil.copytree(THREE_PASS, run_dir)
    metrics = read_metrics(run_dir)
    (run_dir / "metrics.json").write_text(json.dumps({**metrics, "schema_version": 3}))
    return run_dir


@pytest.mark.bad_input
def test_a_newer_schema_is_refused_naming_the_file_and_the_versions_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = newer_run(tmp_path)
    with pytest.raises(UnsupportedSchema) as refused:
        Run.load(run_dir)
    message = str(refused.value)
    assert str(run_dir / "metrics.json") in message and "schema_version 3" in message
    assert "reads 1, 2" in message and "\n" not in message
    with pytest.raises(UnsupportedSchema):
        read_metrics(run_dir)
    assert report_main([str(run_dir)]) == 2
    assert sweep_main([str(tmp_path)]) == 2
    err = unwrapped(capsys.readouterr().err)
    assert err.count(message) == 2 and "Traceback" not in err


@pytest.mark.bad_input
@pytest.mark.parametrize("text", ['{"schema_version": 2, "passes": []}', '{"schema_version": 2,'],
                         ids=["no experiment", "truncated"])
def test_a_malformed_metrics_file_is_refused_in_one_line(
        text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "broken"
    run_dir.mkdir()
    (run_dir / "metrics.json").write_text(text)
    with pytest.raises(UnreadableResult, match="not a memeval run's metrics"):
        load_result(run_dir)
    assert report_main([str(run_dir)]) == 2
    err = unwrapped(capsys.readouterr().err.strip())
    assert err.startswith(f"memeval report: {run_dir / 'metrics.json'}: not a memeval run's")
    assert "\n" not in err and "Traceback" not in err


def test_the_table_of_a_schema_1_run_is_what_its_run_printed() -> None:
    result = load_result(THREE_PASS)
    assert result.scorer is not None
    printed = (pass_table(result.passes) + "\n"
               + threshold_footer(result.passes, result.scorer.threshold_rule) + "\n")
    assert printed == (RUNS / "schema1_three_pass_printed.txt").read_text()


def test_a_schema_1_comparison_loads_typed() -> None:
    result = load_result(SYSTEMS)
    assert set(result.arms) == {"reference", "memledger"}
    compared = result.of(Compared).compare
    assert [what for what, _ in compared.tables()] == ["write_gate", "trust", "conflicts",
                                                       "search"]
    assert compared.write_gate is not None and compared.write_gate.pass_no == 3
    assert compared.write_gate.systems["memledger"].noise_stored == 110
    # schema 1 ran McNemar on every keep/drop only, under `mcnemar`
    assert compared.write_gate.paired["memledger"].decisions_mcnemar_p is not None
    assert compared.write_gate.paired["memledger"].mcnemar_p is None
    assert compared.trust is not None and compared.trust.records == 80
    assert compared.conflicts is not None and not compared.conflicts.systems["memledger"].typed
    assert compared.search is not None and compared.search.k == 5
    assert compared.search.ndcg_vs_first["reference"].delta is None


def test_the_systems_summary_of_a_schema_1_run_is_what_its_run_printed() -> None:
    sections = load_result(SYSTEMS).sections
    printed = systems_summary(sections["compare"], sections["skipped"], sections["notes"])
    assert printed + "\n" == (RUNS / "schema1_compare_systems_printed.txt").read_text()


def test_schema_1_retrieval_and_conflict_runs_load_typed() -> None:
    retrieval = load_result(RETRIEVAL)
    assert [p.pass_no for p in retrieval.passes] == [1, 2, 3]
    assert all(set(p.ranking) == {"off", "on"} and not p.gated for p in retrieval.passes)
    assert all(p.substantive_recall is None for p in retrieval.passes)
    on = retrieval.passes[-1].ranking["on"]
    assert on.ndcg_ci95[0] <= on.ndcg <= on.ndcg_ci95[1] and on.gini_recall is not None
    conflicts = load_result(CONFLICTS).of(ConflictFindings).conflicts
    assert set(conflicts.by_detector) == set(conflicts.detectors)
    for scores in conflicts.by_detector.values():
        assert scores.accuracy is not None and 0 <= scores.accuracy <= 1
        assert sum(n for row in scores.confusion.values() for n in row.values()) == 84


@pytest.mark.parametrize("fixture", ALL, ids=lambda p: p.name)
def test_the_report_of_a_schema_1_run_is_unchanged(fixture: Path, tmp_path: Path) -> None:
    _, markdown = write_report([fixture], tmp_path)
    assert markdown.read_text() == (RUNS / f"{fixture.name}_report.md").read_text()


@pytest.mark.parametrize(("fixture", "figures"), [
    (THREE_PASS, {"funnel", "learning_curve", "score_distributions", "rejection_store",
                  "stored_mqs"}),
    (CALIBRATION, {"mqs_reliability", "mqs_breakdown", "mai_confusion"}),
    (SYSTEMS, {"systems_write_gate", "systems_trust", "systems_conflicts", "systems_search",
               "funnel", "learning_curve", "score_distributions", "rejection_store"}),
    (RETRIEVAL, {"retrieval"}), (CONFLICTS, {"conflict_confusion"})],
    ids=lambda v: v.name if isinstance(v, Path) else "")
@pytest.mark.slow
def test_the_figures_of_a_schema_1_run_are_drawn(fixture: Path, figures: set[str],
                                                 tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(fixture, run_dir)
    assert {path.stem for path in make_figures(run_dir)} == figures


def test_the_sweep_summary_reads_schema_1_runs(capsys: pytest.CaptureFixture[str]) -> None:
    sweep = summarise(RUNS)
    assert sweep.table.to_csv(index=False) == (RUNS / "sweep_summary.csv").read_text()
    assert "schema1_mqs_calibration has no per-pass metrics" in capsys.readouterr().err


def test_the_regression_gate_reads_schema_1_runs(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """The shipped checks, on the committed runs (seed 0): the calibration metrics are the values
    the thresholds were derived from, and the data fingerprints match."""
    fixtures = {"+experiment=mqs_calibration": CALIBRATION, "+experiment=three_pass": THREE_PASS}
    monkeypatch.setattr(regression_gate, "run_metrics",
                        lambda overrides, seed, work: load_result(fixtures[overrides[0]]))
    spec = regression_gate.load()
    # Schema-1 runs predate the quality models' sections (`sections.*`): gate what they hold.
    spec["runs"] = {name: {**spec["runs"][name], "fingerprints": {
        path: found for path, found in spec["runs"][name]["fingerprints"].items()
        if not path.startswith("sections.")}} for name in ("calibration", "write_gate")}
    spec["checks"] = [raw for raw in spec["checks"]
                      if raw["run"] in spec["runs"] and not raw["metric"].startswith("sections.")]
    rows, failures = regression_gate.evaluate(spec, {}, None, regression_gate.Runs(tmp_path))
    assert failures == [] and {r["verdict"] for r in rows} == {"ok"}
    assert len(rows) == len(spec["checks"])
    measured = {raw["metric"]: raw["measured"]["values"][0] for raw in spec["checks"]
                if raw["run"] == "calibration"}
    assert {r["metric"]: round(r["value"], 4) for r in rows if r["run"] == "calibration"} \
        == measured


def test_gate_paths_reach_typed_attributes() -> None:
    result = load_result(THREE_PASS)
    check = regression_gate.Check(metric="", run="r", direction="at_least", why="")
    assert regression_gate.lookup(result, "passes.*.judge_calls", check) == 123
    assert regression_gate.lookup(result, "passes.-1.judge_calls", check) == 123
    assert regression_gate.lookup(result, "passes.0.stage_counts.stored", check) == 111


def test_a_pass_reads_its_content_score_separation() -> None:
    written = {"pass": 1, "content_score_threshold": None, "content_score_separation": {
        "auroc": 0.91, "auroc_ci95": [0.89, 0.93], "substantive": 460, "low_value": 542,
        "unlabelled": 0}}
    read = PassMetrics.from_dict(written)
    assert read.content_score_auroc == 0.91 and read.content_score_auroc_ci95 == (0.89, 0.93)
    assert PassMetrics.from_dict({"pass": 2, "content_score_separation": None}
                                 ).content_score_auroc_ci95 == (None, None)
