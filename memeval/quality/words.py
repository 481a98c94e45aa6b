"""Word matching for the conflict rules and relevance: tokens, crude stems, phrase lookup.

The reference implementation matches its word lists as substrings ("is" fires inside "this",
"not" inside "notable") and splits on whitespace only ("tea." is not "tea"). memeval matches
whole words by default: lower-cased `\\w+` tokens (apostrophes kept, so "isn't" is one word),
each reduced to a crude stem so "dislikes" matches "dislike". `substring=True` reproduces the
reference for comparison.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_TOKEN = re.compile(r"[\w']+")
_SUFFIXES = ("ing", "ed", "es", "s")


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

    def found(self, text: str) -> list[str]:
        """The list's entries the text uses (substrings of the raw text in reference mode)."""
        if self.substring:
            lowered = text.lower()
            return [w for w in self.words if w in lowered]
        stems = [stem(t) for t in tokens(text)]
        return [word for word, phrase in zip(self.words, self._phrases, strict=True)
                if phrase and _contains(stems, phrase)]


def _contains(stems: Sequence[str], phrase: Sequence[str]) -> bool:
    width = len(phrase)
    return any(tuple(stems[i : i + width]) == tuple(phrase) for i in range(len(stems) - width + 1))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0
