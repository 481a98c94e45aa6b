"""`python -m memeval report`: one run or two compared, HTML that parses, honest statistics."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig

from memeval.cli.report import main
from memeval.metrics.paired import mcnemar
from memeval.paths import data_path
from memeval.reporting.compare import IncomparableRuns, compare_runs
from memeval.reporting.report import write_report
from memeval.results.run import Run
from memeval.runner import run_experiment
from tests.test_cli import unwrapped

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(path: Path) -> Tags:
    parser = Tags()
    parser.feed(path.read_text())
    parser.close()
    return parser


def test_mcnemar_exact_by_hand() -> None:
    first = np.array([True] * 5 + [False] * 3)
    second = np.array([False] * 5 + [False] * 3)
    assert mcnemar(first, second) == {"kept_only_by_first": 5, "kept_only_by_second": 0,
                                      "p_value": pytest.approx(2 * 0.5**5)}
    assert mcnemar(first, first)["p_value"] == 1.0
    balanced = mcnemar(np.array([True, False]), np.array([False, True]))
    assert balanced["p_value"] == 1.0


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    from memeval.config import compose

    root = tmp_path_factory.mktemp("report")
    base = ["+experiment=three_pass", "embedder=hashing", f"cache_dir={root / 'cache'}",
            "progress=false", "bootstrap=100", "dataset.limit=80", "experiment.passes=2",
            "reporting.phoenix.enabled=false", "plots=true"]
    run_experiment(compose(base), root / "a")
    run_experiment(compose([*base, "threshold.target_recall=0.8"]), root / "b")
    other = [*base, "dataset=labeled_jsonl",
             f"dataset.path={data_path('labeled/write_gate_heldout_v1.jsonl')}"]
    run_experiment(compose(other), root / "other")
    return root / "a", root / "b", root / "other"


def test_one_run_renders_as_html_and_markdown(runs: tuple[Path, Path, Path]) -> None:
    html_path, md_path = write_report([runs[0]])
    page = parse(html_path)
    assert [t for t, _ in page.tags].count("table") >= 2
    images = [a["src"] for t, a in page.tags if t == "img"]
    assert images and all(src and src.startswith("data:image/png;base64,") for src in images)
    markdown = md_path.read_text()
    assert "## write gate: outcomes" in markdown and "](figures/funnel.png)" in markdown


def test_two_runs_compare_entry_by_entry(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, b = Run.load(runs[0]), Run.load(runs[1])
    table = compare_runs(a, b, resamples=200)
    assert list(table["pass"]) == [1, 2]
    paired = a.decisions.merge(b.decisions, on=["arm", "pass_no", "phase", "entry_id"],
                               suffixes=("_a", "_b"))
    for _, row in table.iterrows():
        mine = paired[paired["pass_no"] == row["pass"]]
        human = mine[(mine["label_a"] == "substantive") & (mine["label_source_a"] == "human")]
        delta = human["retained_b"].astype(float).mean() - human["retained_a"].astype(float).mean()
        assert row["recall_delta"] == pytest.approx(delta)
        low, high = row["recall_delta_ci95"]
        assert low <= row["recall_delta"] <= high
        only_a = int((mine["retained_a"] & ~mine["retained_b"]).sum())
        assert row["mcnemar_kept_only_by_first"] == only_a
    html_path, _ = write_report([runs[0], runs[1]], tmp_path)
    text = " ".join(parse(html_path).text)
    assert "McNemar p" in text and "recall b − a (pp) [95% CI]" in text


def test_runs_on_different_data_are_refused_unless_forced(
        runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(runs[0]), str(runs[2]), "--out", str(tmp_path)]) == 2
    assert "--force" in capsys.readouterr().err
    with pytest.raises(IncomparableRuns):
        write_report([runs[0], runs[2]], tmp_path)
    assert main([str(runs[0]), str(runs[2]), "--out", str(tmp_path), "--force"]) == 0


def test_a_folder_that_is_not_a_run_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 2
    assert "not a run directory" in unwrapped(capsys.readouterr().err)


def test_quality_runs_cannot_be_paired(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    run_experiment(fast_config("+experiment=conflict_detection", "bootstrap=20"), tmp_path / "c")
    write_report([tmp_path / "c"])  # a single quality run renders
    with pytest.raises(IncomparableRuns, match="no traces"):
        write_report([tmp_path / "c", tmp_path / "c"], tmp_path)


def _cells(markdown: str) -> set[str]:
    return {cell.strip() for line in markdown.splitlines() if line.startswith("|")
            for cell in line.strip("|").split("|")}


def test_a_gate_run_reports_what_its_terminal_printed(runs: tuple[Path, Path, Path]) -> None:
    """Title with experiment, date and time; the last pass's finding first; every component by
    name; every table the run prints, CIs included."""
    _, md_path = write_report([runs[0]])
    markdown = md_path.read_text()
    title, lead = markdown.split("\n\n")[:2]
    assert re.fullmatch(r"# memeval three_pass run, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", title)
    last = Run.load(runs[0]).result.passes[-1]
    recall = f"{100 * last.substantive_recall:.1f}% [{100 * last.substantive_recall_ci95[0]:.0f}–"
    assert lead.startswith(f"Pass 2 kept {recall}") and "before the judge" in lead
    assert "| scorer | logistic |" in markdown and "| embedder | hashing-v1-256 |" in markdown
    assert "| content-score threshold | judge_quantile: cut = " in markdown
    headings = [line[3:] for line in markdown.splitlines() if line.startswith("## ")]
    for table in ("write gate: outcomes", "write gate: where the entries ended",
                  "MQS of stored memories", "Confidence policy on stored memories",
                  "Trust score of stored memories (fitted on the development sets)"):
        assert table in headings
    assert any(h.startswith("Learned conflicts among stored memories") for h in headings)
    cells = _cells(markdown)
    assert {"recall [95% CI]", "in a conflict [95% CI]", "trust mean [95% CI]"} <= cells
    assert any(re.fullmatch(r"\d+\.\d% \[\d+–\d+\]", cell) for cell in cells)  # a rate's CI
    page = " ".join(parse(md_path.with_suffix(".html")).text)
    assert lead in page and "logistic" in page


def test_a_calibration_report_leads_with_the_trust_score_and_keeps_every_ci(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    run_experiment(fast_config("+experiment=mqs_calibration", "bootstrap=50", "plots=false",
                               "reporting.phoenix.enabled=false"), tmp_path / "run")
    printed = capsys.readouterr().out
    markdown = write_report([tmp_path / "run"])[1].read_text()
    lead = markdown.split("\n\n")[1]
    assert lead.startswith("On ") and "test records the trust score beats MQS on Brier" in lead
    cells = _cells(markdown)
    assert "none" not in cells and "dataset" not in cells and "scorer" not in cells
    assert {"labelled records", "MAI scenarios", "trust score dev records",
            "trust score test records", "system"} <= cells
    rows = [line.split("  ") for line in printed.splitlines()
            if line.split(" ")[0] in {"spearman", "kendall", "brier", "ece"}]
    shown = {cell.strip() for row in rows for cell in row if cell.strip()}
    assert len(rows) == 8 and all("[" in cell for cell in shown - {r[0] for r in rows})
    assert shown <= cells  # each printed score, CI included, is in the report's tables
    assert "MAI on " in markdown and "constants (configured → fitted)" in markdown
