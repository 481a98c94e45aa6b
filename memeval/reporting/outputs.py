"""What each experiment declares of its results when it registers: the `Findings` type it writes
and is read back with, its figures, and the sections its report adds to the common ones. The
figures, the report and the regression gate look an experiment up here, so none of them switches
on experiment names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memeval.results.findings import Findings
from memeval.results.result import CI, UnreadableResult

if TYPE_CHECKING:  # an experiment declares its outputs at import: pandas waits for a report
    import pandas as pd

    from memeval.results.run import Run


@dataclass
class Section:
    """One titled part of a report: text, a table or a figure."""

    title: str
    text: str = ""
    table: pd.DataFrame | None = None
    image: Path | None = None


def no_sections(run: Run) -> list[Section]:
    """An experiment whose report is the common one: the run's facts, passes and figures."""
    return []


def no_headline(run: Run) -> str:
    """An experiment whose report opens with its facts: no single finding leads."""
    return ""


def no_inputs(run: Run) -> dict[str, str]:
    """An experiment that reads nothing besides the components every run names (dataset,
    embedder, judge, scorer, system)."""
    return {}


@dataclass(frozen=True)
class Score:
    """A figure a run gives its system on the leaderboard: which benchmark (the experiment and
    its data), which measure, the value and its 95% CI."""

    benchmark: str
    measure: str
    value: float | None
    ci95: CI | None = None
    higher_is_better: bool = True


def no_scores(run: Run) -> list[Score]:
    """An experiment that puts nothing on the leaderboard."""
    return []


@dataclass(frozen=True)
class Outputs:
    """An experiment's declaration: read and written as `findings`, drawn by `figures`,
    reported with the common sections plus `report`'s, opened by its `headline` finding, its
    own `inputs` named beside the common components, and scored on the leaderboard by
    `scores`."""

    findings: type[Findings]  # its own sections of metrics.json
    figures: Callable[[Run], list[Path]]  # draws into RUN_DIR/figures/, returns the files
    report: Callable[[Run], list[Section]] = no_sections
    scores: Callable[[Run], list[Score]] = no_scores
    headline: Callable[[Run], str] = no_headline  # one sentence: the run's main finding
    inputs: Callable[[Run], dict[str, str]] = no_inputs  # what it read: name → description


OUTPUTS: dict[str, Outputs] = {}


class UnknownExperiment(UnreadableResult):
    """A run of an experiment this memeval does not know (a plugin not installed): its own
    sections cannot be read, though nothing is wrong with its files."""


def declare(experiment: str, outputs: Outputs) -> None:
    """Called as the experiment registers (experiments/base.py's `register`)."""
    if experiment in OUTPUTS:
        raise ValueError(f"experiment '{experiment}' declares its outputs twice")
    OUTPUTS[experiment] = outputs


def outputs_of(experiment: str) -> Outputs:
    """What `experiment` declared; an experiment not loaded (a plugin not installed) is named."""
    try:
        return OUTPUTS[experiment]
    except KeyError:
        raise UnknownExperiment(
            f"experiment '{experiment}' is not one this memeval knows (known: "
            f"{', '.join(sorted(OUTPUTS)) or 'none loaded'}): install the plugin that "
            f"registers it to read its figures and report") from None
