"""Features of one MAI scenario: the rubric's own terms and score, plus the signals it ignores.

The rubric reads confidence, creators, sessions and the provenance chain only. Labellers also
read who wrote a memory (a subagent), where it was learned (another namespace), how many
ancestors are missing or weak, and what the decision text says it rested on. Each feature is a
plain number, named, so a learned model over them can say which one moved a label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memeval.quality.mai import AttributedMemory, MAIRubric, evaluate_mai
from memeval.quality.words import Lexicon

RUBRIC_TERMS = ("no_memories", "attribution", "low_confidence", "mid_confidence",
                "mean_confidence", "sessions", "weak_chain", "truncated_chain", "corroboration")
FEATURES = (
    "rubric_score", *(f"term_{t}" for t in RUBRIC_TERMS),
    "memories", "hedged_share", "subagent_share", "unknown_creator_share", "no_session_share",
    "namespace_spread", "missing_ancestors", "weak_ancestors",
    "confidence_min", "confidence_mean", "confidence_max",
    "cited_share", "decision_relies", "decision_empty", "decision_hedged",
)
# What the decision text says. Read only where decisions name the memories they used: the
# development scenarios' convention, which a system's logs may not follow.
DECISION_TEXT = ("cited_share", "decision_relies", "decision_empty", "decision_hedged")
METADATA = tuple(name for name in FEATURES if name not in DECISION_TEXT)
_WORD = re.compile(r"[\w-]+")  # memory ids as the decision names them ("m1")


def names_a_memory(memories: Sequence[AttributedMemory], decision: str) -> bool:
    """Whether the decision text names one of the memories it was given, by id."""
    return bool({m.id for m in memories} & set(_WORD.findall(decision)))


@dataclass
class MAIFeatureWords:
    """Word lists for the decision-text signals (memeval/conf/experiment/mai_calibration.yaml)."""

    relies: list[str] = field(default_factory=list)  # the decision names what it relied on
    empty: list[str] = field(default_factory=list)  # retrieval was empty, ignored or set aside
    hedged: list[str] = field(default_factory=list)  # the decision hedges its own grounds
    subagent: list[str] = field(default_factory=list)  # creator names that mark a subagent

    def validate(self) -> None:
        for name in ("relies", "empty", "hedged", "subagent"):
            words = getattr(self, name)
            if not words or any(not str(w).strip() for w in words):
                raise ValueError(f"features.{name} must be a non-empty list of non-blank "
                                 f"phrases")


class MAIFeatures:
    """Turns a scenario (memories, ancestors, decision text) into the FEATURES vector."""

    def __init__(self, words: MAIFeatureWords, rubric: MAIRubric) -> None:
        self.rubric = rubric
        self.relies = Lexicon(words.relies)
        self.empty = Lexicon(words.empty)
        self.hedged = Lexicon(words.hedged)
        self.subagent = [w.strip().lower() for w in words.subagent]

    def __call__(self, memories: Sequence[AttributedMemory],
                 ancestors: Sequence[AttributedMemory], decision: str) -> dict[str, float]:
        rubric = self.rubric
        result = evaluate_mai(memories, ancestors, rubric)
        row = {"rubric_score": result.score,
               **{f"term_{t}": float(result.terms.get(t, 0.0)) for t in RUBRIC_TERMS}}
        n = len(memories)
        share = (lambda count: count / n) if n else (lambda count: 0.0)
        confidences = [rubric.missing_confidence if m.confidence is None else m.confidence
                       for m in memories]
        known = {m.id for m in [*memories, *ancestors]}
        parents = {p for m in [*memories, *ancestors] for p in m.derived_from}
        weak = [a for a in ancestors if a.confidence is None
                or a.confidence < rubric.low_confidence]
        words = set(_WORD.findall(decision))
        row.update({
            "memories": float(n),
            "hedged_share": share(sum(m.hedged for m in memories)),
            "subagent_share": share(sum(self._is_subagent(m.created_by) for m in memories)),
            "unknown_creator_share": share(sum(m.created_by is None for m in memories)),
            "no_session_share": share(sum(m.session_id is None for m in memories)),
            "namespace_spread": float(len({m.namespace for m in memories}) > 1),
            "missing_ancestors": float(len(parents - known)),
            "weak_ancestors": float(len(weak)),
            "confidence_min": min(confidences, default=0.0),
            "confidence_mean": sum(confidences) / n if n else 0.0,
            "confidence_max": max(confidences, default=0.0),
            "cited_share": share(sum(m.id in words for m in memories)),
            "decision_relies": float(bool(self.relies.found(decision))),
            "decision_empty": float(bool(self.empty.found(decision))),
            "decision_hedged": float(bool(self.hedged.found(decision))),
        })
        return row

    def _is_subagent(self, creator: str | None) -> bool:
        return creator is not None and any(w in creator.lower() for w in self.subagent)
