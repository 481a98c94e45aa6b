"""Quick pre-filter: an exact acknowledgement from the user AND a procedural assistant opener.

The reference daemon matches strings, not regexes; entries prefixed `re:` are regexes (full match
for acks, match at the start for openers) so users can extend the lists without code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memeval.engine.gate.base import STAGES, Candidate, StageResult

REGEX_PREFIX = "re:"


@dataclass
class PrefilterConfig:
    acks: list[str] = field(default_factory=list)
    openers: list[str] = field(default_factory=list)
    ack_trailing: str = ".!"

    def validate(self) -> None:
        for entry in [*self.acks, *self.openers]:
            if entry.startswith(REGEX_PREFIX):
                try:
                    re.compile(entry[len(REGEX_PREFIX):])
                except re.error as err:
                    raise ValueError(f"bad regex entry {entry!r}: {err}") from None


class _Matcher:
    def __init__(self, entries: list[str], whole: bool) -> None:
        self.literals = [e.lower() for e in entries if not e.startswith(REGEX_PREFIX)]
        self.patterns = [re.compile(e[len(REGEX_PREFIX):], re.IGNORECASE)
                         for e in entries if e.startswith(REGEX_PREFIX)]
        self.whole = whole

    def __call__(self, text: str) -> bool:
        if self.whole:
            return text in self.literals or any(p.fullmatch(text) for p in self.patterns)
        return text.startswith(tuple(self.literals)) or any(p.match(text) for p in self.patterns)


class Prefilter:
    name = "prefilter"

    def __init__(self, cfg: PrefilterConfig) -> None:
        acks = [*cfg.acks, *(a + t for a in cfg.acks if not a.startswith(REGEX_PREFIX)
                             for t in cfg.ack_trailing)]
        self._is_ack = _Matcher(acks, whole=True)
        self._is_opener = _Matcher(cfg.openers, whole=False)

    def __call__(self, item: Candidate) -> StageResult:
        user = item.user_prompt.strip().lower()
        text = item.text.strip().lower()
        fired = bool(user) and self._is_ack(user) and self._is_opener(text)
        return StageResult(self.name, passed=not fired,
                           detail="ack + procedural opener" if fired else "")


@STAGES.register("prefilter", PrefilterConfig)
def build_prefilter(cfg: PrefilterConfig, **_: object) -> Prefilter:
    return Prefilter(cfg)
