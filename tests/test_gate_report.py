"""The regression gate's reports for CI: the JSON's top-level verdict and counts, the JUnit XML
(parsed back), a run that fails, and run directories that outlive the gate."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from memeval.cli.regression_gate import main as gate_main
from memeval.regression import gate as regression_gate
from memeval.regression.gate import Runs, evaluate, fresh_runs_dir
from memeval.regression.report import junit_xml, report
from tests.test_regression_gate import METRICS, gate, spec


def row(metric: str, run: str, verdict: str, value: float | None = 0.5,
        error: str | None = None) -> dict[str, Any]:
    return {"metric": metric, "run": run, "value": value, "direction": "at_least",
            "threshold": 0.6, "verdict": verdict, "why": "must rank", "run_dir": f"/r/{run}",
            "error": error}


ROWS = [row("a.ok", "one", "ok", 0.7), row("a.low", "one", "REGRESSION"),
        row("a.optional", "one", "absent", None),
        row("b.x", "two", "error", None, "the run failed: RuntimeError: boom \x1b[31m"),
        row("c.y", "three", "refused", 0.7, "d.fingerprint is new, but the thresholds were "
                                             "derived on old")]


def test_the_json_has_a_top_level_verdict_and_counts() -> None:
    doc = report(ROWS, ["a.low = 0.5000, needs >= 0.6000 (must rank)"], Path("/r"))
    assert doc["passed"] is False
    assert doc["summary"] == {"runs": 3, "checks": 5, "ok": 1, "regression": 1, "absent": 1,
                              "refused": 1, "error": 1}
    assert doc["rows"] == ROWS and doc["runs_dir"] == "/r"
    assert report(ROWS[:1], [], Path("/r"))["passed"] is True


def test_the_junit_report_has_a_suite_per_run_and_a_case_per_check() -> None:
    root = ET.fromstring(junit_xml(ROWS))
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "5", "failures": "1", "errors": "2", "skipped": "1"}
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert list(suites) == ["one", "two", "three"]
    one = suites["one"]
    assert [case.get("name") for case in one.iter("testcase")] == ["a.ok", "a.low", "a.optional"]
    assert one.find("properties/property[@name='run_dir']").get("value") == "/r/one"
    assert one.find("testcase[@name='a.ok']/*") is None
    failure = one.find("testcase[@name='a.low']/failure")
    assert failure.get("message") == "a.low = 0.5000, needs >= 0.6000 (must rank)"
    assert one.find("testcase[@name='a.optional']/skipped") is not None
    error = suites["two"].find("testcase/error")
    assert error.get("type") == "error" and error.get("message").startswith("the run failed")
    assert "\x1b" not in error.get("message")  # XML 1.0 cannot hold it: replaced
    assert suites["three"].find("testcase/error").get("type") == "refused"


def test_a_run_that_fails_errors_its_checks_and_the_others_still_go(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    two = spec()
    two["runs"]["broken"] = {"overrides": ["x=1"]}
    two["checks"].append({"metric": "mqs.configured.ece", "run": "broken",
                          "direction": "at_most", "why": "w", "threshold": 0.1})

    def run_metrics(overrides: list[str], seed: int, run_dir: Path) -> Any:
        if overrides:
            raise RuntimeError("judge unreachable")
        return METRICS

    monkeypatch.setattr(regression_gate, "run_metrics", run_metrics)
    rows, failures = evaluate(two, {}, None, Runs(tmp_path))
    assert [r["verdict"] for r in rows] == ["ok", "REGRESSION", "error"]
    assert rows[2]["error"].startswith("the run failed: RuntimeError: judge unreachable")
    assert rows[2]["run_dir"] == str(tmp_path / "broken-seed0")
    assert failures[-1].startswith("broken: the run failed: RuntimeError")


def test_a_run_on_other_data_is_refused_not_compared(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setattr(regression_gate, "run_metrics", lambda *_: METRICS)
    rows, failures = evaluate(spec(fingerprint="old"), {}, None, Runs(tmp_path))
    assert {r["verdict"] for r in rows} == {"refused"} and len(failures) == 1
    assert "derived on old" in rows[0]["error"]


def test_the_runs_directory_is_replaced_only_if_the_gate_made_it(tmp_path: Path) -> None:
    runs = tmp_path / "gate-runs"
    fresh_runs_dir(runs)
    (runs / "calibration-seed0").mkdir()
    fresh_runs_dir(runs)
    assert [p.name for p in runs.iterdir()] == [regression_gate.RUNS_MARKER]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="did not make"):
        fresh_runs_dir(mine)
    assert (mine / "notes.txt").read_text() == "keep"


def test_the_command_writes_both_reports_and_its_exit_status_agrees(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    thresholds = tmp_path / "regression.yaml"
    thresholds.write_text(json.dumps(spec()))
    monkeypatch.setattr(regression_gate, "run_metrics", lambda *_: METRICS)
    out, junit = tmp_path / "out" / "gate.json", tmp_path / "out" / "gate.xml"
    assert gate_main(["--thresholds", str(thresholds), "--out", str(out),
                                 "--junit-xml", str(junit)]) == 1
    doc = json.loads(out.read_text())
    assert doc["passed"] is False and doc["summary"]["regression"] == 1
    assert doc["runs_dir"] == str(tmp_path / "out" / "gate-runs")
    assert ET.parse(junit).getroot().get("failures") == "1"
    assert f"runs kept in {tmp_path / 'out' / 'gate-runs'}" in capsys.readouterr().out

    passing = spec()
    passing["checks"][1]["threshold"] = 2
    thresholds.write_text(json.dumps(passing))
    assert gate_main(["--thresholds", str(thresholds), "--out", str(out),
                                 "--junit-xml", str(junit)]) == 0
    assert json.loads(out.read_text())["passed"] is True
    assert ET.parse(junit).getroot().get("failures") == "0"


@pytest.mark.slow
def test_the_real_gate_reports_a_regression_to_ci_and_keeps_its_runs(tmp_path: Path) -> None:
    """Run twice into the same place: the second replaces the first's runs, and every run
    directory the gate prints exists after it."""
    for expected, extra in ((0, []), (1, ["--override",
                                          "calibration:experiment.mqs.confidence_points=5"])):
        done = gate("--only", "calibration", "--junit-xml", str(tmp_path / "gate.xml"), *extra,
                    cwd=tmp_path)
        assert done.returncode == expected, done.stdout + done.stderr[-3000:]
        printed = re.findall(r"^run directory: (.+)$", done.stdout, re.M)
        assert printed and all(Path(p, "metrics.json").is_file() for p in printed)
        assert all(Path(p).parent == tmp_path / "gate-runs" for p in printed)
    doc = json.loads((tmp_path / "gate.json").read_text())
    assert doc["passed"] is False and doc["summary"]["regression"] >= 1
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite[@name='calibration']")
    failures = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert failures and all(re.search(r" = \d\.\d{4}, needs [<>]= \d\.\d{4} ",
                                      case.find("failure").get("message")) for case in failures)
    assert suite.get("tests") == str(doc["summary"]["checks"])
