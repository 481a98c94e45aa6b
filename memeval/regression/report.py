"""The regression gate's verdicts as CI reads them: a JSON report with a top-level `passed` and
counts, and a JUnit XML report (one testsuite per gated run, one testcase per check), so a CI
system shows which metric regressed without parsing the table.

A verdict row is the dict `regression_gate.evaluate` makes: metric, run, value, direction,
threshold, verdict, why, run_dir and error (the reason a check could not be compared).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

OK, REGRESSION, ABSENT, REFUSED, ERROR = "ok", "REGRESSION", "absent", "refused", "error"
VERDICTS = (OK, REGRESSION, ABSENT, REFUSED, ERROR)

Row = Mapping[str, Any]

# Characters XML 1.0 cannot hold, even escaped (e.g. a terminal colour code in an error message).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def shortfall(row: Row) -> str:
    """The line naming a regressed metric, its value and the threshold it missed."""
    sign = ">=" if row["direction"] == "at_least" else "<="
    return (f"{row['metric']} = {row['value']:.4f}, needs {sign} {row['threshold']:.4f} "
            f"({row['why']})")


def _counts(rows: Sequence[Row]) -> dict[str, int]:
    verdicts = Counter(row["verdict"] for row in rows)
    return {"checks": len(rows), **{verdict.lower(): verdicts[verdict] for verdict in VERDICTS}}


def report(rows: Sequence[Row], failures: Sequence[str], runs_dir: Path) -> dict[str, Any]:
    """The JSON report: `passed` is what the exit status says (no failure line of any kind)."""
    return {"passed": not failures,
            "summary": {"runs": len({row["run"] for row in rows}), **_counts(rows)},
            "runs_dir": str(runs_dir), "rows": list(rows), "failures": list(failures)}


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _tally(element: ET.Element, rows: Sequence[Row]) -> None:
    counts = _counts(rows)
    element.set("tests", str(counts["checks"]))
    element.set("failures", str(counts[REGRESSION.lower()]))
    element.set("errors", str(counts[ERROR] + counts[REFUSED]))
    element.set("skipped", str(counts[ABSENT]))


def _testcase(suite: ET.Element, row: Row) -> None:
    case = ET.SubElement(suite, "testcase", name=row["metric"],
                         classname=f"memeval.gate.{row['run']}")
    if row["verdict"] == REGRESSION:
        ET.SubElement(case, "failure", message=_xml_text(shortfall(row)), type="regression")
    elif row["verdict"] in (ERROR, REFUSED):
        ET.SubElement(case, "error", message=_xml_text(row["error"]), type=row["verdict"])
    elif row["verdict"] == ABSENT:
        ET.SubElement(case, "skipped", message="absent: the run has no such figure (an optional "
                                               "check, e.g. an extra that is not installed)")


def junit_xml(rows: Sequence[Row]) -> bytes:
    """One testsuite per gated run, in the thresholds file's order; a regression is a
    <failure>, a run that errored or was refused (other data) an <error>, an absent optional
    figure <skipped>."""
    by_run: dict[str, list[Row]] = {}
    for row in rows:
        by_run.setdefault(row["run"], []).append(row)
    suites = ET.Element("testsuites", name="memeval gate")
    _tally(suites, rows)
    for run, run_rows in by_run.items():
        suite = ET.SubElement(suites, "testsuite", name=run)
        _tally(suite, run_rows)
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="run_dir",
                      value=_xml_text(run_rows[0]["run_dir"]))
        for row in run_rows:
            _testcase(suite, row)
    ET.indent(suites)
    out = io.BytesIO()
    ET.ElementTree(suites).write(out, encoding="UTF-8", xml_declaration=True)
    return out.getvalue() + b"\n"
