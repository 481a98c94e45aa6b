"""What a turn claims once its narration is set aside.

Real Claude Code turns wrap findings in talk: an interjection ("Perfect!", "Now I understand!")
before, a plan ("Let me fix it.", "I'll run the tests:") after. A finding such as "The issue is
the double backslash in the QED symbol." is then a third of the text, and a gate reading the whole
turn sees mostly narration. `Narration.claims` keeps the sentences that are not narration, with
leading interjections cut off; a turn with no such sentence says nothing but narration.

A sentence is narration when it starts (after optional lead words such as "now", "first") with a
plan phrase, unless it gives a reason (a `rationale` word): "I'll pin numpy because 2.0 breaks the
ABI" records a decision. Real sessions also narrate in the imperative ("Now update the lane
logic.", "Fix the `else if` in both places:"): an `actions` verb opening a sentence is a plan when
a lead word comes before it or a colon ends the sentence (without either, "Add" could open a
finding). A `status` phrase opening a sentence reports a tool's outcome ("All tests pass.",
"Build passes, lint clean."), which is narration too. The list a plan announces ("I'll check a
few things:" then "- the pod's events") is the plan's steps, so narration too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

# Texts whose claims are remembered: a replay's passes and every rebuild of the content scorer's
# learning window read the same texts again.
CLAIMS_KEPT = 4096
# after . ! ? or : (not a list number such as "1."), within a line
SENTENCE_BREAK = re.compile(r"(?<=[.!?:])(?<!\b\d\.)\s+")
LIST_ITEM = re.compile(r"^\s*([-*•]|\d+[.)])\s")


def _words(options: list[str]) -> str:
    """A regex alternation of literal phrases, longest first, spaces matching any whitespace."""
    phrases = sorted({o.strip().lower() for o in options if o.strip()}, key=len, reverse=True)
    return "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in phrases)


@dataclass
class NarrationConfig:
    # Cut from a sentence's start when followed by punctuation ("Perfect!", "Now I see,").
    interjections: list[str] = field(default_factory=list)
    # Words that may precede a plan phrase ("Now let me", "First, I'll").
    lead_words: list[str] = field(default_factory=list)
    # A sentence starting with one of these states a plan, not a finding.
    plans: list[str] = field(default_factory=list)
    # Imperative verbs: a plan after a lead word ("Now update…") or before a colon ("Fix it:").
    actions: list[str] = field(default_factory=list)
    # A sentence starting with one of these reports a tool's outcome ("All tests pass").
    status: list[str] = field(default_factory=list)
    # A plan or status sentence with one of these gives a reason, so it is kept.
    rationale: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if not self.plans:
            raise ValueError("narration.plans is empty: nothing would count as narration")


class Narration:
    def __init__(self, cfg: NarrationConfig) -> None:
        interjection = _words(cfg.interjections)
        self._interjection = re.compile(
            rf"^[\W_]*((now\s+)?({interjection})\s*([!.,:;]|\s[-–—])[\W_]*)+", re.IGNORECASE
        ) if interjection else None
        lead = _words(cfg.lead_words)
        one_lead = rf"(({lead})[,!]?\s+)"
        leads = f"{one_lead}*" if lead else ""
        self._plan = re.compile(rf"^[\W_]*{leads}({_words(cfg.plans)})\b", re.IGNORECASE)
        actions = _words(cfg.actions)
        self._led_action = re.compile(rf"^[\W_]*{one_lead}+({actions})\b",
                                      re.IGNORECASE) if actions and lead else None
        self._action = re.compile(rf"^[\W_]*({actions})\b.*:$", re.IGNORECASE | re.DOTALL) \
            if actions else None
        status = _words(cfg.status)
        self._status = re.compile(rf"^[\W_]*{leads}({status})\b", re.IGNORECASE) \
            if status else None
        reason = _words(cfg.rationale)
        self._reason = re.compile(rf"\b({reason})\b", re.IGNORECASE) if reason else None
        self._claimed = lru_cache(maxsize=CLAIMS_KEPT)(self._claims)

    def _strip(self, sentence: str) -> str:
        if self._interjection is None:
            return sentence.strip()
        return self._interjection.sub("", sentence).strip()

    def is_plan(self, sentence: str, ends_line: bool = True) -> bool:
        """A plan (stated or imperative) or a status report, without a reason. An imperative
        closed by a colon is a plan only at the end of its line ("Fix it in both places:" then a
        tool call), not when the line goes on ("Run `make gen` first: the mocks are not
        committed.")."""
        action = self._action if ends_line else None
        narrated = any(pattern is not None and pattern.match(sentence) for pattern in (
            self._plan, self._led_action, action, self._status))
        return narrated and not (self._reason is not None and self._reason.search(sentence))

    def claims(self, text: str) -> str:
        """The text's non-narration sentences, interjections cut, joined by spaces."""
        return self._claimed(text)

    def _claims(self, text: str) -> str:
        kept: list[str] = []
        in_plan_list = False
        for line in text.splitlines():
            if not line.strip() or (in_plan_list and LIST_ITEM.match(line)):
                continue
            in_plan_list = False
            parts = SENTENCE_BREAK.split(line)
            for index, sentence in enumerate(self._strip(part) for part in parts):
                if not any(c.isalnum() for c in sentence) or (
                        in_plan_list and LIST_ITEM.match(sentence)):
                    continue
                if self.is_plan(sentence, ends_line=index == len(parts) - 1):
                    in_plan_list = sentence.endswith(":")
                else:
                    kept.append(sentence)
                    in_plan_list = False
        return " ".join(kept)


# What of a turn a stage reads: the whole text, or its claims ("" when it is all narration).
VIEWS: dict[str, Callable[[Narration, str], str]] = {
    "whole": lambda narration, text: text,
    "claims": lambda narration, text: narration.claims(text),
}


def check_view(view: str) -> None:
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, got '{view}'")
