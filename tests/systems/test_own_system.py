"""A system from the user's own code, unpackaged: `system=module:callable` on the command line,
`evaluate(system=obj)` from Python, and `memeval check` naming every answer outside the
protocol. The template in examples/ is the system a newcomer copies."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from memeval.__main__ import main
from memeval.api import evaluate
from memeval.registry import ConfigError

pytestmark = pytest.mark.slow  # runs commands and experiments: not the quick tier

EXAMPLES = Path(__file__).parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
from my_memory import MyIngestor, MyMemory  # noqa: E402  (the template, as a user imports it)

BROKEN = '''
from memeval.systems.base import Hit
from my_memory import MyIngestor, MyMemory

class Dropping(MyIngestor):
    def run_pass(self, items, pass_no, phase="eval"):
        for decision in super().run_pass(items, pass_no, phase):
            if decision.outcome == "length":
                decision.outcome = "dropped"
            yield decision

class Broken(MyMemory):
    def ingestor(self, state_dir):
        return Dropping(state_dir, self.min_words)
    def search(self, query, k):
        return [*super().search(query, k - 1), Hit("never-given", 2.0)]
    def score_records(self, records):
        return [150.0 for _ in records]
    def detect_conflict(self, first, second):
        return "clash"

def build():
    return Broken()
'''


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def memeval(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> Done:
    """A command as a user types it, from `tmp_path`, in this process (examples/ on the path)."""
    code = main([*args, "embedder=hashing", f"cache_dir={tmp_path / 'cache'}"])
    out = capsys.readouterr()
    return Done(code, out.out, out.err)


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # where a user's own module sits
    monkeypatch.delenv("PHOENIX_COLLECTOR_ENDPOINT", raising=False)


def test_a_system_written_from_the_docs_alone_passes_the_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """examples/team_memory.py: written by a developer who read only the docs."""
    checked = memeval(tmp_path, capsys, "check", "system=team_memory:build")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "freeze_learning  ok (40 checked)" in checked.stdout
    assert "feedback         ok (1 checked)" in checked.stdout


def test_the_template_passes_the_check_and_runs_from_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checked = memeval(tmp_path, capsys, "check", "system=my_memory:build")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "ingest           ok (40 checked)" in checked.stdout
    assert "feedback         not declared" in checked.stdout
    ran = memeval(tmp_path, capsys, "run", "+experiment=three_pass", "system=my_memory:build",
                  "+system.settings.min_words=12", "progress=false", "plots=false",
                  "reporting.phoenix.endpoint=null", f"hydra.run.dir={tmp_path / 'run'}")
    assert ran.returncode == 0, ran.stderr
    assert "my-memory, gate: fewer than 12 words: dropped" in ran.stdout


def test_the_template_joins_compare_systems_by_its_module_and_callable(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`+system@experiment.systems.NAME=module:callable`, the short form systems.md gives."""
    ran = memeval(tmp_path, capsys, "run", "+experiment=compare_systems",
                  "~system@experiment.systems.memledger",
                  "+system@experiment.systems.mine=my_memory:build", "dataset=bundled",
                  "experiment.passes=1",
                  "experiment.pairs=null", "experiment.records=null", "experiment.queries=null",
                  "experiment.corpus=null",
                  "progress=false", "plots=false", "reporting.phoenix.endpoint=null",
                  f"hydra.run.dir={tmp_path / 'run'}")
    assert ran.returncode == 0, ran.stderr
    assert "\nmine       100.0% [100–100]  80 " in ran.stdout  # the template's row
    assert "mine, gate: fewer than 8 words: dropped" in ran.stdout


def test_the_check_names_every_answer_outside_the_protocol(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken_memory.py").write_text(BROKEN)
    done = memeval(tmp_path, capsys, "check", "system=broken_memory:build")
    assert done.returncode == 1, done.stdout + done.stderr
    out = " ".join(done.stdout.split())  # wrapped to the terminal: read unwrapped
    assert "with outcome 'dropped', which is not one of prefilter" in out
    assert "with memory id 'never-given', which it was not given" in out
    assert "score 150.0 for record 'r001', not a number in [0, 100]" in out
    assert "with conflict type 'clash'" in out


def test_evaluate_takes_a_system_object(tmp_path: Path) -> None:
    run = evaluate("three_pass", ["embedder=hashing", "dataset.limit=40", "progress=false",
                                  "plots=false", f"cache_dir={tmp_path / 'cache'}",
                                  "reporting.phoenix.endpoint=null"],
                   run_dir=tmp_path / "run", system=MyMemory(min_words=5))
    assert run.setting("system.name") == "factory"  # memeval.api's, holding the object
    assert run.result.system is not None and run.result.system.name == "my-memory"
    assert run.result.passes[-1].substantive_recall is not None


def test_an_object_that_is_no_system_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="returned MyIngestor without name, capabilities"):
        evaluate("three_pass", ["embedder=hashing"], run_dir=tmp_path / "run",
                 system=MyIngestor(tmp_path, 3))
