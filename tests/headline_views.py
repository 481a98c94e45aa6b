"""One headline, everywhere: the figures a run's experiment declares, read back from each view a
user looks at (the run's own output, its report, `runs --json`, the leaderboard's JSON and what
Phoenix is sent), must be the same figures, shown the same way."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from memeval.cli.runs import main as runs_main
from memeval.reporting.leaderboard import build, to_json
from memeval.reporting.outputs import Score, headline_line, outputs_of
from memeval.reporting.phoenix.headline import headline_evaluations
from memeval.reporting.phoenix.push import gate_figures
from memeval.reporting.phoenix.quality_items import item_sets
from memeval.reporting.phoenix.retrieval_push import arm_scores, holds_searches
from memeval.reporting.report import write_report
from memeval.results.run import Run


def unwrapped(text: str) -> str:
    return " ".join(text.split())


def phoenix_labels(run: Run) -> list[str]:
    """The labels of the headline evaluations each Phoenix push of this run would send."""
    metrics = json.loads((run.path / "metrics.json").read_text())
    scores = [s for found in gate_figures(run.path, metrics).values() for s in found]
    scores += [s for found in item_sets(run.path, metrics) for d in found.detectors
               for s in d.scores]
    if holds_searches(run.path):
        scores += [s for found in arm_scores(metrics).values() for s in found]
    return [e["label"] for e in headline_evaluations(scores, "")]


def check_views_agree(run_dir: Path, printed: str, capsys: object) -> list[Score]:
    """Every declared figure is shown alike by every view; returns them."""
    run = Run.load(run_dir)
    declared = outputs_of(run.experiment).scores(run)
    assert declared, f"{run.experiment} declares no headline figures"
    assert unwrapped(headline_line(declared)) in unwrapped(printed)  # the run's own output
    with tempfile.TemporaryDirectory() as folder:
        _, markdown = write_report([run_dir], Path(folder))
        report = markdown.read_text()
    table = report.partition("## Headline figures")[2].partition("\n## ")[0]
    assert all(f"| {s.shown} |" in table for s in declared), table
    assert runs_main([str(run_dir), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["runs"][0]["figures"]  # type: ignore[attr-defined]
    assert sorted(f["shown"] for f in listed.values()) == sorted(s.shown for s in declared)
    board = to_json(build([run_dir]))
    cells = [cell["shown"] for cells in board["cells"].values() for cell in cells.values()]
    assert sorted(cells) == sorted(s.shown for s in declared)
    sent = phoenix_labels(run)
    missing = [s.shown for s in declared if s.shown not in sent]
    assert not missing, (missing, sent)
    return declared
