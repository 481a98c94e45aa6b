"""The contributing guide's components work as the guide says. Its scorer's two titled code
blocks, written into a copy of `memeval/` as the only new files, give a scorer that `list` shows
and that a three-pass run uses; its dataset's, experiment's and system's six give a run of the
three together. Each by the guide's own commands: a component that needs a file the guide does
not name fails here."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from memeval.catalogue.options import description

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "contributing.md"
TITLED = re.compile(r'^```(\w+) title="([^"]+)"\n(.*?)^```', re.S | re.M)
# quick settings the guide's run does not need, only the test's clock and sandbox
QUICK = ["progress=false", "plots=false", "bootstrap=200", "reporting.phoenix.endpoint=null"]


def titled_blocks(*folders: str) -> dict[str, str]:
    """Path named by a block's title → the block's text, for the components in `folders` (a
    module's package folder or its YAML's config group, e.g. `scorers` and `scorer`)."""
    return {path: text for _, path, text in TITLED.findall(GUIDE.read_text())
            if Path(path).parent.name in folders}


SCORER = ("scorers", "scorer")
TOGETHER = ("data", "dataset", "experiments", "experiment", "systems", "system")


def scorer_name() -> str:
    (module,) = [path for path in titled_blocks(*SCORER) if path.endswith(".py")]
    return Path(module).stem


# The guide's option: it exists once the guide's files are written, as this test writes them, so
# a check of the docs' commands against the checkout as it is leaves it out.
GUIDE_OPTION = f"scorer={scorer_name()}"


def together_options() -> set[str]:
    """What the guide's dataset, experiment and system add: `dataset=…`, `+experiment=…` and
    `system=…`, named after their modules."""
    chosen = {"data": "dataset=", "experiments": "+experiment=", "systems": "system="}
    return {chosen[Path(path).parent.name] + Path(path).stem
            for path in titled_blocks(*TOGETHER) if path.endswith(".py")}


def guide_command(*words: str) -> list[str]:
    """The arguments after `python -m memeval` of the guide's shell line holding every word."""
    for block in re.findall(r"^```bash\n(.*?)^```", GUIDE.read_text(), re.S | re.M):
        for line in block.splitlines():
            _, found, rest = line.partition("python -m memeval ")
            args = shlex.split(rest, comments=True)
            if found and all(word in args for word in words):
                return args
    raise AssertionError(f"the guide has no `python -m memeval` line with {words}")


TOGETHER_OPTIONS = together_options()
GUIDE_RUN = guide_command(*sorted(TOGETHER_OPTIONS))  # the guide's run of the three together


def test_the_guide_adds_a_scorer_in_one_module_and_one_yaml() -> None:
    name = scorer_name()
    blocks = titled_blocks(*SCORER)
    assert sorted(blocks) == [f"memeval/conf/scorer/{name}.yaml",
                              f"memeval/engine/scorers/{name}.py"]
    assert yaml.safe_load(blocks[f"memeval/conf/scorer/{name}.yaml"])["name"] == name
    assert f'@SCORERS.register("{name}", ' in blocks[f"memeval/engine/scorers/{name}.py"]


def test_the_guide_adds_a_dataset_an_experiment_and_a_system_in_a_module_and_a_yaml_each(
        ) -> None:
    blocks = titled_blocks(*TOGETHER)
    modules = sorted(path for path in blocks if path.endswith(".py"))
    assert [Path(path).parent.as_posix() for path in modules] == [
        "memeval/data", "memeval/experiments", "memeval/systems"]
    for module, group in zip(modules, ("dataset", "experiment", "system"), strict=True):
        name = Path(module).stem
        option = yaml.safe_load(blocks[f"memeval/conf/{group}/{name}.yaml"])
        assert (option["experiment"] if group == "experiment" else option)["name"] == name
    assert len(blocks) == 6


def in_a_copy(tmp_path: Path, blocks: dict[str, str]) -> Callable[[list[str]], str]:
    """A copy of memeval with the guide's blocks as its only new files, and a function running
    `python -m memeval ARGS` on it in `tmp_path`."""
    shutil.copytree(ROOT / "memeval", tmp_path / "memeval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "data").symlink_to(ROOT / "data")  # the bundled data, read where memeval looks
    for path, text in blocks.items():
        assert not (tmp_path / path).exists(), f"{path} would replace a file memeval has"
        (tmp_path / path).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1",
           "MEMEVAL_CACHE_DIR": os.environ.get("MEMEVAL_CACHE_DIR", str(tmp_path / "cache"))}

    def memeval(args: list[str]) -> str:
        done = subprocess.run([sys.executable, "-m", "memeval", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return memeval


@pytest.mark.slow
def test_the_guides_dataset_experiment_and_system_run_together(tmp_path: Path) -> None:
    memeval = in_a_copy(tmp_path, titled_blocks(*TOGETHER))
    long = "The cache key is the sha256 of the model identity and the text, so a new model misses."
    (tmp_path / "turns.tsv").write_text("\n".join([
        f"t1\tsubstantive\twhy does it miss?\t{long}",
        "t2\tnoise\tthanks\tDone.",
        f"t3\tsubstantive\tand again?\t{long}",
        "t4\tnoise\tonly three fields",  # reported by file and line, then skipped
    ]) + "\n")
    run_dir = tmp_path / "run"
    drawn = [setting for setting in QUICK if setting != "plots=false"]  # its declared figures
    memeval([*GUIDE_RUN, *drawn, f"hydra.run.dir={run_dir}"])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["experiment"] == "one_pass"
    assert metrics["phase"] == "eval"  # its own section, written with the type it declared
    assert (run_dir / "figures" / "funnel.png").is_file()
    memeval(["report", str(run_dir)])
    assert "## Figure: funnel" in (run_dir / "report.md").read_text()
    assert metrics["system"]["name"] == "keep_long"
    assert metrics["system"]["notes"] == {"rule": "keeps turns of at least 80 chars"}
    dataset = metrics["dataset"]
    assert (dataset["name"], dataset["rows_read"], dataset["skipped"]) == ("turns", 4, 1)
    assert dataset["problems"][0].endswith("turns.tsv:4: 3 fields, expected id, label, prompt, "
                                           "response")
    (only,) = metrics["passes"]
    counted = {stage: n for stage, n in only["stage_counts"].items() if n}
    assert counted == {"length": 1, "dedup": 1, "stored": 1}
    assert only["memories"] == 1


@pytest.mark.slow
def test_the_guides_scorer_is_listed_and_runs(tmp_path: Path) -> None:
    memeval = in_a_copy(tmp_path, titled_blocks(*SCORER))
    name = scorer_name()
    listed = " ".join(memeval(guide_command("list")).split())
    first_sentence = description(tmp_path / "memeval" / "conf" / "scorer" / f"{name}.yaml")
    assert first_sentence.endswith(".")
    assert f"{name} {first_sentence}" in listed

    run_dir = tmp_path / "run"
    memeval([*guide_command(GUIDE_OPTION), *QUICK, f"hydra.run.dir={run_dir}"])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["scorer"]["name"] == name
    assert metrics["scorer"]["threshold_policy"] == "judge_quantile"
    passes = metrics["passes"]
    assert [p["pass"] for p in passes] == [1, 2, 3]
    for p in passes:
        assert p["stage_counts"]["content_score"] > 0  # the new scorer filtered entries
        assert isinstance(p["content_score_threshold"]["last"], float)  # a calibrated cut
        assert 0.5 < p["substantive_recall"] <= 1.0
        assert p["noise_stored"] == 0
