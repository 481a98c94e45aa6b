"""What a memory's text says about its trust, beside the metadata MQS reads.

- specificity: backticked spans, paths, versions, other numbers, identifiers (snake_case,
  camelCase, dotted names) and command words; each kind counted once per match, summed and
  log-scaled, so a long list of paths does not outweigh everything else.
- hedging: markers found by the hedge detector (the record's own `hedged` flag is MQS's term).
- vagueness: words from `vague_words` ("somewhere", "something").
- staleness: years since `updated_at` (else `created_at`) as of `as_of`, capped at one, for a
  fast-moving fact only (a version number or a `fast_moving_words` word): an old fact about
  versions has likely changed, an old fact about a design has not.
Word lists come from the experiment's YAML.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memeval.quality.hedging import HedgeDetector, HedgingConfig
from memeval.quality.record import MemoryRecord
from memeval.quality.words import Lexicon

_SPECIFIC = {
    "backticked": re.compile(r"`[^`]+`"),
    "path": re.compile(r"(?<![\w/])(?:\.{0,2}/)?[\w.-]+/[\w./-]+|\b[\w-]+\.(?:py|ts|js|go|rs|kt|"
                       r"java|yaml|yml|json|toml|md|sql|sh|swift|tf|gradle|cfg|ini|lock)\b"),
    "version": re.compile(r"\bv?\d+\.\d+(?:\.\d+)*\b"),
    "number": re.compile(r"(?<![\w.])\d+(?![\w.])"),
    "identifier": re.compile(r"\b(?:[a-z]+_[a-z0-9_]+|[a-z]+[A-Z]\w*|[A-Za-z]+\.[A-Za-z_]\w+)\b"),
}
_VERSION = _SPECIFIC["version"]
SIGNALS = ("specificity", "hedge_markers", "vague", "stale")


@dataclass
class ContentSignalsConfig:
    vague_words: list[str] = field(default_factory=list)
    fast_moving_words: list[str] = field(default_factory=list)
    command_words: list[str] = field(default_factory=list)
    hedging: HedgingConfig = field(default_factory=HedgingConfig)
    as_of: str = "2026-11-21"  # the date the records are read as of (ISO-8601, UTC)

    def validate(self) -> None:
        for name in ("vague_words", "fast_moving_words", "command_words"):
            if not getattr(self, name):
                raise ValueError(f"trust.content.{name} must be a non-empty list of words")
        try:
            datetime.fromisoformat(self.as_of)
        except ValueError as err:
            raise ValueError(f"trust.content.as_of must be an ISO-8601 date, got "
                             f"{self.as_of!r:.40}") from err
        self.hedging.validate()

    def when(self) -> datetime:
        moment = datetime.fromisoformat(self.as_of)
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class ContentSignals:
    def __init__(self, cfg: ContentSignalsConfig) -> None:
        self.as_of = cfg.when()
        self.hedge = HedgeDetector(cfg.hedging)
        self.vague = Lexicon(cfg.vague_words)
        self.fast = Lexicon(cfg.fast_moving_words)
        self.commands = Lexicon(cfg.command_words)

    def specific_spans(self, text: str) -> int:
        return (sum(len(p.findall(text)) for p in _SPECIFIC.values())
                + len(self.commands.found(text)))

    def fast_moving(self, text: str) -> bool:
        return bool(_VERSION.search(text) or self.fast.found(text))

    def age_years(self, record: MemoryRecord) -> float:
        stamp = record.updated_at or record.created_at
        if stamp is None:
            return 0.0
        stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
        return max(0.0, (self.as_of - stamp).days / 365.0)

    def __call__(self, record: MemoryRecord) -> dict[str, float]:
        text = record.content
        stale = min(1.0, self.age_years(record)) if self.fast_moving(text) else 0.0
        return {"specificity": math.log1p(self.specific_spans(text)),
                "hedge_markers": float(len(self.hedge.markers(text))),
                "vague": float(len(self.vague.found(text))),
                "stale": stale}
