"""`python -m memeval …` as a user runs it: subcommand stripped before Hydra, clear exits."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memeval.cli.run import _discard_if_unused

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier

ROOT = Path(__file__).resolve().parents[1]


def unwrapped(printed: str) -> str:
    """Messages as written, before they were wrapped to the terminal's width."""
    return printed.replace("\n  ", " ")


def memeval(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMEVAL_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memeval", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_run_writes_the_chosen_run_directory(tmp_path: Path) -> None:
    out = tmp_path / "my-run"
    done = memeval("run", "+experiment=three_pass", "embedder=hashing", "dataset.limit=50",
                   "plots=false", f"hydra.run.dir={out}", cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert "recall [95% CI]" in done.stdout and f"run directory: {out}" in done.stdout
    said = unwrapped(done.stdout)
    assert "next: `python -m memeval report RUN_DIR` with the directory above" in said
    assert "found: Pass 3 kept " in said  # the finding the report opens with
    metrics = json.loads((out / "metrics.json").read_text())
    assert [p["pass"] for p in metrics["passes"]] == [1, 2, 3]
    assert (out / "decisions.parquet").is_file() and (out / ".hydra" / "config.yaml").is_file()


def test_configuration_error_exits_2_with_the_fix(tmp_path: Path) -> None:
    done = memeval("run", "+experiment=three_pass", "embedder.name=minilmm",
                   f"hydra.run.dir={tmp_path / 'r'}", cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 2
    assert "unknown embedder 'minilmm'" in done.stderr


def test_no_experiment_exits_2_naming_the_experiments(tmp_path: Path) -> None:
    done = memeval("run", f"hydra.run.dir={tmp_path / 'r'}", cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 2
    assert "+experiment=NAME" in done.stderr and "three_pass_holdout" in done.stderr


@pytest.mark.parametrize(("args", "code"), [((), 2), (("--help",), 0), (("frobnicate",), 2)])
def test_usage(args: tuple[str, ...], code: int, tmp_path: Path) -> None:
    done = memeval(*args, cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == code
    assert "usage: python -m memeval" in done.stdout + done.stderr


def test_run_help_lists_every_experiment_and_group_option_hydra_composes(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`run --help` reads the YAML file names instead of composing every option (Hydra's help,
    seconds); it must still name what Hydra would compose."""
    from memeval.__main__ import main
    from memeval.config import config_groups

    assert main(["run", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "usage: python -m memeval run +experiment=NAME" in shown and "--hydra-help" in shown
    for group, options in config_groups().items():
        assert (group == "experiment" or f" {group} " in shown) and all(
            option in shown for option in options), group


def test_a_home_relative_path_works_as_the_docs_write_it(tmp_path: Path) -> None:
    """Hydra's grammar refuses an unquoted `~`; docs/datasets.md's command passes it unquoted."""
    project = tmp_path / "home" / ".claude" / "projects" / "my-project"
    project.mkdir(parents=True)
    session = ROOT / "data" / "claude_code" / "vsla" / "069508a5-1193-487c-a9b5-a6f5f3ae4f98.jsonl"
    shutil.copy(session, project)
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "memeval", "run", "+experiment=three_pass_mixed",
         "dataset.corpus=claude_code", "dataset.corpus_path=~/.claude/projects/my-project",
         "embedder=hashing", "dataset.labeled_rows=40", "plots=false",
         "reporting.phoenix.enabled=false", f"hydra.run.dir={out}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HOME": str(tmp_path / "home"), "MEMEVAL_CACHE_DIR": str(tmp_path / "c"),
             "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    dataset = json.loads((out / "metrics.json").read_text())["dataset"]
    assert str(project) in dataset["source"] and dataset["stats"]["corpus_rows"] > 0


@pytest.mark.bad_input
@pytest.mark.parametrize(("override", "message"), [
    ("embedder=minilmm", "unknown embedder 'minilmm'; did you mean 'minilm'? (known: hashing, "
                         "minilm, minilm_onnx, minilm_onnx_int8, openai_http)"),
    ("+experiment=three_pas", "unknown experiment 'three_pas'; did you mean 'three_pass'?"),
    ("scorer=logistic,knn_margn", "unknown scorer 'knn_margn'; did you mean 'knn_margin'?"),
])
def test_a_misspelt_group_option_exits_2_naming_the_option_meant(
        override: str, message: str, tmp_path: Path) -> None:
    done = memeval("run", "+experiment=three_pass", override, f"hydra.run.dir={tmp_path / 'r'}",
                   cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 2, done.stderr[-2000:]
    assert unwrapped(done.stderr).startswith(f"memeval: configuration error: {message}")
    assert unwrapped(done.stderr).count("\n") == 1  # one line, no traceback
    assert not (tmp_path / "r").exists()  # refused before Hydra made a run directory


@pytest.mark.bad_input
@pytest.mark.parametrize(("overrides", "message"), [
    (["dataset=labeled_jsonl"], "memeval: configuration error: dataset.path not set: add "
                                "dataset.path=… to the command\n"),
    (["dataset=labeled_jsonl", "dataset.path=missing.jsonl"],
     "memeval: labelled dataset file not found: missing.jsonl (set dataset.path=FILE)\n"),
    (["bootstrap=0"], "memeval: configuration error: bootstrap must be an integer in "
                      "[20, 100000], got 0\n"),
    (["gate.write.dedup_threshold=1.5"],
     "memeval: configuration error: gate.write.dedup_threshold must be in [-1, 1], got 1.5\n"),
    (["scorer.threshold.target_recall=0.9"],
     "memeval: configuration error: scorer.threshold.target_recall is now "
     "threshold.target_recall: use threshold.target_recall=0.9\n"),
])
def test_a_user_error_is_one_message_and_leaves_no_run_directory(
        overrides: list[str], message: str, tmp_path: Path) -> None:
    done = memeval("run", "+experiment=three_pass", "embedder=hashing", *overrides,
                   cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 2
    assert unwrapped(done.stderr) == message  # no traceback
    assert not (tmp_path / "runs").exists()  # Hydra's runs/DATE/TIME removed, runs/ with it


def test_an_unused_run_directory_is_removed_and_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "earlier").mkdir()  # not emptied by this run: kept
    for name, extra in (("unused", None), ("holds-results", "metrics.json"),
                        ("holds-more-hydra", ".hydra/other.yaml")):
        run_dir = tmp_path / "runs" / "2026-01-01" / name
        (run_dir / ".hydra").mkdir(parents=True)
        for file in (".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml",
                     "__main__.log", *([extra] if extra else [])):
            (run_dir / file).write_text("x")
        _discard_if_unused(run_dir, "__main__.log")
        assert run_dir.exists() == bool(extra), name
    assert (tmp_path / "runs" / "2026-01-01").is_dir()  # still holds the two kept ones


def test_the_working_directory_is_never_removed(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".hydra").mkdir()
    (tmp_path / "__main__.log").write_text("")
    monkeypatch.chdir(tmp_path)
    _discard_if_unused(tmp_path, "__main__.log")  # hydra.run.dir=.
    assert (tmp_path / ".hydra").is_dir()


def test_emptied_parents_are_removed_up_to_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "runs" / "2026-01-01" / "10-00-00"
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / "__main__.log").write_text("")
    _discard_if_unused(run_dir, "__main__.log")
    assert list(tmp_path.iterdir()) == []


def test_version() -> None:
    from importlib.metadata import version

    assert version("memeval")
    done = subprocess.run([sys.executable, "-m", "memeval", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == f"memeval {version('memeval')}\n"


def test_a_user_error_is_printed_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    from memeval.data.base import DatasetError
    from memeval.user_errors import report_user_error

    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    report_user_error(DatasetError(f"rows.jsonl:3: unknown label '{token}'"))
    err = capsys.readouterr().err
    assert token not in err and err.startswith("memeval: rows.jsonl:3: unknown label")


# What makes a `--help` take seconds: none of it is needed to print one.
HEAVY = ("numpy", "pandas", "scipy", "sklearn", "torch", "pyarrow", "matplotlib", "httpx", "nltk",
         "sentence_transformers", "datasets", "phoenix", "ray")
HELP_PROBE = """
import contextlib, io, json, sys
from memeval.__main__ import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        code = main(sys.argv[1:])
    except SystemExit as done:
        code = done.code
print(json.dumps({"code": code, "printed": out.getvalue()[:40],
                  "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))}))
"""


def _help_commands() -> list[tuple[str, ...]]:
    from memeval.cli.commands import COMMANDS

    nested = {"cache": ("info", "clear", "export", "import"), "phoenix": ("serve", "push"),
              "serve": ("memoryd", "embeddings")}
    return [(name, *sub) for name in COMMANDS
            for sub in [(), *((s,) for s in nested.get(name, ()))]]


@pytest.mark.parametrize("command", _help_commands(), ids=" ".join)
def test_a_commands_help_loads_no_heavy_library(command: tuple[str, ...], tmp_path: Path) -> None:
    """`--help` answers in a fraction of a second (docs/operations.md) because it parses its
    arguments before importing the work: this holds for every command and subcommand."""
    done = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{HELP_PROBE}", *command, "--help"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    shown = json.loads(done.stdout.splitlines()[-1])
    assert shown["code"] == 0 and shown["printed"].startswith("usage: python -m memeval"), shown
    assert shown["heavy"] == [], f"{' '.join(command)} --help imports {shown['heavy']}"
