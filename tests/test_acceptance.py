"""The default configuration on the bundled set, with the real embedder (slow).

These are the write gate's published targets (substantive recall ≥ 0.97 in every pass, zero noise
stored, pre-judge filter rate ≥ 50% by pass 3), checked on both protocols. They guard against
regressions; the figures in docs/results.md come from the same runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.config import compose
from memeval.runner import run_experiment

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def default_config(shared_cache: Path) -> Callable[..., DictConfig]:
    return lambda *o: compose([f"cache_dir={shared_cache}", "progress=false", *o])


@pytest.mark.parametrize("experiment", ["three_pass", "three_pass_holdout"])
def test_default_gate_meets_targets(experiment: str, tmp_path: Path,
                                    default_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(default_config(f"+experiment={experiment}"), tmp_path / "run")
    assert metrics["embedder"]["identity"] == "st:all-MiniLM-L6-v2:pad16"
    for p in metrics["passes"]:
        assert p["substantive_recall"] >= 0.97, (p["pass"], p["substantive_recall"])
        assert p["noise_stored"] == 0
    assert metrics["passes"][-1]["prejudge_filter_rate"] >= 0.50
