"""What two memories have in common and where they differ, as numbers a classifier can weigh,
and which of two memories supersedes the other.

Each feature answers one question a reviewer asks of a pair: same subject? same slot with
another value? opposite stance? framed as a change, and on which side?
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date
from difflib import SequenceMatcher

from memeval.quality.conflict_values import MemoryValues
from memeval.quality.words import jaccard


@dataclass(frozen=True)
class ConflictSide:
    """One side of a candidate conflict, as the detector reads it: its text and, when known,
    when and where it was written."""

    content: str
    timestamp: str | None = None  # ISO date or datetime
    path: str | None = None


FEATURES = (
    "content_jaccard", "shared_content", "identifier_jaccard", "shared_identifiers", "cosine",
    "numbers_differ", "numbers_same", "versions_differ", "versions_same", "places_differ",
    "places_same", "setting_differs", "setting_same", "stance_flip", "stance_same",
    "switch_flip", "negation_asymmetry", "both_negated", "current_cues", "past_cues",
    "change_cues", "cue_one_side", "cue_on_later_side", "log_days_apart", "same_path",
    "containment", "unique_both", "swap", "scope_differs", "scope_same",
)


def day_of(stamp: str | None) -> date | None:
    """The date an ISO timestamp names, or None when there is none."""
    if not stamp:
        return None
    try:
        return date.fromisoformat(stamp[:10])
    except ValueError:
        return None


def _cue(values: MemoryValues) -> int:
    """How strongly a memory presents itself as the current state (negative: the older one)."""
    return int(values.current) + int(values.change) - int(values.past)


def _differ(x: frozenset[str], y: frozenset[str]) -> float:
    """Both state a value of this kind and neither's values contain the other's."""
    return float(bool(x) and bool(y) and not (x <= y or y <= x))


def newer_side(a: MemoryValues, b: MemoryValues, ma: ConflictSide, mb: ConflictSide) -> str:
    """Which memory supersedes: the one whose wording presents it as current, else the later
    timestamp, else b (the one read second)."""
    cue_a, cue_b = _cue(a), _cue(b)
    if cue_a != cue_b:
        return "a" if cue_a > cue_b else "b"
    day_a, day_b = day_of(ma.timestamp), day_of(mb.timestamp)
    if day_a and day_b and day_a != day_b:
        return "a" if day_a > day_b else "b"
    return "b"


def pair_features(a: MemoryValues, b: MemoryValues, ma: ConflictSide, mb: ConflictSide,
                  cosine: float = 0.0) -> list[float]:
    """One row in FEATURES order; symmetric in a and b."""
    shared_keys = set(a.settings) & set(b.settings)
    shared_stance = set(a.stance) & set(b.stance)
    day_a, day_b = day_of(ma.timestamp), day_of(mb.timestamp)
    days = abs((day_a - day_b).days) if day_a and day_b else 0
    cue_a, cue_b = _cue(a) > 0, _cue(b) > 0
    later = (day_a > day_b) if day_a and day_b and day_a != day_b else None
    cue_on_later = float(later is not None and cue_a != cue_b and cue_a == later)
    return [
        jaccard(set(a.content), set(b.content)),
        float(min(len(a.content & b.content), 10)),
        jaccard(set(a.identifiers), set(b.identifiers)),
        float(min(len(a.identifiers & b.identifiers), 5)),
        cosine,
        _differ(a.numbers, b.numbers), float(bool(a.numbers & b.numbers)),
        _differ(a.versions, b.versions), float(bool(a.versions & b.versions)),
        _differ(a.places, b.places), float(bool(a.places & b.places)),
        float(any(a.settings[k] != b.settings[k] for k in shared_keys)),
        float(any(a.settings[k] == b.settings[k] for k in shared_keys)),
        float(any(a.stance[k] != b.stance[k] for k in shared_stance)),
        float(any(a.stance[k] == b.stance[k] for k in shared_stance)),
        float(a.switched * b.switched < 0),
        float((a.negated > 0) != (b.negated > 0)),
        float(a.negated > 0 and b.negated > 0),
        float(a.current) + float(b.current),
        float(a.past) + float(b.past),
        float(a.change) + float(b.change),
        float(cue_a != cue_b),
        cue_on_later,
        math.log1p(days),
        float(ma.path is not None and ma.path == mb.path),
        *_difference(a, b),
        float(bool(a.scopes) and bool(b.scopes) and not a.scopes & b.scopes),
        float(bool(a.scopes & b.scopes)),
    ]


def _difference(a: MemoryValues, b: MemoryValues) -> tuple[float, float, float]:
    """How the two memories' words differ: the share of the shorter one the longer repeats (a
    paraphrase or an addition repeats all of it), how many words each says that the other does
    not, and whether that is a small one-for-one swap (X is main / X is develop)."""
    shared = len(a.content & b.content)
    only_a, only_b = len(a.content - b.content), len(b.content - a.content)
    shorter = min(len(a.content), len(b.content))
    containment = shared / shorter if shorter else 0.0
    swap = float(1 <= only_a <= 3 and 1 <= only_b <= 3) * containment
    return containment, float(min(only_a, only_b, 10)), swap


EDIT_FEATURES = ("unchanged_share", "replaced_spans", "only_added_or_dropped", "code_replaced")
_EDIT_TOKEN = re.compile(r"`[^`]+`|[\w./:@=-]+")


def _code_like(token: str) -> bool:
    """A name a reader takes as a value: backticked, a path, a flag, a dotted or snake name."""
    return token.startswith(("`", "-")) or any(c in token for c in "/._=@:") or \
        any(c.isdigit() for c in token)


def edit_features(a: str, b: str) -> list[float]:
    """How one memory's words turn into the other's, in order (EDIT_FEATURES): the share of the
    longer left unchanged, how many spans were replaced (not added or dropped), whether words
    were only added or dropped (added detail), and whether a replaced span holds a code-like
    value. One value swapped inside an otherwise unchanged entry is how real teams rewrite a
    memory file; a paraphrase replaces many spans, an elaboration only adds."""
    left, right = _EDIT_TOKEN.findall(a.lower()), _EDIT_TOKEN.findall(b.lower())
    ops = SequenceMatcher(None, left, right, autojunk=False).get_opcodes()
    unchanged = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
    replaced = [left[i1:i2] + right[j1:j2] for tag, i1, i2, j1, j2 in ops if tag == "replace"]
    changed = any(tag != "equal" for tag, *_ in ops)
    return [unchanged / max(len(left), len(right), 1), float(min(len(replaced), 5)),
            float(changed and not replaced),
            float(any(_code_like(token) for span in replaced for token in span))]
