"""The trust score inside `+experiment=mqs_calibration`: the test split stays out of the fit,
bad lines are reported with file:line, and the MQS sections still print the documented figures."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig

from memeval.data.base import DatasetError
from memeval.experiments import mqs_calibration
from memeval.runner import run_experiment


def _rows(prefix: str, n: int = 12) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        good = i % 2 == 0
        rows.append({"id": f"{prefix}{i}", "confidence": 0.9 if good else 0.4,
                     "content": f"`make test` passes in src/m{i}.py" if good
                     else "Something is maybe off somewhere.",
                     "success_count": 3 if good else 0, "failure_count": 0 if good else 2,
                     "label": "trusted" if good else "untrusted"})
    return rows


def _write(path: Path, rows: list[dict[str, Any]], extra: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + extra)
    return path


def _run(fast_config: Callable[..., DictConfig], out: Path, dev: Path, test: Path,
         *overrides: str) -> dict[str, Any]:
    cfg = fast_config("+experiment=mqs_calibration", "bootstrap=20", "experiment.scenarios=null",
                      f"experiment.records={dev}", f"experiment.dev_records=[{dev}]",
                      f"experiment.test_records={test}", "experiment.folds=3", *overrides)
    found: dict[str, Any] = run_experiment(cfg, out)["trust_score"]
    return found


@pytest.mark.slow
def test_the_test_split_never_reaches_the_fit(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    dev = _write(tmp_path / "dev.jsonl", _rows("d"))
    test = _write(tmp_path / "test.jsonl", _rows("t", 8))
    fitted_on: list[int] = []
    real = mqs_calibration.fit_trust_model

    def spy(x: np.ndarray, *args: Any) -> Any:
        fitted_on.append(len(x))
        return real(x, *args)

    monkeypatch.setattr(mqs_calibration, "fit_trust_model", spy)
    first = _run(fast_config, tmp_path / "a", dev, test)
    assert fitted_on == [12] and first["test"]["records"] == 8
    flipped = [{**r, "label": "untrusted" if r["label"] == "trusted" else "trusted"}
               for r in _rows("t", 8)]
    second = _run(fast_config, tmp_path / "b", dev, _write(tmp_path / "flip.jsonl", flipped))
    assert second["weights"] == first["weights"] and second["intercept"] == first["intercept"]
    assert second["test"]["trust"]["brier"] != first["test"]["trust"]["brier"]
    assert set(first["gap"]) == {"spearman", "kendall", "brier", "ece"}


@pytest.mark.slow
@pytest.mark.bad_input
def test_a_bad_dev_line_is_counted_with_its_file_and_line(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    dev = _write(tmp_path / "dev.jsonl", _rows("d"), '{"id": "x", "content": "no label"}\n')
    test = _write(tmp_path / "test.jsonl", _rows("t", 8))
    found = _run(fast_config, tmp_path / "a", dev, test)
    assert found["dev"]["skipped"] == 1 and found["dev"]["records"] == 12
    assert any(f"{dev}:13" in problem for problem in found["dev"]["problems"])
    with pytest.raises(DatasetError, match=f"{dev}:13"):
        _run(fast_config, tmp_path / "b", dev, test, "experiment.on_error=raise")


@pytest.mark.slow
def test_the_mqs_sections_still_print_the_documented_figures(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """docs/quality.md quotes this v1 run (seed 0, 2,000 resamples); the trust score is added
    after it and changes none of its lines."""
    cfg = fast_config("+experiment=mqs_calibration", "bootstrap=2000")
    run_experiment(cfg, tmp_path / "run")
    mqs = json.loads((tmp_path / "run" / "metrics.json").read_text())["mqs"]
    shown = {m: (round(mqs["configured"][m], 3), [round(v, 3) for v in
                                                   mqs["configured"][m + "_ci95"]],
                 round(mqs["fitted_out_of_fold"][m], 3))
             for m in ("spearman", "kendall", "brier", "ece")}
    assert shown == {"spearman": (0.780, [0.675, 0.856], 0.807),
                     "kendall": (0.645, [0.551, 0.722], 0.650),
                     "brier": (0.175, [0.143, 0.207], 0.102),
                     "ece": (0.238, [0.182, 0.317], 0.222)}
