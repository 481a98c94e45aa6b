"""Every line a run prints fits a WIDTH-column terminal, and the figures are all still there."""

from __future__ import annotations

import json
import logging
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from memeval.entry import Entry
from memeval.experiments.conflict_detection import learned_blocks
from memeval.log_redaction import OwnInfoOnly, Wrapped
from memeval.reporting.systems_table import systems_summary
from memeval.reporting.table import WIDTH, ci_suffix, pass_table, threshold_footer
from memeval.reporting.table import printed as as_printed
from memeval.results.result import load_result
from memeval.runner import run_experiment
from tests.metrics.test_table import table_pass
from tests.test_cli import memeval, unwrapped

ROOT = Path(__file__).resolve().parents[1]
RUNS = Path(__file__).parent / "data" / "runs"


def too_wide(printed: str) -> list[str]:
    """Lines over WIDTH columns; a progress bar redraws itself after a carriage return."""
    return [line for row in printed.splitlines() for line in row.split("\r") if len(line) > WIDTH]


def with_ci(rate: float, bounds: list[float] | None) -> str:
    return f"{100 * rate:.1f}%" + ci_suffix(bounds)


@pytest.mark.slow
def test_a_three_pass_run_prints_within_the_width(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = memeval("run", "+experiment=three_pass", "embedder=hashing", "dataset.limit=60",
                   "plots=false", "reporting.phoenix.enabled=false", f"hydra.run.dir={out}",
                   cwd=tmp_path, cache=tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert too_wide(done.stdout) == [] and too_wide(done.stderr) == []
    assert "Learned conflicts among stored memories" in done.stdout  # the widest tables ran
    for p in json.loads((out / "metrics.json").read_text())["passes"]:
        assert with_ci(p["substantive_recall"], p["substantive_recall_ci95"]) in done.stdout
        assert with_ci(p["prejudge_filter_rate"], p["prejudge_filter_rate_ci95"]) in done.stdout


def test_saved_runs_print_within_the_width() -> None:
    result = load_result(RUNS / "schema1_three_pass")
    assert result.scorer is not None
    printed = (pass_table(result.passes) + "\n"
               + threshold_footer(result.passes, result.scorer.threshold_rule))
    sections = load_result(RUNS / "schema1_compare_systems").sections
    compared = systems_summary(sections["compare"], sections["skipped"], sections["notes"])
    learned = as_printed(learned_blocks(json.loads((RUNS / "conflicts_learned_section.json")
                                                   .read_text())))
    labellers = pass_table([table_pass("heuristic-v1", "judge")])
    assert too_wide("\n".join((printed, compared, learned, labellers))) == []
    assert "99.1% [97–100]" in printed and "57.3%" in printed
    assert "+0.893 pt [+0, +2.68]" in compared and "100.0% [100–100]" in compared
    assert "0.74 [0.71–0.77]" in learned and "pydantic-ai 0.38 / 0.50" in learned  # by source
    gap = " ".join(learned.split("CV − test gap: ")[1].split("\n")[:2])
    assert gap.startswith("any-conflict precision -0.09, any-conflict recall -0.04")
    assert "temporal + newer right -0.11" in gap and "_" not in gap  # the rows' names, not keys
    outside = [line.split() for line in learned.splitlines() if line.startswith("agents_md")]
    assert [row[0] for row in outside] == [  # one row per outside set, its recall gap last
        "agents_md_history_codexbar_v1", "agents_md_history_openai_agents_v1",
        "agents_md_history_mcp_python_sdk_v1", "agents_md_history_fastmcp_v1"]
    assert outside[-1][1:3] + outside[-1][-1:] == ["0.86", "[0.50–1.00]", "+0.43"]


def test_an_mqs_calibration_run_prints_within_the_width(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    metrics = run_experiment(fast_config("+experiment=mqs_calibration", "plots=false",
                                         "reporting.phoenix.enabled=false"), tmp_path / "run")
    printed = capsys.readouterr()
    assert too_wide(printed.out) == [] and too_wide(printed.err) == []
    trust = metrics["trust_score"]["dev"]["trust_out_of_fold"]
    assert f"{trust['spearman']:.3f} [{trust['spearman_ci95'][0]:.3f}–" in printed.out
    assert "confidence_points" in printed.out


def test_the_console_shows_memeval_info_and_other_libraries_warnings_only() -> None:
    def record(name: str, level: int) -> logging.LogRecord:
        return logging.LogRecord(name, level, __file__, 1, "Loading …", None, None)

    keep = OwnInfoOnly()
    assert keep.filter(record("memeval.runner", logging.INFO))
    assert not keep.filter(record("sentence_transformers.base.model", logging.INFO))
    assert keep.filter(record("sentence_transformers.base.model", logging.WARNING))
    handlers = OmegaConf.load(ROOT / "memeval" / "conf" / "config.yaml").hydra.job_logging.handlers
    assert list(handlers) == ["console"]  # the run's log file keeps every record


class _Recording:
    """An ingestor's prepare step that records the batches it is handed, each taking longer
    than tqdm's shortest redraw interval (0.1 s), as embedding a batch does."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def prepare(self, entries: list[Entry]) -> list[str]:
        ids = [e.id for e in entries]
        self.batches.append(ids)
        time.sleep(0.15)
        return ids


def test_the_embedding_bar_moves_once_per_batch_and_counts_entries(
        fast_config: Callable[..., DictConfig], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from memeval.backends.embedders.cache import CHUNK
    from memeval.config import validate
    from memeval.experiments.base import RunContext

    cfg = fast_config("+experiment=three_pass", "dataset.limit=150")
    cfg.progress = True
    ctx = RunContext(cfg, tmp_path / "run", validate(cfg))
    entries = ctx.dataset.entries
    ingestor = _Recording()
    prepared = ctx.prepare(ingestor, entries)  # type: ignore[arg-type]
    assert prepared == [e.id for e in entries]  # back in the dataset's order
    assert [len(b) for b in ingestor.batches] == [CHUNK, CHUNK, len(entries) - 2 * CHUNK]
    bar = capsys.readouterr().err
    # one step per batch, counted in entries; the bar clears itself when done
    drawn = [line.split("|")[2].split()[0] for line in bar.split("\r") if "|" in line]
    assert drawn == [f"{n}/{len(entries)}" for n in (0, CHUNK, 2 * CHUNK)], bar
    assert "entry/s" in bar and bar.split("\r")[-1].strip() == ""


def test_error_messages_wrap_within_the_width(capsys: pytest.CaptureFixture[str]) -> None:
    from memeval.__main__ import main

    assert main(["run", "+experiment=nope"]) == 2  # a long list of known experiments
    err = capsys.readouterr().err
    assert too_wide(err) == [] and len(err.splitlines()) > 1
    assert "three_pass_sessions" in err and err.startswith("memeval: configuration error: ")
    from memeval.user_errors import complain

    complain("memeval: " + "word " * 60 + "~system@experiment.systems.memledger")
    err = capsys.readouterr().err
    assert too_wide(err) == [] and err.rstrip().endswith("~system@experiment.systems.memledger")


def test_the_phoenix_push_summary_wraps_within_the_width() -> None:
    from memeval.reporting.phoenix.push import PushReport

    report = PushReport("http://127.0.0.1:6006", "memeval three_pass run e7333943", "e7333943",
                        spans=945, annotations=2000, dataset="memeval write_gate_v1 1d2bf5b8a948",
                        experiments={"p1": "1", "p2": "2", "p3": "3"}, runs_created=864,
                        evaluations=4000, seconds={"spans": 3.2})
    summary = report.summary()
    assert too_wide(summary) == [] and len(summary.splitlines()) > 1
    assert "945 spans (295/s)" in summary and summary.endswith("in 3.2 s")


def test_the_refusal_to_compare_two_runs_wraps_within_the_width(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memeval.__main__ import main

    other = tmp_path / "other_run_with_a_long_directory_name_as_hydra_makes_them"
    shutil.copytree(RUNS / "schema1_three_pass", other)
    metrics = json.loads((other / "metrics.json").read_text())
    metrics["dataset"]["fingerprint"] = "0123456789abcdef"
    (other / "metrics.json").write_text(json.dumps(metrics))
    assert main(["report", str(RUNS / "schema1_three_pass"), str(other)]) == 2
    err = capsys.readouterr().err
    assert too_wide(err) == [] and len(err.splitlines()) > 1
    assert "(--force to compare anyway)" in unwrapped(err)


def test_console_log_lines_wrap_within_the_width_and_the_log_file_keeps_one_line() -> None:
    config = OmegaConf.load(ROOT / "memeval" / "conf" / "config.yaml").hydra
    for logging_config in (config.job_logging, config.hydra_logging):
        formatter = logging_config.handlers.console.formatter
        assert logging_config.formatters[formatter]["()"] == "memeval.log_redaction.Wrapped"
        assert "formatter" not in logging_config.handlers.get("file", {})  # Hydra's own: as is
    shown = Wrapped("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    try:
        raise ValueError("the cause")
    except ValueError:
        record = logging.LogRecord("memeval.experiments.base", logging.WARNING, __file__, 1,
                                   "skipped %s", ("/data/" + "long_name_" * 6 + ".jsonl:81: "
                                                  "unknown label 'bogus' (expected one of …)",),
                                   sys.exc_info())
    printed = shown.format(record)
    message, traceback = printed.split("\nTraceback")
    assert too_wide(message) == [] and len(message.splitlines()) > 1
    assert " ".join(message.split()).endswith(record.getMessage())  # nothing lost
    assert traceback.endswith("ValueError: the cause")


def test_a_progress_bar_fits_the_width_whatever_its_name(
        fast_config: Callable[..., DictConfig], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from memeval.config import validate
    from memeval.experiments.base import RunContext

    cfg = fast_config("+experiment=three_pass")
    cfg.progress = True
    ctx = RunContext(cfg, tmp_path / "run", validate(cfg))
    assert list(ctx.progress(range(3), 3, "outside agents_md_history_openai_agents_v1: " * 3,
                             "pair")) == [0, 1, 2]
    bar = capsys.readouterr().err
    assert "outside agents_md" in bar and too_wide(bar) == []
