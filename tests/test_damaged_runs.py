"""A damaged run directory, read by `runs`, `leaderboard` and `report`: `runs` lists it with a note
naming the file and what is wrong, `leaderboard` lists it as failed with that reason and keeps
every other run's figures, `report` exits 2 with that one line. Nothing is expanded or recursed
into first: a file deeper, larger or more self-referential than memeval writes is refused."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from memeval.cli.leaderboard import main as leaderboard_main
from memeval.cli.phoenix import settings_for
from memeval.cli.report import main as report_main
from memeval.cli.runs import main as runs_main
from memeval.components import load_components
from memeval.results import result
from memeval.results.result import UnreadableResult, load_result
from memeval.results.run import Run
from memeval.utils.bounded_yaml import YamlRefused, checked_yaml
from tests.test_cli import unwrapped

pytestmark = pytest.mark.bad_input

THREE_PASS = Path(__file__).parent / "data" / "runs" / "schema1_three_pass"
LAUGHS = "".join(  # nine levels of nine aliases each: 9**9 nodes once expanded
    [f"l0: &l0 [{', '.join(['lol'] * 9)}]\n"]
    + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10)])


def _metrics(run_dir: Path, **changes: object) -> None:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    (run_dir / "metrics.json").write_text(json.dumps({**metrics, **changes}))


DAMAGE: dict[str, tuple[Callable[[Path], object], str, str]] = {
    # run name: (the damage, the file named, what is said)
    "deep": (lambda run: (run / "metrics.json").write_text("[" * 100_000 + "]" * 100_000),
             "metrics.json", "JSON nested deeper than 64 levels"),
    "qa-string": (lambda run: _metrics(run, experiment="memory_qa", qa="no scores here"),
                  "metrics.json", "section 'qa' is a string, not an object"),
    "qa-inside": (lambda run: _metrics(run, experiment="memory_qa", qa={"by_category": 7}),
                  "metrics.json", "not a memeval run's metrics ("),
    "provenance": (lambda run: (run / "provenance.json").write_text("{not json"),
                   "provenance.json", "not a memeval run's provenance (Expecting property"),
    "laughs": (lambda run: (run / "config.yaml").write_text(LAUGHS), "config.yaml",
               "YAML anchors or aliases, which memeval never writes"),
    "decisions": (lambda run: (run / "decisions.parquet").write_bytes(b"PAR1 torn off"),
                  "decisions.parquet", "not a table memeval wrote"),
    "interpolated": (lambda run: (run / "config.yaml").write_text(
        "a: lol\n" + "".join(f"x{i}: '{'${x' + str(i - 1) + '}' if i else '${a}'}'\n"
                             for i in range(40))), "config.yaml", "holds an interpolation"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A healthy schema-1 run and a damaged copy per kind of damage, side by side."""
    load_components()
    root = tmp_path_factory.mktemp("damaged")
    shutil.copytree(THREE_PASS, root / "healthy")
    for name, (damage, _, _) in DAMAGE.items():
        shutil.copytree(THREE_PASS, root / name)
        damage(root / name)
    return root


def test_runs_notes_each_damaged_file_and_keeps_the_healthy_run(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert runs_main([str(runs)]) == 0
    printed = capsys.readouterr().out
    notes = " ".join(printed[printed.index("notes:"):].split())
    for name, (_, file, said) in DAMAGE.items():
        if file in ("metrics.json", "config.yaml"):  # what the table reads
            assert f"{name}: " in notes and f"{file}: " in notes and said in notes, name
    healthy = next(line for line in printed.splitlines() if line.startswith("healthy "))
    assert "99.1%" in healthy.split()  # its recall, as the run and the leaderboard give it


def test_the_leaderboard_lists_each_damaged_run_as_failed_with_its_file(
        runs: Path, tmp_path: Path) -> None:
    assert leaderboard_main([str(runs), "--out", str(tmp_path)]) == 0
    board = json.loads((tmp_path / "leaderboard.json").read_text())
    reasons = {Path(f["run"]).name: f["reason"] for f in board["failed"]}
    for name in ("deep", "qa-string", "qa-inside"):
        assert reasons[name].startswith(f"{runs / name / 'metrics.json'}: "), name
        assert DAMAGE[name][2] in reasons[name], name
    assert "healthy" not in reasons and board["cells"]["reference"]  # its figures stand


@pytest.mark.parametrize("name", ["deep", "qa-string", "qa-inside", "provenance"])
def test_report_on_a_damaged_run_exits_2_in_one_line_naming_the_file(
        name: str, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_main([str(runs / name), "--out", str(tmp_path)]) == 2
    _, file, said = DAMAGE[name]
    err = capsys.readouterr().err
    assert err.startswith(f"memeval report: {runs / name / file}: ") and said in unwrapped(err)
    assert unwrapped(err).count("\n") == 1 and "Traceback" not in err  # one line, wrapped


@pytest.mark.parametrize("name", ["laughs", "decisions"])
def test_a_comparison_refuses_a_damaged_file_in_one_line(
        name: str, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_main([str(runs / "healthy"), str(runs / name), "--out", str(tmp_path)]) == 2
    _, file, said = DAMAGE[name]
    err = capsys.readouterr().err
    assert err.startswith(f"memeval report: {runs / name / file}: ") and said in unwrapped(err)
    assert unwrapped(err).count("\n") == 1


def test_a_phoenix_push_reads_a_run_s_settings_with_the_same_bounds(runs: Path) -> None:
    with pytest.raises(UnreadableResult, match=r"config\.yaml: YAML anchors or aliases"):
        settings_for(runs / "laughs", None, None)


def test_a_metrics_file_larger_than_memeval_writes_is_refused_unread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(THREE_PASS, tmp_path / "run")
    monkeypatch.setattr(result, "MAX_METRICS_BYTES", 1000)
    with pytest.raises(UnreadableResult, match=r"metrics.json: .* over the 1000 a run's metrics"):
        load_result(tmp_path / "run")


@pytest.mark.parametrize("text", ["- " * 100_000 + "x\n", "a: " + "[" * 100 + "]" * 100,
                                  "a:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 80))],
                         ids=["block sequences", "flows", "block mappings"])
def test_yaml_nested_deeper_than_memeval_writes_is_refused_before_it_is_parsed(
        text: str) -> None:
    with pytest.raises(YamlRefused, match="nested too deeply"):
        checked_yaml(text)


def test_a_run_s_healthy_settings_still_read() -> None:
    run = Run.load(THREE_PASS)
    assert run.setting("embedder.name") == "hashing" and run.provenance["git_dirty"] is False
