"""The analysis notebooks: committed without outputs, reading runs only through
memeval.results, and executing headless (nbclient) against small runs made here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

import memeval

pytestmark = pytest.mark.slow

REPO = Path(memeval.__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
# Reading a run's files by hand instead of through memeval.results.run.Run / find_runs.
FORBIDDEN = ("metrics.json", ".parquet", "read_parquet", "json.load", "results.run_dir",
             "read_metrics", "read_decisions", "read_table", ".metrics[", ".metrics.get")
BASE = ["embedder=hashing", "progress=false", "plots=false", "bootstrap=50",
        "reporting.phoenix.enabled=false"]
SWEEP = ("seed=0,1", "threshold.target_recall=0.9,0.98")  # 4 runs
SWEPT = 4


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def code_cells(nb: Any) -> list[Any]:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A three_pass run, an mqs_calibration run and a real Hydra multirun over two settings
    (seed and target_recall), so `seed` also changes every setting that follows from it."""
    from memeval.config import compose
    from memeval.runner import run_experiment

    root = tmp_path_factory.mktemp("notebook_runs")
    base = [*BASE, f"cache_dir={root / 'cache'}"]
    gate = ["+experiment=three_pass", *base, "dataset.limit=80"]
    run_experiment(compose(gate), root / "three_pass")
    run_experiment(compose(["+experiment=mqs_calibration", *base]), root / "mqs_calibration")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    subprocess.run([sys.executable, "-m", "memeval", "run", "-m", *gate, *SWEEP,
                    f"hydra.sweep.dir={root / 'sweep'}"], cwd=root, env=env, check=True,
                   capture_output=True, timeout=600)
    return {"three_pass": root / "three_pass", "mqs_calibration": root / "mqs_calibration",
            "sweep": root / "sweep"}


@pytest.fixture
def kernel_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The kernel inherits os.environ: import this checkout's memeval, draw figures inline."""
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), *([path] if path else [])]))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    return monkeypatch  # restores the environment after the test


def execute(name: str) -> Any:
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def images(nb: Any) -> int:
    return sum("image/png" in output.get("data", {})
               for cell in code_cells(nb) for output in cell.outputs)


def stream_text(nb: Any) -> str:
    return "".join(output.get("text", "") for cell in code_cells(nb) for output in cell.outputs
                   if output.output_type == "stream")


def test_at_least_three_notebooks() -> None:
    names = {path.name for path in notebook_paths()}
    assert {"three_pass_gate.ipynb", "mqs_calibration.ipynb",
            "sweep_analysis.ipynb"} <= names


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.name)
def test_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in code_cells(nb):
        assert cell.outputs == [], f"{path.name}: strip outputs before committing"
        assert cell.execution_count is None, f"{path.name}: clear execution counts"


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.name)
def test_reads_runs_only_through_the_results_api(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    source = "\n".join(cell.source for cell in code_cells(nb))
    for needle in FORBIDDEN:
        assert needle not in source, f"{path.name} reads {needle!r} by hand: use Run / find_runs"
    assert "memeval.results.run import" in source
    first = code_cells(nb)[0]
    assert "parameters" in first.metadata.get("tags", [])
    assert "os.environ" in first.source, "the parameters cell reads its input from the environment"


def test_three_pass_gate(runs: dict[str, Path], kernel_env: pytest.MonkeyPatch) -> None:
    kernel_env.setenv("MEMEVAL_RUN_DIR", str(runs["three_pass"]))
    nb = execute("three_pass_gate.ipynb")
    assert images(nb) >= 4  # per pass, funnel, scores, recall by source (+ stored MQS)
    assert "threshold at the end" in stream_text(nb)


def test_mqs_calibration(runs: dict[str, Path], kernel_env: pytest.MonkeyPatch) -> None:
    kernel_env.setenv("MEMEVAL_RUN_DIR", str(runs["mqs_calibration"]))
    nb = execute("mqs_calibration.ipynb")
    assert images(nb) >= 3  # reliability, per-record scores, MAI confusion
    assert "MAI on" in stream_text(nb)


def test_sweep_analysis(runs: dict[str, Path], kernel_env: pytest.MonkeyPatch) -> None:
    kernel_env.setenv("MEMEVAL_SWEEP_DIR", str(runs["sweep"]))
    nb = execute("sweep_analysis.ipynb")
    assert images(nb) >= 1
    text = stream_text(nb)
    assert f"{SWEPT} runs" in text
    # what was swept, not the settings that follow from the seed (scorer.seed, …)
    assert "swept settings: seed, threshold.target_recall\n" in text
    found = re.search(r"Pareto-optimal runs \((\d+) of (\d+)\): (.+)", text)
    assert found, text
    optimal, total = int(found[1]), int(found[2])
    assert 1 <= optimal <= total == SWEPT
    assert set(found[3].split(", ")) <= {str(i) for i in range(SWEPT)}


def test_finds_the_newest_run_itself(runs: dict[str, Path], tmp_path: Path,
                                     kernel_env: pytest.MonkeyPatch) -> None:
    """With no run named, a notebook opens the newest run of its kind under runs/ (the newest
    run of all is a three_pass run, which mqs_calibration.ipynb cannot read)."""
    import shutil

    kernel_env.delenv("MEMEVAL_RUN_DIR", raising=False)
    workdir = tmp_path / "project"
    for day in ("2026-01-01", "2026-01-03"):
        shutil.copytree(runs["mqs_calibration"], workdir / "runs" / day / "10-00-00")
    os.utime(workdir / "runs" / "2026-01-01" / "10-00-00" / "metrics.json", (1e9, 1e9))
    shutil.copytree(runs["three_pass"], workdir / "runs" / "2026-01-04" / "10-00-00")
    nb = nbformat.read(NOTEBOOKS / "mqs_calibration.ipynb", as_version=4)
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(workdir)}}).execute()
    assert "runs/2026-01-03/10-00-00: " in stream_text(nb)


def test_missing_run_dir_is_explained(tmp_path: Path, kernel_env: pytest.MonkeyPatch) -> None:
    from nbclient.exceptions import CellExecutionError

    kernel_env.setenv("MEMEVAL_RUN_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(CellExecutionError, match="set MEMEVAL_RUN_DIR"):
        execute("mqs_calibration.ipynb")
