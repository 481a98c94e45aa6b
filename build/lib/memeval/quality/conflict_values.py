"""The values a memory states, read from its text: identifiers, numbers in one unit, versions,
hosts and ports, key = value pairs, switches, stance words and time cues.

A learned conflict detector compares these between two memories: "same key, other value" is a
semantic conflict, "same subject, opposite stance" a contradiction, a change cue a temporal one.
Every word list comes from config (`ConflictWords`); the code holds only the patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memeval.quality.words import Lexicon, stem, tokens

_BACKTICKED = re.compile(r"`([^`]+)`")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s`'\"),;]+", re.I)
_HOST = re.compile(r"\b(?:[a-z0-9-]+\.)+(?:[a-z]{2,}|internal|local)(?::\d+)?\b", re.I)
_PATH = re.compile(r"(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*|\b[\w-]+\.(?:md|py|ts|js|go|rs|toml|"
                   r"ya?ml|json|lock|sql|kt|swift|gradle|cfg|ini|txt|sh|env)\b")
_FLAG = re.compile(r"(?<![\w-])--?[a-z][\w-]*", re.I)
_ENV = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
_CASED = re.compile(r"\b(?:[a-z]+(?:[_-][a-z0-9]+)+|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)\b")
_DOTTED = re.compile(r"\b[a-z_]\w*(?:\.[a-z_]\w*)+\b", re.I)
_VERSION = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?(?:[-+][\w.]+)?\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*([a-z%]+)?", re.I)
_PORT = re.compile(r"\bport\s+(\d{2,5})\b|:(\d{2,5})\b", re.I)
_KEY_VALUE = re.compile(r"([\w.-]+)\s*(?:[=:]|\bis\b|\bare\b|\bset to\b|\buses\b)\s*"
                        r"([^\s,;]+)", re.I)
_CRON = re.compile(r"(?:[\d*/,-]+\s+){4}[\d*/,-]+")

# Each unit's factor to its base unit (ms, MB, %); unknown words are not units.
_UNITS = {"ms": ("ms", 1.0), "millisecond": ("ms", 1.0), "s": ("ms", 1e3), "sec": ("ms", 1e3),
          "second": ("ms", 1e3), "min": ("ms", 6e4), "minute": ("ms", 6e4),
          "h": ("ms", 3.6e6), "hour": ("ms", 3.6e6), "day": ("ms", 8.64e7),
          "week": ("ms", 6.048e8), "kb": ("MB", 1e-3), "mb": ("MB", 1.0), "mib": ("MB", 1.0),
          "gb": ("MB", 1e3), "gib": ("MB", 1024.0), "tb": ("MB", 1e6), "%": ("%", 1.0),
          "percent": ("%", 1.0)}


@dataclass
class ConflictWords:
    """The word lists value extraction reads; each antonym pair is [positive, negative]."""

    negations: list[str] = field(default_factory=list)
    antonyms: list[list[str]] = field(default_factory=list)
    switched_on: list[str] = field(default_factory=list)
    switched_off: list[str] = field(default_factory=list)
    current_cues: list[str] = field(default_factory=list)  # the memory states the newer fact
    past_cues: list[str] = field(default_factory=list)  # the memory states an older fact
    change_cues: list[str] = field(default_factory=list)  # the memory announces a change
    stopwords: list[str] = field(default_factory=list)
    # Words naming where a fact holds (environments, platforms, components): two memories about
    # different scopes may state different values without conflicting.
    scope_words: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if any(len(pair) != 2 for pair in self.antonyms):
            raise ValueError("each entry of antonyms must be a [positive, negative] pair")


@dataclass(frozen=True)
class MemoryValues:
    content: frozenset[str]  # content-word stems
    identifiers: frozenset[str]
    numbers: frozenset[str]  # "30000ms", "512MB", "5%" or a bare number
    versions: frozenset[str]
    places: frozenset[str]  # urls, hosts, ports, paths
    settings: dict[str, str]  # key -> value
    stance: dict[int, int]  # antonym pair index -> +1 (positive word) / -1 (negative word)
    switched: int  # +1 on, -1 off, 0 neither
    negated: int  # how many negation words
    current: bool
    past: bool
    change: bool
    scopes: frozenset[str] = frozenset()


def _number(value: str, unit: str | None) -> str:
    amount = float(value.replace(",", ""))
    key = (unit or "").lower()
    key = key[:-1] if key.endswith("s") and key[:-1] in _UNITS else key
    if key in _UNITS:
        base, factor = _UNITS[key]
        return f"{amount * factor:g}{base}"
    return f"{amount:g}"


class ValueReader:
    """Reads `MemoryValues` from memory texts with one set of word lists."""

    def __init__(self, words: ConflictWords) -> None:
        self.negations = Lexicon(words.negations)
        self.on, self.off = Lexicon(words.switched_on), Lexicon(words.switched_off)
        self.antonyms = [(Lexicon([p]), Lexicon([n])) for p, n in words.antonyms]
        self.current, self.past = Lexicon(words.current_cues), Lexicon(words.past_cues)
        self.change = Lexicon(words.change_cues)
        self.scopes = Lexicon(words.scope_words)
        cue_words = [*words.negations, *words.current_cues, *words.past_cues, *words.stopwords]
        self._ignored = {stem(t) for w in cue_words for t in tokens(w)}

    def read(self, text: str) -> MemoryValues:
        places = {m.group(0).lower().rstrip(".") for m in _URL.finditer(text)}
        places |= {m.group(0).lower().rstrip(".") for m in _HOST.finditer(text)
                   if not _VERSION.fullmatch(m.group(0))}
        places |= {m.group(0).rstrip(".") for m in _PATH.finditer(text) if "/" in m.group(0)
                   or "." in m.group(0)}
        places |= {f":{a or b}" for a, b in _PORT.findall(text)}
        places |= {" ".join(m.group(0).split()) for m in _CRON.finditer(text)}
        versions = {m.group(0).lower().lstrip("v") for m in _VERSION.finditer(text)}
        numbers = {_number(v, u) for v, u in _NUMBER.findall(text)
                   if not any(v in ver for ver in versions)}
        identifiers = {s.strip().lower() for s in _BACKTICKED.findall(text)}
        for pattern in (_FLAG, _ENV, _CASED, _DOTTED):
            identifiers |= {m.group(0).lower() for m in pattern.finditer(text)}
        identifiers -= versions
        settings = {k.lower(): v.lower().rstrip(".")
                    for k, v in _KEY_VALUE.findall(text.replace("`", ""))
                    if not k.isdigit() and not v.startswith("/")}
        stance = {}
        for index, (positive, negative) in enumerate(self.antonyms):
            pos, neg = bool(positive.found(text)), bool(negative.found(text))
            if pos != neg:
                stance[index] = 1 if pos else -1
        on, off = bool(self.on.found(text)), bool(self.off.found(text))
        return MemoryValues(
            content=frozenset(stem(t) for t in tokens(text)) - self._ignored,
            identifiers=frozenset(identifiers), numbers=frozenset(numbers),
            versions=frozenset(versions), places=frozenset(places), settings=settings,
            stance=stance, switched=int(on) - int(off), negated=len(self.negations.found(text)),
            current=bool(self.current.found(text)), past=bool(self.past.found(text)),
            change=bool(self.change.found(text)), scopes=frozenset(self.scopes.found(text)))
