"""The default configuration on the bundled set, with the real embedder (slow).

These are the write gate's published targets (substantive recall ≥ 0.97 in every pass, zero noise
stored, pre-judge filter rate ≥ 50% by pass 3), checked on both protocols. They guard against
regressions. Every default run the docs quote is also the one the committed summary
(reports/default_runs.json, tests/default_runs.py) holds, whose figures the docs are checked
against: a change of figure fails here, naming the command that writes the summary again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.config import compose
from memeval.runner import run_experiment
from tests.default_runs import RUNS, SUMMARY, committed, summary

pytestmark = pytest.mark.slow

STALE = (f"{SUMMARY.name} no longer holds what a fresh default run measures: "
         f"`python -m tests.default_runs` writes it again, then tests/test_docs_figures.py names "
         f"each doc figure to correct")
TARGETED = ("+experiment=three_pass", "+experiment=three_pass_holdout")


@pytest.fixture(scope="module")
def default_config(shared_cache: Path) -> Callable[..., DictConfig]:
    return lambda *o: compose([f"cache_dir={shared_cache}", "progress=false", "plots=false",
                               *o])


@pytest.mark.parametrize("run", TARGETED)
def test_default_gate_meets_targets(run: str, tmp_path: Path,
                                    default_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(default_config(*run.split()), tmp_path / "run")
    assert metrics["embedder"]["identity"] == "st:all-MiniLM-L6-v2:pad16"
    for p in metrics["passes"]:
        assert p["substantive_recall"] >= 0.97, (p["pass"], p["substantive_recall"])
        assert p["noise_stored"] == 0
    assert metrics["passes"][-1]["prejudge_filter_rate"] >= 0.50
    assert summary(metrics) == committed()[run], STALE


@pytest.mark.parametrize("run", [run for run in RUNS if run not in TARGETED])
def test_the_other_default_runs_the_docs_quote_are_the_committed_summary(
        run: str, tmp_path: Path, default_config: Callable[..., DictConfig]) -> None:
    assert summary(run_experiment(default_config(*run.split()), tmp_path / "run")) \
        == committed()[run], STALE


def test_the_summary_holds_every_run_it_names() -> None:
    assert tuple(committed()) == RUNS
