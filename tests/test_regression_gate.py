"""The CI regression gate: metric lookup, verdicts, refusal on other data, and the real thing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memeval.cli.regression_gate import main as gate_main
from memeval.regression import gate as regression_gate
from memeval.regression.gate import Check, Runs, evaluate, load, lookup

METRICS = {"passes": [{"recall": 0.99, "noise": 0}, {"recall": 0.97, "noise": 2}],
           "mqs": {"configured": {"ece": 0.08}, "fingerprint": "abc"}}


def check(direction: str, threshold: float | None = None) -> Check:
    return Check(metric="x", run="r", direction=direction, why="because", threshold=threshold)


def test_lookup_takes_the_worst_of_a_list_and_indexes_from_the_end() -> None:
    assert lookup(METRICS, "passes.*.recall", check("at_least")) == 0.97
    assert lookup(METRICS, "passes.*.noise", check("at_most")) == 2
    assert lookup(METRICS, "passes.-1.recall", check("at_least")) == 0.97
    assert lookup(METRICS, "mqs.configured.ece", check("at_most")) == 0.08


def test_verdicts_respect_direction() -> None:
    assert check("at_least", 0.5).passes(0.5) and not check("at_least", 0.5).passes(0.49)
    assert check("at_most", 0.1).passes(0.1) and not check("at_most", 0.1).passes(0.11)


def spec(fingerprint: str = "abc") -> dict[str, Any]:
    return {"seed": 0, "runs": {"r": {"overrides": [], "fingerprints": {
        "mqs.fingerprint": fingerprint}}},
            "checks": [{"metric": "mqs.configured.ece", "run": "r", "direction": "at_most",
                        "why": "stay calibrated", "threshold": 0.1},
                       {"metric": "passes.*.noise", "run": "r", "direction": "at_most",
                        "why": "no noise", "threshold": 0.01}]}


def test_evaluate_names_each_regressed_metric(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setattr(regression_gate, "run_metrics", lambda *_: METRICS)
    rows, failures = evaluate(spec(), {}, None, Runs(tmp_path))
    assert [r["verdict"] for r in rows] == ["ok", "REGRESSION"]
    assert failures == ["passes.*.noise = 2.0000, needs <= 0.0100 (no noise)"]


def test_thresholds_from_other_data_are_refused(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setattr(regression_gate, "run_metrics", lambda *_: METRICS)
    _, failures = evaluate(spec(fingerprint="old"), {}, None, Runs(tmp_path))
    assert any("mqs.fingerprint is abc, but the thresholds were derived on old" in f
               for f in failures)


def test_each_run_is_made_once_per_command(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    calls: list[int] = []
    monkeypatch.setattr(regression_gate, "run_metrics",
                        lambda overrides, seed, work: calls.append(seed) or METRICS)
    runs = Runs(tmp_path)
    evaluate(spec(), {}, None, runs)
    evaluate(spec(), {}, None, runs)
    assert calls == [0]


def test_derive_with_only_leaves_the_other_runs_as_they_were(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    both = spec()
    both["derive"] = {"seeds": [0, 1], "sd_multiplier": 2.0, "min_margin": 0.01}
    both["runs"]["other"] = {"overrides": ["x=1"], "fingerprints": {"mqs.fingerprint": "old"}}
    both["checks"].append({"metric": "mqs.configured.ece", "run": "other",
                           "direction": "at_most", "why": "kept", "threshold": 0.5})
    made: list[tuple[str, ...]] = []
    monkeypatch.setattr(regression_gate, "run_metrics",
                        lambda overrides, seed, work: made.append(tuple(overrides)) or METRICS)
    derived = regression_gate.derive(both, Runs(tmp_path), {"r"})
    assert set(made) == {()}  # the "other" run was never made
    assert derived["checks"][0]["threshold"] == 0.09 and derived["checks"][2]["threshold"] == 0.5
    assert derived["runs"]["other"]["fingerprints"] == {"mqs.fingerprint": "old"}


def test_shipped_thresholds_are_derived_and_complete() -> None:
    shipped = load()
    for raw in shipped["checks"]:
        assert raw["threshold"] is not None, raw["metric"]
        assert len(raw["measured"]["values"]) == len(shipped["derive"]["seeds"])
    for run in shipped["runs"].values():
        assert all(run["fingerprints"].values())


def test_the_thresholds_live_under_conf_regression() -> None:
    assert regression_gate.THRESHOLDS.parent.name == "regression"
    assert regression_gate.THRESHOLDS.is_file()


@pytest.mark.bad_input
def test_an_old_conf_gates_path_is_refused_naming_the_new_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    old = regression_gate.THRESHOLDS.parent.parent / "gates" / "regression.yaml"
    with pytest.raises(SystemExit) as stopped:
        gate_main(["--thresholds", str(old)])
    assert stopped.value.code == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert "no such file (memeval/conf/gates/ is now memeval/conf/regression/" in message
    assert str(regression_gate.THRESHOLDS) in message and "Traceback" not in message


def gate(*args: str, cwd: Path, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "MEMEVAL_CACHE_DIR": str(cache or cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "memeval", "gate", "--out",
                           str(cwd / "gate.json"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1200)


@pytest.mark.slow
def test_the_gate_passes_on_this_code(tmp_path: Path, shared_cache: Path) -> None:
    done = gate(cwd=tmp_path, cache=shared_cache)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    report = json.loads((tmp_path / "gate.json").read_text())
    assert report["failures"] == [] and len(report["rows"]) == len(load()["checks"])
    runs = len(load()["runs"])  # a line as each run starts and ends, with the time left
    assert f"gate: run 1/{runs}: calibration (+experiment=mqs_calibration)" in done.stdout
    assert f"gate: run {runs}/{runs} took" in done.stdout and " s left" in done.stdout


@pytest.mark.slow
def test_a_worsened_mqs_constant_fails_the_gate_naming_the_metric(tmp_path: Path) -> None:
    done = gate("--only", "calibration", "--override",
                "calibration:experiment.mqs.confidence_points=5", cwd=tmp_path)
    assert done.returncode == 1
    assert "memeval gate: REGRESSION: mqs.configured." in done.stderr
    assert "REGRESSION" in done.stdout  # the table marks it too


# The quality models' checks: each on an independent test split or out of fold.
MODEL_CHECKS = {
    "conflicts": {"sections.conflicts_learned.test.any_conflict.precision",
                  "sections.conflicts_learned.test.any_conflict.recall",
                  "sections.conflicts_learned.test.temporal_newer_recall",
                  "sections.conflicts_learned.cv.any_conflict.precision",
                  "sections.conflicts_learned.cv.any_conflict.recall",
                  "sections.conflicts_learned.cv.temporal_newer_recall"},
    "calibration": {"sections.trust_score.test.trust.spearman",
                    "sections.trust_score.test.trust.brier",
                    "sections.trust_score.dev.trust_out_of_fold.spearman",
                    "sections.trust_score.dev.trust_out_of_fold.brier"},
    "attribution": {"sections.test.learned.accuracy", "sections.test.learned.macro_f1",
                    "sections.golden_style.learned.accuracy",
                    "sections.development.learned.accuracy",
                    "sections.golden.learned.accuracy", "sections.golden.rubric.accuracy"},
}


def _put(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        doc = doc.setdefault(part, {})
    doc[last] = value


def shipped_results(spec: dict[str, Any], runs: set[str]) -> dict[str, Any]:
    """metrics.json as the gated runs would write it: each figure exactly at its threshold, the
    data the thresholds were derived on."""
    doc: dict[str, Any] = {}
    for name in runs:
        for path, fingerprint in spec["runs"][name]["fingerprints"].items():
            _put(doc, path, fingerprint)
    for raw in spec["checks"]:
        if raw["run"] in runs:
            _put(doc, raw["metric"], raw["threshold"])
    return doc


def test_the_quality_models_are_gated_on_test_splits_and_out_of_fold() -> None:
    shipped = load()
    for run, metrics in MODEL_CHECKS.items():
        assert metrics <= {c["metric"] for c in shipped["checks"] if c["run"] == run}, run
        assert len(shipped["runs"][run]["fingerprints"]) >= 3  # dev files and the test split
    # the default detector on its default data; the outside sets it is not gated on are skipped
    assert shipped["runs"]["conflicts"]["overrides"] == ["+experiment=conflict_detection",
                                                         "experiment.outside_pairs=[]"]
    assert shipped["runs"]["attribution"]["overrides"] == ["+experiment=mai_calibration"]


@pytest.mark.faults
@pytest.mark.parametrize("metric", sorted(set().union(*MODEL_CHECKS.values())))
def test_a_quality_model_figure_that_drops_fails_the_gate_by_name(
        metric: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shipped = load()
    runs = set(MODEL_CHECKS)
    at_threshold = shipped_results(shipped, runs)
    monkeypatch.setattr(regression_gate, "run_metrics", lambda *_: at_threshold)
    rows, failures = evaluate(shipped, {}, runs, Runs(tmp_path))
    assert failures == [] and {r["metric"] for r in rows} >= MODEL_CHECKS["conflicts"]

    check = next(c for c in shipped["checks"] if c["metric"] == metric)
    worse = check["threshold"] + (-0.05 if check["direction"] == "at_least" else 0.05)
    dropped = shipped_results(shipped, runs)
    _put(dropped, metric, worse)
    monkeypatch.setattr(regression_gate, "run_metrics", lambda *_: dropped)
    rows, failures = evaluate(shipped, {}, runs, Runs(tmp_path / "worse"))
    assert [r["metric"] for r in rows if r["verdict"] == "REGRESSION"] == [metric]
    assert len(failures) == 1 and failures[0].startswith(f"{metric} = {worse:.4f}, needs ")


@pytest.mark.faults
def test_without_memledger_the_golden_checks_are_absent_not_failed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shipped = load()
    results = shipped_results(shipped, {"attribution"})
    results["sections"]["golden"] = {"skipped": "memledger is not installed"}
    monkeypatch.setattr(regression_gate, "run_metrics", lambda *_: results)
    rows, failures = evaluate(shipped, {}, {"attribution"}, Runs(tmp_path))
    assert failures == []
    assert {r["metric"] for r in rows if r["verdict"] == "absent"} == {
        "sections.golden.learned.accuracy", "sections.golden.rubric.accuracy"}
    assert "—" in regression_gate.table(rows)
