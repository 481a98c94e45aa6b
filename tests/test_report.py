"""`python -m memeval report`: one run or two compared, HTML that parses, honest statistics."""

from __future__ import annotations

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
    assert "## Passes" in markdown and "](figures/funnel.png)" in markdown


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
    assert "not a run directory" in capsys.readouterr().err


def test_quality_runs_cannot_be_paired(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    run_experiment(fast_config("+experiment=conflict_detection", "bootstrap=20"), tmp_path / "c")
    write_report([tmp_path / "c"])  # a single quality run renders
    with pytest.raises(IncomparableRuns, match="no traces"):
        write_report([tmp_path / "c", tmp_path / "c"], tmp_path)
