"""Conflict detection between two memories, per the openclaw memory-quality document.

Checked per pair, first match wins. Memories from the same path are one source re-stated and are
skipped, as openclaw does; `skip_same_path: false` checks them too (a file that contradicts
itself, or a daily log whose entries supersede each other).

    contradiction  one text negates (not, dislike, can't, …) and the other affirms (is, like, …),
                   and they share a content word
    temporal       both carry time markers (now / before / last week / soon …) and share at
                   least `temporal_min_shared` content words. Markers are relative to when each
                   memory was written, so "now" in both can still be two different times.
    semantic       word Jaccard strictly between `semantic_low` and `semantic_high`

Penalties 0.30 / 0.15 / 0.10 on confidence, halved for the memory with the higher confidence.

`compat: true` reproduces the reference code: word lists matched as substrings, whitespace
tokens, no stemming, temporal needs 3 shared words. Its
own test "User lives in New York now" vs "User lived in Boston before" fails under it (2 shared
words); memeval's stems share "user" and "liv".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from memeval.quality.words import Lexicon, jaccard, stem, tokens
from memeval.registry import bounded


class ConflictType(StrEnum):
    CONTRADICTION = "contradiction"
    TEMPORAL = "temporal"
    SEMANTIC = "semantic"


RESOLUTIONS = {ConflictType.CONTRADICTION: "manual_review",
               ConflictType.TEMPORAL: "timestamp_priority",
               ConflictType.SEMANTIC: "merge_or_clarify"}

DEFAULT_NEGATIONS = ["not", "dislike", "hate", "avoid", "isn't", "aren't", "wasn't", "weren't",
                     "can't", "cannot", "unable", "didn't", "don't", "won't"]
DEFAULT_POSITIVES = ["is", "are", "was", "were", "like", "love", "prefer", "can", "able"]
DEFAULT_TIME_MARKERS = {
    "present": ["now", "currently", "today"],
    "past": ["then", "before", "previously", "yesterday", "last week", "last month"],
    "future": ["tomorrow", "next week", "soon"],
}
DEFAULT_STOPWORDS = [
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from",
    "it", "its", "this", "that", "these", "those", "be", "been", "has", "have", "had", "do", "does",
    "did", "as", "so", "if", "than", "very", "also", "just", "there", "their", "they", "we", "i",
    "you", "he", "she", "his", "her", "our", "my", "your", "which", "who", "what", "when", "all",
]


@dataclass
class ConflictRules:
    negations: list[str] = field(default_factory=lambda: list(DEFAULT_NEGATIONS))
    positives: list[str] = field(default_factory=lambda: list(DEFAULT_POSITIVES))
    time_markers: dict[str, list[str]] = field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_TIME_MARKERS.items()})
    stopwords: list[str] = field(default_factory=lambda: list(DEFAULT_STOPWORDS))
    temporal_min_shared: int = bounded(2, 1)
    semantic_low: float = bounded(0.5, 0, 1)
    semantic_high: float = bounded(0.7, 0, 1)
    skip_same_path: bool = True
    compat: bool = False

    def validate(self) -> None:
        if not self.negations or not self.positives or not self.time_markers:
            raise ValueError("negations, positives and time_markers must be non-empty")
        if not 0.0 <= self.semantic_low < self.semantic_high <= 1.0:
            raise ValueError("need 0 <= semantic_low < semantic_high <= 1")
        if self.temporal_min_shared < 1:
            raise ValueError("temporal_min_shared must be at least 1")


@dataclass(frozen=True)
class Conflict:
    kind: ConflictType
    reason: str

    @property
    def resolution(self) -> str:
        return RESOLUTIONS[self.kind]


class ConflictDetector:
    def __init__(self, rules: ConflictRules) -> None:
        self.rules = rules
        substring = rules.compat
        self.negations = Lexicon(rules.negations, substring)
        self.positives = Lexicon(rules.positives, substring)
        self.periods = {period: Lexicon(words, substring)
                        for period, words in rules.time_markers.items()}
        marker_words = [t for words in rules.time_markers.values() for w in words
                        for t in tokens(w)]
        ignored = [*rules.stopwords, *rules.negations, *rules.positives, *marker_words]
        self._ignored = {self._norm(t) for w in ignored for t in tokens(w)}
        self._min_shared = 3 if rules.compat else rules.temporal_min_shared

    def _norm(self, token: str) -> str:
        return token if self.rules.compat else stem(token)

    def _words(self, text: str) -> set[str]:
        return {self._norm(t) for t in tokens(text, whitespace=self.rules.compat)}

    def _content(self, text: str) -> set[str]:
        return self._words(text) - self._ignored

    def _periods(self, text: str) -> set[str]:
        return {period for period, lexicon in self.periods.items() if lexicon.found(text)}

    def detect(self, a: str, b: str, same_source: bool = False) -> Conflict | None:
        """The first rule the pair breaks, or None; memories from one source never conflict
        unless `skip_same_path` is off."""
        if same_source and self.rules.skip_same_path:
            return None
        shared = self._content(a) & self._content(b)
        negated = (self.negations.found(a), self.negations.found(b))
        affirmed = (self.positives.found(a), self.positives.found(b))
        if shared and ((negated[0] and affirmed[1]) or (affirmed[0] and negated[1])):
            negation, affirmation = negated[0] or negated[1], affirmed[1] or affirmed[0]
            return Conflict(ConflictType.CONTRADICTION, f"negation {negation} against "
                            f"{affirmation} about {sorted(shared)[:3]}")
        periods = (self._periods(a), self._periods(b))
        if all(periods) and len(shared) >= self._min_shared:
            return Conflict(ConflictType.TEMPORAL,
                            f"time markers {sorted(periods[0])} vs {sorted(periods[1])} about "
                            f"{sorted(shared)[:3]}")
        overlap = jaccard(self._words(a), self._words(b))
        if self.rules.semantic_low < overlap < self.rules.semantic_high:
            return Conflict(ConflictType.SEMANTIC, f"word overlap {overlap:.2f}")
        return None


@dataclass
class ConflictPenalties:
    contradiction: float = 0.30
    temporal: float = 0.15
    semantic: float = 0.10
    higher_confidence_factor: float = 0.5  # the better-supported memory is penalised less
    cap: float = 0.5

    def validate(self) -> None:
        if min(self.contradiction, self.temporal, self.semantic, self.cap) < 0:
            raise ValueError("conflict penalties must be non-negative")
        if not 0.0 <= self.higher_confidence_factor <= 1.0:
            raise ValueError("higher_confidence_factor must be in [0, 1]")

    def of(self, kind: ConflictType, has_higher_confidence: bool) -> float:
        base = float(getattr(self, kind.value))
        return base * (self.higher_confidence_factor if has_higher_confidence else 1.0)
