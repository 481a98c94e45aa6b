"""Labels for unlabelled corpus rows, each carrying its `label_source`.

`heuristic` is the reference benchmark's rule list (versioned: change a rule, change the
version). `judge` labels with any registered judge (keep → substantive, SKIP → noise). Metrics
that claim ground truth read human labels only; these labels drive oracle judges and stage
distributions over corpus rows.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memeval.backends.judges.base import JUDGES
from memeval.entry import Entry
from memeval.registry import Registry, bounded
from memeval.utils.redact import redact


class Labeller(Protocol):
    source: str

    def label(self, entries: Sequence[Entry]) -> list[Entry]: ...


LABELLERS: Registry[Labeller] = Registry("labeller")


@dataclass
class HeuristicConfig:
    version: str = "heuristic-v1"
    noise_below: int = bounded(80, 0)
    ack_below: int = bounded(200, 0)
    ack_openers: list[str] = field(default_factory=list)
    ack_pattern: str = ""
    fence_above: int = bounded(400, 0)
    list_above: int = bounded(800, 0)
    min_bullets: int = bounded(3, 1)
    long_above: int = bounded(1200, 0)

    def validate(self) -> None:
        re.compile(self.ack_pattern)


_BULLET = re.compile(r"(?m)^\s*[-*•]\s+\S")
_NUMBERED = re.compile(r"(?m)^\s*\d+[.)]\s+\S")


class HeuristicLabeller:
    """The reference benchmark's rules, applied in order to the assistant text."""

    def __init__(self, cfg: HeuristicConfig) -> None:
        self.cfg = cfg
        self.source = cfg.version
        self._ack = re.compile(cfg.ack_pattern) if cfg.ack_pattern else None
        self._openers = tuple(o.lower() for o in cfg.ack_openers)

    def classify(self, text: str) -> str:
        cfg, size = self.cfg, len(text)
        if size < cfg.noise_below:
            return "noise"
        lowered = text.lstrip().lower()
        if size < cfg.ack_below and (lowered.startswith(self._openers)
                                     or (self._ack is not None and self._ack.match(lowered))):
            return "noise"
        if size > cfg.fence_above and "```" in text:
            return "substantive"
        if size > cfg.list_above and (len(_BULLET.findall(text)) >= cfg.min_bullets
                                      or _NUMBERED.search(text)):
            return "substantive"
        if size > cfg.long_above:
            return "substantive"
        return "low_value"

    def label(self, entries: Sequence[Entry]) -> list[Entry]:
        return [dataclasses.replace(e, label=self.classify(e.assistant_response),
                                    label_source=self.source) for e in entries]


@LABELLERS.register("heuristic", HeuristicConfig)
def build_heuristic(cfg: HeuristicConfig, **_: object) -> HeuristicLabeller:
    return HeuristicLabeller(cfg)


@dataclass
class JudgeLabellerConfig:
    judge: dict[str, Any] = field(default_factory=lambda: {"name": "classifier"})
    max_concurrency: int = bounded(4, 1, 64)

    def validate(self) -> None:
        JUDGES.validate(self.judge)
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")


class JudgeLabeller:
    """Labels rows with a judge's verdict; texts are redacted first, as in the gate.

    Rows are independent (unlike a gate replay, where each verdict changes what the next entry
    meets), so up to `max_concurrency` verdicts are asked at once: an HTTP judge's latency, not
    its throughput, is what bounds labelling thousands of corpus rows.
    """

    def __init__(self, cfg: JudgeLabellerConfig, training: Sequence[Entry],
                 cache_dir: Path | None) -> None:
        self.cfg = cfg
        self.judge = JUDGES.build(cfg.judge, entries=training, cache_dir=cache_dir)
        self.source = f"judge:{self.judge.name}"

    def _label_one(self, entry: Entry) -> Entry:
        verdict = self.judge.judge(entry, redact(entry.user_prompt),
                                   redact(entry.assistant_response))
        return dataclasses.replace(entry, label="noise" if verdict.skip else "substantive",
                                   label_source=self.source)

    def label(self, entries: Sequence[Entry]) -> list[Entry]:
        if self.cfg.max_concurrency == 1:
            return [self._label_one(e) for e in entries]
        with ThreadPoolExecutor(self.cfg.max_concurrency, "memeval-label") as pool:
            return list(pool.map(self._label_one, entries))


@LABELLERS.register("judge", JudgeLabellerConfig)
def build_judge_labeller(cfg: JudgeLabellerConfig, *, training: Sequence[Entry] = (),
                         cache_dir: Path | None = None, **_: object) -> JudgeLabeller:
    return JudgeLabeller(cfg, training, cache_dir)
