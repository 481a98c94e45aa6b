"""`python -m memeval runs`: every run under a folder as one row, only the settings that differ as
columns, each experiment's headline figures; a sortable self-contained HTML page; a damaged run
listed with a note, an empty folder a clear exit 1."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from memeval.cli.runs import default_folder, main
from memeval.reporting.table import WIDTH, clipped, column_blocks
from memeval.runner import run_experiment
from tests.test_cli import unwrapped

pytestmark = pytest.mark.slow  # runs whole experiments: not the quick tier

TARGET = "threshold.target_recall"
COMMON = ["+experiment=three_pass", "embedder=hashing", "dataset.limit=40"]
SINGLE = "2026-01-01/10-00-00"  # where `run` puts a run, and where a multirun puts its jobs
SWEEP = "multirun/2026-01-01/11-00-00"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tiny real runs that differ in one setting, laid out as `run` and a multirun lay them
    out (without Hydra's overrides: `with_overrides` adds them), and a copy of the second whose
    metrics.json is damaged."""
    from memeval.config import compose

    root = tmp_path_factory.mktemp("runs")
    base = [*COMMON, f"cache_dir={root / 'cache'}", "progress=false", "plots=false",
            "bootstrap=50", "experiment.passes=2", "reporting.phoenix.enabled=false"]
    run_experiment(compose(base), root / "all" / SINGLE)
    run_experiment(compose([*base, f"{TARGET}=0.9"]), root / "all" / SWEEP / "0")
    damaged = root / "all" / SWEEP / "1"
    shutil.copytree(root / "all" / SWEEP / "0", damaged)
    (damaged / "metrics.json").write_text('{"experiment": "three_pass", "passes": [')
    return root / "all"


def with_overrides(runs: Path, tmp_path: Path) -> Path:
    """A copy of the runs with the overrides each job was given, as Hydra records them."""
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    for job, extra in ((SINGLE, []), (f"{SWEEP}/0", [f"{TARGET}=0.9"]),
                       (f"{SWEEP}/1", [f"{TARGET}=0.9"])):
        (copy / job / ".hydra").mkdir()
        (copy / job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump([*COMMON, *extra]))
    return copy


def header_of(printed: str) -> list[str]:
    """The table's columns, over every block it was split into (each block repeats `run`)."""
    blocks = [re.split(r" {2,}", line.strip()) for line in printed.splitlines()
              if line.startswith("run  ")]
    return [blocks[0][0], *(name for block in blocks for name in block[1:])]


def settings_of(printed: str) -> dict[str, str]:
    """Each run's line under "settings that set these runs apart:", unwrapped."""
    part = printed.partition("settings that set these runs apart:")[2].partition("\n\n")[0]
    lines = " ".join(part.split()).replace(" 20", "\n20").replace(" multirun/", "\nmultirun/")
    return dict(line.split(": ", 1) for line in lines.splitlines() if ": " in line)


def test_the_figures_name_the_run_and_the_differing_setting_follows_it(
        runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(with_overrides(runs, tmp_path))]) == 0
    printed = capsys.readouterr().out
    header = header_of(printed)
    assert header == ["run", "date", "system", "embedder", "read", "recall", "noise stored",
                      "pre-judge"]  # three_pass's headline figures, no setting among them
    assert "three_pass (3 runs)" in printed
    same = next(line for line in printed.splitlines() if line.startswith("same in every run"))
    assert "embedder=hashing" in same and "dataset.limit=40" in same and TARGET not in same
    single = next(line for line in printed.splitlines() if line.startswith(SINGLE))
    assert {"reference", "hashing-v1-256", "write_gate_v1"} <= set(single.split())
    assert re.search(r" \d+\.\d%", single)  # a rate as a percentage, as `run` prints it
    apart = settings_of(printed)
    assert apart[SINGLE] == "target_recall=0.995" and apart[f"{SWEEP}/0"] == "target_recall=0.9"
    assert "3 runs under" in printed
    assert all(len(line) <= WIDTH for line in printed.splitlines())


def test_without_overrides_the_resolved_configs_are_diffed(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(runs)]) == 0
    printed = capsys.readouterr().out
    assert settings_of(printed)[f"{SWEEP}/0"] == "target_recall=0.9"
    assert "same in every run: the rest of config.yaml" in printed


def test_a_damaged_metrics_file_is_a_row_with_a_note(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(runs)]) == 0
    printed = capsys.readouterr().out
    assert "Traceback" not in printed
    assert "three_pass (3 runs)" in printed  # its experiment, from its config
    assert [line for line in printed.splitlines() if line.startswith(f"{SWEEP}/1")]
    notes = " ".join(printed[printed.index("notes:"):].split())  # as read, unwrapped
    assert f"{SWEEP}/1: metrics.json: not a memeval run's metrics (JSONDecodeError" in notes


def test_unreadable_settings_are_a_note_and_the_other_runs_keep_theirs(
        runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = with_overrides(runs, tmp_path)
    (copy / SINGLE / ".hydra" / "overrides.yaml").write_text("- 'embedder=[unclosed'\n")
    assert main([str(copy)]) == 0
    printed = capsys.readouterr().out
    notes = " ".join(printed[printed.index("notes:"):].split())
    assert f"{SINGLE}: settings not read (OverrideParseException" in notes
    assert "recall" in header_of(printed)  # its figures are still shown


def test_the_html_page_sorts_folds_settings_and_stands_alone(
        runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "out" / "runs.html"
    assert main([str(with_overrides(runs, tmp_path)), "--html", str(page)]) == 0
    assert f"wrote {page}" in capsys.readouterr().out
    tags = Tags()
    tags.feed(page.read_text(encoding="utf-8"))
    text = "".join(tags.text)
    assert "target_recall=0.9" in text and [t for t, _ in tags.tags if t == "details"]
    assert {"run (its report)", "system", "embedder", "recall", "pre-judge"} <= {
        piece.strip() for piece in tags.text}
    numbers = [attrs["data-v"] for tag, attrs in tags.tags
               if tag == "td" and attrs.get("class") == "fig" and attrs.get("data-v")]
    assert numbers and all(float(str(v)) >= 0 for v in numbers)  # sortable as numbers
    script = "".join(tags.scripts)
    assert 'addEventListener("click"' in script and ".sort(" in script
    assert not [attrs for tag, attrs in tags.tags if attrs.get("src")]  # nothing fetched
    assert "JSONDecodeError" in text


def test_an_experiment_filter_and_an_empty_folder(
        runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(runs), "--experiment", "three_pass"]) == 0
    assert "3 runs under" in capsys.readouterr().out
    assert main([str(runs), "--experiment", "mqs_calibration"]) == 1
    assert "no runs of experiment 'mqs_calibration'" in unwrapped(capsys.readouterr().err)
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == 1
    assert "no runs under" in unwrapped(capsys.readouterr().err)
    assert main([str(tmp_path / "missing")]) == 1
    assert "not a directory" in unwrapped(capsys.readouterr().err)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "1 when FOLDER holds no run" in capsys.readouterr().out


def test_the_default_folder_is_where_runs_are_written() -> None:
    assert default_folder() == Path("runs")


def test_long_values_and_wide_tables_fit_the_terminal() -> None:
    assert clipped("runs/multirun/2026-01-01/11-00-00/17", 20) == "runs/multi…-00-00/17"
    assert len(clipped("x" * 50, 20)) == 20 and clipped("short", 20) == "short"
    header = ["run", *(f"setting{n}" for n in range(12))]
    rows = [[f"job{j}", *("v" * 9 for _ in range(12))] for j in range(3)]
    blocks = column_blocks(header, rows).split("\n\n")
    assert len(blocks) == 2 and all(b.startswith("run ") for b in blocks)
    assert all(len(line) <= WIDTH for line in "\n".join(blocks).splitlines())
    assert sum(b.splitlines()[0].count("setting") for b in blocks) == 12


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def test_a_named_run_is_called_by_its_name_everywhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memeval.config import compose
    from memeval.reporting.report import write_report

    run_dir = tmp_path / "runs" / "2026-01-01" / "12-00-00"
    run_experiment(compose([*COMMON, f"cache_dir={tmp_path / 'cache'}", "progress=false",
                            "plots=false", "bootstrap=30", "experiment.passes=1",
                            "reporting.phoenix.enabled=false", "run_name=minilm baseline",
                            "tags=[nightly,gate]"]), run_dir)
    capsys.readouterr()
    assert main([str(tmp_path / "runs"), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["runs"]
    assert (row["name"], row["tags"]) == ("minilm baseline", ["nightly", "gate"])
    assert main([str(tmp_path / "runs")]) == 0
    assert "minilm baseline" in capsys.readouterr().out
    _, markdown = write_report([run_dir], tmp_path / "report")
    assert "'minilm baseline': memeval three_pass run" in markdown.read_text()


@pytest.mark.parametrize("name", ["''", "'   '", "x" * 61])
def test_a_run_name_is_one_short_line(name: str) -> None:
    from memeval.config import compose, validate
    from memeval.registry import ConfigError

    with pytest.raises(ConfigError, match="run_name must be one line of 1 to 60 characters"):
        validate(compose(["+experiment=three_pass", f"run_name={name}"]))
