"""The contributing guide's scorer works as the guide says: its two titled code blocks, written
into a copy of `memeval/` as the only new files, give a scorer that `list` shows and that a
three-pass run uses, by the guide's own commands."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memeval.cli.catalogue import description

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "contributing.md"
TITLED = re.compile(r'^```(\w+) title="([^"]+)"\n(.*?)^```', re.S | re.M)
# quick settings the guide's run does not need, only the test's clock and sandbox
QUICK = ["progress=false", "plots=false", "bootstrap=200", "reporting.phoenix.endpoint=null"]


def titled_blocks() -> dict[str, str]:
    """Path named by a block's title → the block's text."""
    return {path: text for _, path, text in TITLED.findall(GUIDE.read_text())}


def scorer_name() -> str:
    (module,) = [path for path in titled_blocks() if path.endswith(".py")]
    return Path(module).stem


# The guide's option: it exists once the guide's files are written, as this test writes them, so
# a check of the docs' commands against the checkout as it is leaves it out.
GUIDE_OPTION = f"scorer={scorer_name()}"


def guide_command(*words: str) -> list[str]:
    """The arguments after `python -m memeval` of the guide's shell line holding every word."""
    for block in re.findall(r"^```bash\n(.*?)^```", GUIDE.read_text(), re.S | re.M):
        for line in block.splitlines():
            _, found, rest = line.partition("python -m memeval ")
            args = shlex.split(rest, comments=True)
            if found and all(word in args for word in words):
                return args
    raise AssertionError(f"the guide has no `python -m memeval` line with {words}")


def test_the_guide_adds_a_scorer_in_one_module_and_one_yaml() -> None:
    name = scorer_name()
    blocks = titled_blocks()
    assert sorted(blocks) == [f"memeval/conf/scorer/{name}.yaml",
                              f"memeval/engine/scorers/{name}.py"]
    assert yaml.safe_load(blocks[f"memeval/conf/scorer/{name}.yaml"])["name"] == name
    assert f'@SCORERS.register("{name}", ' in blocks[f"memeval/engine/scorers/{name}.py"]


@pytest.mark.slow
def test_the_guides_scorer_is_listed_and_runs(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "memeval", tmp_path / "memeval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "data").symlink_to(ROOT / "data")  # the bundled data, read where memeval looks
    for path, text in titled_blocks().items():
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
