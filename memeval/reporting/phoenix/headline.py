"""A run's headline figures (reporting/outputs.py `Score`) as Phoenix evaluations, each with the
direction that is better.

Phoenix 20 has no experiment-level score: its experiments list and compare view show each
evaluation's mean over an experiment's runs. A headline figure is therefore one evaluation on
one run of its experiment (its "anchor"), whose mean is the figure itself, sent as its unit puts
it in Phoenix (`Unit.in_phoenix`: a rate as the percentage the terminal prints, a score below 1
in hundredths, rounded as printed), and labelled with the figure and its CI as every other view
prints them. Each evaluation's name says which way is better, and an annotation config of the
same name tells Phoenix (its compare view colours a change by it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memeval.reporting.outputs import Score, Unit
from memeval.reporting.phoenix.rest import PhoenixREST


@dataclass(frozen=True)
class Headline:
    """A figure's evaluation in Phoenix: its name (the measure, its unit there, which way is
    better) and the annotation config telling Phoenix its direction."""

    measure: str
    higher_is_better: bool
    unit: Unit

    @classmethod
    def of(cls, score: Score) -> Headline:
        return cls(score.measure, score.higher_is_better, score.unit)

    @property
    def better(self) -> str:
        return "higher" if self.higher_is_better else "lower"

    @property
    def title(self) -> str:
        """Capitalised, so Phoenix, which sorts evaluations by code point, lists the headline
        figures before the per-item evaluations: `Recall %`, `Brier x100`."""
        suffix = f" {self.unit.phoenix_suffix}" if self.unit.phoenix_suffix else ""
        measure = self.measure if self.measure[1:2].isupper() else \
            self.measure[:1].upper() + self.measure[1:]  # nDCG@5 stays as written
        return f"{measure}{suffix}"

    @property
    def name(self) -> str:
        return f"{self.title} ({self.better} is better)"

    def config(self) -> dict[str, Any]:
        """Phoenix's annotation config of the same name: its direction."""
        return {"name": self.name, "type": "CONTINUOUS",
                "optimization_direction": "MAXIMIZE" if self.higher_is_better else "MINIMIZE",
                "description": f"memeval: {self.measure} ({self.unit.name}"
                               f"{', in hundredths' if self.unit.phoenix_suffix == 'x100' else ''})"
                               f"; {self.better} is better"}


def evaluation(score: Score, about: str) -> dict[str, Any]:
    """The figure as one evaluation: its value as Phoenix shows it, its label as memeval
    prints it."""
    assert score.value is not None
    headline = Headline.of(score)
    on = f" on {score.population}" if score.population else ""
    return {"name": headline.name, "label": score.shown,
            "score": score.unit.in_phoenix(score.value),
            "explanation": f"{about}: {score.measure} {score.shown}{on} (95% CI), "
                           f"{headline.better} is better"}


def headline_evaluations(scores: Sequence[Score], about: str) -> list[dict[str, Any]]:
    """The evaluations of the figures that were measured."""
    return [evaluation(score, about) for score in scores if score.value is not None]


def declare_directions(rest: PhoenixREST, scores: Iterable[Score]) -> None:
    """Phoenix's annotation config for each of these figures that has none yet."""
    known = rest.annotation_config_names()
    for headline in dict.fromkeys(Headline.of(score) for score in scores):
        if headline.name not in known:
            rest.create_annotation_config(headline.config())
