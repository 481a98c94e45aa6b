"""A run's headline figures as Phoenix evaluations, each with the direction that is better.

Phoenix 20 has no experiment-level score: its experiments list and compare view show each
evaluation's mean over an experiment's runs. A headline figure is therefore one evaluation on
one run of its experiment (its "anchor"), whose mean is the figure itself. Phoenix shows a mean
below 1 cut, not rounded, to two decimals (0.5764 as 0.57), so a figure is sent as the terminal
rounds it, in hundredths: a rate the terminal prints as 57.6% is 57.6, a figure it prints as
0.039 is 3.9. Each evaluation's name says which way is better, and an annotation config of the
same name tells Phoenix (its compare view colours a change by it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memeval.reporting.phoenix.rest import PhoenixREST


@dataclass(frozen=True)
class Headline:
    # the figure and its unit in Phoenix, e.g. "Recall %": capitalised, so Phoenix, which sorts
    # evaluations by code point, lists the headline figures before the per-item evaluations
    title: str
    higher_is_better: bool
    percent: bool  # a rate the terminal prints as 57.6%; else a figure it prints as 0.576
    what: str
    lowest: float = 0.0  # in hundredths, for the annotation config's bounds

    @property
    def better(self) -> str:
        return "higher" if self.higher_is_better else "lower"

    @property
    def name(self) -> str:
        return f"{self.title} ({self.better} is better)"

    def shown(self, value: float) -> str:
        return f"{100 * value:.1f}%" if self.percent else f"{value:.3f}"

    def score(self, value: float) -> float:
        """In hundredths, rounded as the terminal rounds the figure."""
        return round(100 * value, 1) if self.percent else round(100 * round(value, 3), 1)

    def evaluation(self, value: float, ci: Sequence[float] | None, about: str
                   ) -> dict[str, Any]:
        interval = f" [{self.shown(ci[0])}-{self.shown(ci[1])}]" if ci else ""
        return {"name": self.name, "label": self.shown(value) + interval,
                "score": self.score(value),
                "explanation": f"{about}: {self.what} {self.shown(value)}{interval} (95% CI), "
                               f"{self.better} is better; the score is in hundredths"}

    def config(self) -> dict[str, Any]:
        """Phoenix's annotation config of the same name: its direction and bounds."""
        return {"name": self.name, "type": "CONTINUOUS",
                "optimization_direction": "MAXIMIZE" if self.higher_is_better else "MINIMIZE",
                "lower_bound": self.lowest, "upper_bound": 100.0,
                "description": f"memeval: {self.what}, in hundredths; {self.better} is better"}


# metrics.json's name of a figure -> how Phoenix shows it
HEADLINES: dict[str, Headline] = {
    "substantive_recall": Headline("Recall %", True, True,
                                   "human-labelled substantive entries kept"),
    "prejudge_filter_rate": Headline("Pre-judge %", True, True,
                                     "entries filtered before the judge"),
    "spearman": Headline("Spearman x100", True, False, "rank correlation with the labels",
                         lowest=-100.0),
    "brier": Headline("Brier x100", False, False, "Brier score of P(trusted)"),
    "ece": Headline("ECE x100", False, False, "expected calibration error of P(trusted)"),
    "accuracy": Headline("MAI accuracy %", True, True, "scenarios graded right"),
    "ndcg": Headline("nDCG x100", True, False, "nDCG of the evaluation queries' searches"),
}


def headline_evaluations(figures: Mapping[str, Any], names: Sequence[str], about: str
                         ) -> list[dict[str, Any]]:
    """The evaluations of these figures (`NAME` and `NAME_ci95` in `figures`), those measured."""
    return [HEADLINES[name].evaluation(float(figures[name]), figures.get(f"{name}_ci95"),
                                       about)
            for name in names if figures.get(name) is not None]


def declare_directions(rest: PhoenixREST, headlines: Iterable[Headline]) -> None:
    """Phoenix's annotation config for each of these figures that has none yet."""
    known = rest.annotation_config_names()
    for headline in headlines:
        if headline.name not in known:
            rest.create_annotation_config(headline.config())
