"""memeval's MQS and MAI against memledger's own code, on the bundled sets and memledger's golden
set: the agreement figures docs/systems.md quotes, and the cause of every disagreement."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memeval.cli.conformance import main
from memeval.paths import data_path
from memeval.systems.conformance import RECORDS, SCENARIOS, conformance

pytest.importorskip("memledger")


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return conformance(data_path(RECORDS), data_path(SCENARIOS))


def figures(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(row["agree"], row["total"]) for row in rows]


def test_mqs_agrees_but_for_declared_zero_confidence(report: dict[str, Any]) -> None:
    default, zero_missing, api_own, api_memeval = report["mqs"]
    assert figures(report["mqs"]) == [(76, 80), (80, 80), (55, 80), (52, 80)]
    # memeval keeps a declared 0.0; memledger reads `0.0 or 0.5`, directly or via r029
    assert {d["id"] for d in default["disagreements"]} == {"r013", "r029", "r073", "r077"}
    assert all("reads `0.0 or 0.5` as 0.5" in d["why"] for d in default["disagreements"])
    # zero_confidence_is_missing reproduces memledger's compute_mqs on every record
    assert zero_missing["disagreements"] == []
    # its API stores no conflicts and scores declared, not effective, confidence
    assert all(d["why"].startswith(("its ", "search scores declared"))
               for d in api_own["disagreements"])
    assert not any("unexplained" in d["why"] for d in api_memeval["disagreements"])


def test_mai_reproduces_memledgers_verdicts(report: dict[str, Any]) -> None:
    assert figures(report["mai"]) == [(22, 30), (22, 30), (30, 30), (20, 41), (20, 41), (40, 41)]
    ledger_own = report["mai"][0]["disagreements"]
    assert sorted(d["id"] for d in ledger_own) == [
        "p01", "p02", "p03", "p04", "p05", "p06", "p08", "p10"]
    assert all(d["a"] == "well_attributed" for d in ledger_own)
    [only] = report["mai"][5]["disagreements"]
    assert only["id"] == "mai-028" and "declared 0.0" in only["why"]


@pytest.mark.slow
def test_the_command_prints_the_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert figures(printed["mai"])[0] == (22, 30)
    assert main([]) == 0
    text = capsys.readouterr().out
    assert "memledger evaluator vs ground truth (memledger's 30)" in text and "22/30" in text
    assert max(len(line) for line in text.splitlines()) <= 100  # causes wrap in their column
    assert "r010      39" in text and "not the weakest link" in " ".join(text.split())
