"""Quick pre-filter: an exact acknowledgement from the user AND a procedural assistant opener.

The reference daemon matches strings, not regexes; entries prefixed `re:` are regexes (full match
for acks, match at the start for openers) so users can extend the lists without code.
`narration_only` adds memeval's second rule: a response that is nothing but narration (every
sentence an interjection or a plan without a reason, see narration.py) is dropped whatever the
user said. Real sessions are mostly such turns ("Let me check the CMakeLists.txt:"), and many of
them are longer than the length gate's cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memeval.engine.gate.base import STAGES, Candidate, StageResult
from memeval.engine.gate.narration import Narration

REGEX_PREFIX = "re:"


@dataclass
class PrefilterConfig:
    acks: list[str] = field(default_factory=list)
    openers: list[str] = field(default_factory=list)
    ack_trailing: str = ".!"
    narration_only: bool = False

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

    def __init__(self, cfg: PrefilterConfig, narration: Narration | None = None) -> None:
        acks = [*cfg.acks, *(a + t for a in cfg.acks if not a.startswith(REGEX_PREFIX)
                             for t in cfg.ack_trailing)]
        self._is_ack = _Matcher(acks, whole=True)
        self._is_opener = _Matcher(cfg.openers, whole=False)
        self._narration = narration if cfg.narration_only else None

    def __call__(self, item: Candidate) -> StageResult:
        user = item.user_prompt.strip().lower()
        text = item.text.strip().lower()
        if bool(user) and self._is_ack(user) and self._is_opener(text):
            return StageResult(self.name, passed=False, detail="ack + procedural opener")
        if self._narration is not None and text and not self._narration.claims(item.text):
            return StageResult(self.name, passed=False, detail="narration only")
        return StageResult(self.name, passed=True)


@STAGES.register("prefilter", PrefilterConfig)
def build_prefilter(cfg: PrefilterConfig, *, narration: Narration | None = None,
                    **_: object) -> Prefilter:
    return Prefilter(cfg, narration)
