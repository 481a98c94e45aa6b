"""Word matching for the conflict rules and relevance: tokens, crude stems, phrase lookup.

The reference implementation matches its word lists as substrings ("is" fires inside "this",
"not" inside "notable") and splits on whitespace only ("tea." is not "tea"). memeval matches
whole words by default: lower-cased `\\w+` tokens (apostrophes kept, so "isn't" is one word),
each reduced to a crude stem so "dislikes" matches "dislike". `substring=True` reproduces the
reference for comparison.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

_TOKEN = re.compile(r"[\w']+")
_SUFFIXES = ("ing", "ed", "es", "s")


@functools.lru_cache(maxsize=65536)  # a pure function of a word; the same words recur
def stem(word: str) -> str:
    """Strip one common English suffix, keeping at least 3 letters ("lives"/"lived" → "liv")."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word.rstrip("e") if len(word) > 3 else word


def tokens(text: str, whitespace: bool = False) -> list[str]:
    lowered = text.lower()
    return lowered.split() if whitespace else _TOKEN.findall(lowered)


class Lexicon:
    """A word list that answers "does this text use one of my words (or phrases)?"."""

    def __init__(self, words: Iterable[str], substring: bool = False) -> None:
        self.substring = substring
        self.words = sorted({w.strip().lower() for w in words if w.strip()})
        self._phrases = [tuple(stem(t) for t in tokens(w)) for w in self.words]
        self._widths = sorted({len(phrase) for phrase in self._phrases if phrase})

    def found(self, text: str) -> list[str]:
        """The list's entries the text uses (substrings of the raw text in reference mode)."""
        if self.substring:
            lowered = text.lower()
            return [w for w in self.words if w in lowered]
        stems = [stem(t) for t in tokens(text)]
        # every run of the text's stems as long as some phrase, looked up once per phrase
        # (instead of sliding each phrase along the text)
        runs = {tuple(stems[i : i + width]) for width in self._widths
                for i in range(len(stems) - width + 1)}
        return [word for word, phrase in zip(self.words, self._phrases, strict=True)
                if phrase and phrase in runs]


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0
