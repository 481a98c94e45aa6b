"""Hedging detection for stored memories: MQS's −5 needs a `hedged` flag, and replayed agent
text carries none, so it is read from the words.

A marker matches on word boundaries, case-insensitively ("may" never fires inside "mayor").
A text is hedged when it has at least `min_markers` markers AND at least `min_per_100_words` of
them per 100 words: a count alone would flag every long answer that says "might" once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memeval.registry import bounded

DEFAULT_MARKERS = [
    "maybe", "perhaps", "possibly", "probably", "might", "may be", "could be", "i think",
    "i believe", "i guess", "i suspect", "not sure", "i'm not sure", "unsure", "not certain",
    "uncertain", "unclear", "it seems", "seems to", "seems like", "appears to", "likely",
    "unlikely", "hopefully", "should work", "if i recall",
]


@dataclass
class HedgingConfig:
    markers: list[str] = field(default_factory=lambda: list(DEFAULT_MARKERS))
    min_markers: int = bounded(2, 1)
    min_per_100_words: float = bounded(0.5, 0)

    def validate(self) -> None:
        if not self.markers or any(not m.strip() for m in self.markers):
            raise ValueError("hedging.markers must be a non-empty list of non-blank phrases")
        if self.min_markers < 1 or self.min_per_100_words < 0:
            raise ValueError("hedging.min_markers must be at least 1 and min_per_100_words >= 0")


_WORD = re.compile(r"\w+")


class HedgeDetector:
    def __init__(self, cfg: HedgingConfig) -> None:
        self.cfg = cfg
        # Longest first, so "i'm not sure" counts once rather than also as "not sure".
        phrases = sorted({m.strip().lower() for m in cfg.markers}, key=len, reverse=True)
        body = "|".join(r"\s+".join(map(re.escape, p.split())) for p in phrases)
        self._pattern = re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)

    def markers(self, text: str) -> list[str]:
        return [m.group(0).lower() for m in self._pattern.finditer(text)]

    def __call__(self, text: str) -> bool:
        found = len(self.markers(text))
        words = len(_WORD.findall(text))
        return (found >= self.cfg.min_markers
                and 100.0 * found / max(words, 1) >= self.cfg.min_per_100_words)
