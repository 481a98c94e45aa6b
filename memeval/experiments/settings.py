"""A run's settings as validated types: parsed once, before any work, then read by the run.

The composed `DictConfig` is kept only to write the resolved YAML a run saves; everything that
decides what a run does reads these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from memeval.data.base import ChosenInput
from memeval.engine.gate.gate import GateConfig
from memeval.entry import Entry
from memeval.registry import SEEDS, Chosen, bounded
from memeval.reporting.phoenix.config import PhoenixConfig

NAME_CHARS = 60  # a run's name or tag: short enough for a table's column


@dataclass
class Settings:
    """The top-level settings of the main config (the component groups aside)."""

    seed: int = bounded(0, *SEEDS)
    cache_dir: str = "~/.cache/memeval"
    progress: bool = True
    # Resamples per bootstrap CI: fewer are noise; each costs resamples x entries of memory.
    bootstrap: int = bounded(2000, 20, 100_000)
    plots: bool = True
    resume: bool = False
    # what every view calls the run (its report's title, `runs`, the leaderboard), and labels to
    # find it by; kept in metrics.json, neither changes a figure
    run_name: str | None = None
    tags: list[str] = field(default_factory=list)
    # a run whose embedding is estimated to take longer says so, and how to warm the cache or
    # cut the run, before it starts (null: never)
    cost_warning_s: float | None = bounded(60.0, above=0)

    def validate(self) -> None:
        for what, text in (("run_name", self.run_name), *(("a tag", t) for t in self.tags)):
            if text is not None and (not text.strip() or len(text) > NAME_CHARS
                                     or not text.isprintable()):
                raise ValueError(f"{what} must be one line of 1 to {NAME_CHARS} characters, got "
                                 f"{text!r}")


@runtime_checkable
class ChecksInputs(Protocol):
    """An experiment's settings that can tell, from the `dataset` option chosen alone, that the
    run could never work on it: `validate` asks them before any work."""

    def check_inputs(self, dataset: ChosenInput) -> None:
        """Raise ConfigError naming the input to choose instead."""


@runtime_checkable
class ReplaysPart(Protocol):
    """An experiment's settings that replay only some of the dataset's entries (compare_systems'
    write gate, its splits): what the cost said before a run and `memeval embed` count."""

    def replayed(self, entries: list[Entry]) -> list[Entry]:
        """The entries the run embeds and replays, in order."""


@dataclass
class Validated:
    """Every component chosen, with its settings as its schema dataclass; composing one never
    loads anything."""

    settings: Settings
    experiment: Chosen | None  # None only where no experiment runs (`serve`)
    dataset: ChosenInput  # its kind: entries or a memory corpus
    labeller: Chosen
    embedder: Chosen
    content_encoder: Chosen
    scorer: Chosen
    judge: Chosen
    gate: GateConfig
    phoenix: PhoenixConfig
    system: Chosen
