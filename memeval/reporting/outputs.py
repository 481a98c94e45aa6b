"""What each experiment declares of its results when it registers: the `Findings` type it writes
and is read back with, its figures, and the sections its report adds to the common ones. The
figures, the report and the regression gate look an experiment up here, so none of them switches
on experiment names."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from memeval.results.findings import Findings
from memeval.results.result import CI, NO_CI, PassMetrics, UnreadableResult, as_ci

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
    html_cells: bool = False  # the table's cells are HTML already (links): not escaped again


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
class Unit:
    """How a headline figure reads, in every view alike: `shown` is the terminal's, the report's,
    `runs`' and the leaderboard's text; `in_phoenix` the figure as Phoenix shows it. Phoenix's
    compare view cuts a mean below 1 to two decimals, so a rate goes as a percentage and a score
    below 1 in hundredths (`x100`), each rounded as it is shown."""

    name: str
    digits: int  # decimals shown (of the percentage, for a rate)
    ci_digits: int
    scale: float = 1.0  # 100: a rate, shown as a percentage
    phoenix_scale: float = 1.0  # what the figure is multiplied by in Phoenix
    phoenix_suffix: str = ""  # what Phoenix's evaluation name adds: "%", "x100", "ms"
    after: str = ""  # after the value shown: "%", " ms"

    def difference(self, delta: float, ci95: CI) -> str:
        """second − first, a rate's in percentage points: `-3.1 pt [-7.2, +0.9]`."""
        digits, after = (1, " pt") if self.scale == 100 else (self.digits, self.after)
        low, high = ci95
        bounds = "" if low is None or high is None else \
            f" [{self.scale * low:+.{digits}f}, {self.scale * high:+.{digits}f}]"
        return f"{self.scale * delta:+.{digits}f}{after}{bounds}"

    def shown(self, value: float | None, ci95: CI | None = None) -> str:
        if value is None:
            return "—"
        text = f"{self.scale * value:.{self.digits}f}{self.after}"
        low, high = ci95 or (None, None)
        if low is None or high is None:
            return text
        digits = self.ci_digits
        return f"{text} [{self.scale * low:.{digits}f}–{self.scale * high:.{digits}f}]"

    def in_phoenix(self, value: float) -> float:
        """Rounded as shown, then scaled: the terminal's 57.6% is 57.6, its 0.039 is 3.9."""
        shown = round(self.scale * value, self.digits) / self.scale
        return round(self.phoenix_scale * shown, 6)


RATE = Unit("rate", 1, 0, scale=100.0, phoenix_scale=100.0, phoenix_suffix="%",
            after="%")  # a share: 99.1% [97–100]
NUMBER = Unit("number", 3, 3, phoenix_scale=100.0, phoenix_suffix="x100")  # 0.039 [0.021–0.060]
COUNT = Unit("count", 0, 0)  # how many: 31 [22–40]
MILLISECONDS = Unit("ms", 1, 1, phoenix_suffix="ms", after=" ms")  # a latency


@dataclass(frozen=True)
class Score:
    """A headline figure of a run, declared once by its experiment (`Outputs.scores`) and read
    by every view alike: the terminal, the report, `runs`, the leaderboard and Phoenix. Which
    benchmark (the experiment and its data), which measure, the value, its 95% CI, which way is
    better, its unit, and the population it is computed on. `system` names the system it
    belongs to when a run measures several (compare_systems); else it is the run's."""

    benchmark: str
    measure: str
    value: float | None
    ci95: CI | None = None
    higher_is_better: bool = True
    unit: Unit = NUMBER
    population: str = ""
    system: str | None = None

    @property
    def shown(self) -> str:
        """The figure with its CI, as every view prints it."""
        return self.unit.shown(self.value, self.ci95)

    @property
    def better(self) -> str:
        return "higher" if self.higher_is_better else "lower"

    def below(self, other: Score) -> bool:
        """Whether this figure's 95% CI lies wholly below the other's."""
        high, low = (self.ci95 or NO_CI)[1], (other.ci95 or NO_CI)[0]
        return high is not None and low is not None and high < low


def pass_scores(measured: PassMetrics, benchmark: str) -> list[Score]:
    """A write-gate pass's figures: the human-labelled substantive entries kept, the noise
    entries stored (a count, its CI the stored share's) and the share of entries dropped before
    the judge."""
    labels = measured.sections.get("per_label") or {}
    noise_n = (labels.get("noise") or {}).get("n")
    share = as_ci(measured.sections.get("noise_stored_rate_ci95"))
    noise_ci = None if noise_n is None or share[0] is None or share[1] is None else \
        (share[0] * noise_n, share[1] * noise_n)
    where = f"pass {measured.pass_no}"  # a system's arm is named by its Score.system
    substantive = (labels.get("substantive") or {}).get("n", "?")
    return [Score(benchmark, "recall", measured.substantive_recall,
                  measured.substantive_recall_ci95, unit=RATE,
                  population=f"{substantive} substantive entries, {where}"),
            Score(benchmark, "noise stored",
                  None if measured.noise_stored is None else float(measured.noise_stored),
                  noise_ci, higher_is_better=False, unit=COUNT,
                  population=f"{noise_n if noise_n is not None else '?'} noise entries, "
                             f"{where}"),
            Score(benchmark, "pre-judge", measured.prejudge_filter_rate,
                  measured.prejudge_filter_rate_ci95, unit=RATE,
                  population=f"{measured.entries} entries, {where}")]


def pass_items(decisions: pd.DataFrame, pass_no: int) -> dict[str, pd.Series]:
    """A write-gate pass's figures item by item: each human-labelled substantive entry kept (1)
    or not, each entry dropped before the judge (1) or not, by entry id."""
    from memeval.metrics.gate_metrics import PREJUDGE_STAGES

    rows = decisions[(decisions["pass_no"] == pass_no) & (decisions["phase"] == "eval")]
    rows = rows.drop_duplicates("entry_id", keep="last").set_index("entry_id")
    substantive = rows[(rows["label"] == "substantive") & (rows["label_source"] == "human")]
    return {"recall": substantive["retained"].astype(float),
            "pre-judge": rows["outcome"].isin(PREJUDGE_STAGES).astype(float)}


def headline_line(scores: Sequence[Score]) -> str:
    """The declared figures in one sentence, as the terminal prints them after a run."""
    parts = [f"{s.system + ' ' if s.system else ''}{s.measure} {s.shown}"
             + (f" ({s.population})" if s.population else "") for s in scores]
    return "headline figures (95% CIs): " + "; ".join(parts) if parts else ""


def no_items(run: Run) -> dict[str, pd.Series]:
    """An experiment whose figures are no means over items (a precision, a Brier score)."""
    return {}


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
    # per figure (by measure, or by `item_key` where one measure is a figure of several
    # benchmarks), each item's value by item id, whose mean is the figure: what two runs on the
    # same items are compared on, paired (none: its figures are not means)
    items: Callable[[Run], dict[str, pd.Series]] = no_items


def item_key(benchmark: str, measure: str) -> str:
    """The key of a figure's items when its measure alone does not name it (`Outputs.items`)."""
    return f"{benchmark} / {measure}"


def items_of(found: Mapping[str, pd.Series], score: Score) -> pd.Series | None:
    """`score`'s items among a run's: under its benchmark and measure, else its measure."""
    return found.get(item_key(score.benchmark, score.measure), found.get(score.measure))


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


def declared_scores(run_dir: Path) -> tuple[Score, ...]:
    """The figures a run's experiment declares, read from its directory; none for a run of an
    experiment this memeval does not know."""
    from memeval.results.run import Run

    run = Run.load(run_dir)
    try:
        return tuple(outputs_of(run.experiment).scores(run))
    except UnknownExperiment:
        return ()


def beside_passes(scores: Sequence[Score], system: str, last: Sequence[Score]) -> list[Score]:
    """A system's figures other than its write-gate pass's (`last`), each named with its
    benchmark's capability (`conflicts recall`), for a view that shows them on that pass: a
    benchmark whose figures are the pass's own is that pass."""
    sent = {(s.measure, s.shown) for s in last}
    mine: dict[str, list[Score]] = {}
    for score in scores:
        if score.system == system:
            mine.setdefault(score.benchmark, []).append(score)
    return [replace(s, measure=f"{bench.split(' (')[0]} {s.measure}")
            for bench, found in mine.items()
            if not {(s.measure, s.shown) for s in found} <= sent for s in found]
