"""A memory store with confidence, citations, conflicts and a transparent `min_confidence` search.

What the openclaw document promises, with its reference code's faults fixed:
- a conflict penalty is kept with the memory, not lost when a search refreshes its confidence;
- relevance (word Jaccard with the query) is applied once;
- when no result reaches `min_confidence`, the search falls back to 0 and says so
  (`fallback.used` with its reason) whenever the fallback served, not only when it found nothing.
With `compat` (the confidence weights' flag) the store reproduces all three faults.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memeval.quality.confidence import ConfidenceWeights, confidence
from memeval.quality.conflicts import Conflict, ConflictDetector, ConflictPenalties
from memeval.quality.words import jaccard, tokens


def version_hash(path: str, line_start: int, content: str) -> str:
    """First 8 hex digits of sha256("path:line_start:content"): changes when the cited text does."""
    return hashlib.sha256(f"{path}:{line_start}:{content}".encode()).hexdigest()[:8]


def semantic_hash(content: str) -> str:
    """16 hex digits over the normalised text (case and spacing ignored): spots restatements."""
    normalised = re.sub(r"\s+", " ", content.lower()).strip()
    return hashlib.sha256(normalised.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Citation:
    path: str
    line_start: int
    line_end: int
    excerpt: str
    version_hash: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line_start": self.line_start, "line_end": self.line_end,
                "excerpt": self.excerpt, "version_hash": self.version_hash}


@dataclass
class CitedMemory:
    id: str
    content: str
    source_type: str
    created_at: datetime
    citation: Citation | None = None
    tags: list[str] = field(default_factory=list)
    access_count: int = 0
    penalty: float = 0.0  # from conflicts, capped; kept across searches
    conflicts: list[tuple[str, Conflict]] = field(default_factory=list)

    @property
    def path(self) -> str | None:
        return self.citation.path if self.citation else None


@dataclass
class SearchResult:
    query: str
    results: list[dict[str, Any]]
    fallback_used: bool
    fallback_reason: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "results": self.results,
                "fallback": {"used": self.fallback_used, "reason": self.fallback_reason}}


class CitedMemoryStore:
    def __init__(self, weights: ConfidenceWeights, detector: ConflictDetector,
                 penalties: ConflictPenalties) -> None:
        self.weights, self.detector, self.penalties = weights, detector, penalties
        self.memories: list[CitedMemory] = []

    def confidence(self, memory: CitedMemory, now: datetime) -> float:
        own = confidence(self.weights, memory.source_type, memory.created_at, now,
                         memory.access_count, memory.citation is not None).value
        return max(0.0, own - memory.penalty)

    def add(self, content: str, *, source_type: str, now: datetime, path: str | None = None,
            line_start: int = 0, line_end: int = 0, excerpt: str | None = None,
            tags: list[str] | None = None) -> tuple[CitedMemory, list[Conflict]]:
        """Store a memory; conflicts with earlier ones penalise both sides, the better-supported
        one by half."""
        citation = None if path is None else Citation(
            path, line_start, line_end or line_start, excerpt if excerpt is not None else content,
            version_hash(path, line_start, content))
        memory = CitedMemory(f"mem-{len(self.memories)}", content, source_type, now, citation,
                             list(tags or []))
        found = []
        for other in self.memories:
            same_source = memory.path is not None and memory.path == other.path
            conflict = self.detector.detect(other.content, content, same_source)
            if conflict is None:
                continue
            found.append(conflict)
            mine, theirs = self.confidence(memory, now), self.confidence(other, now)
            self._penalise(memory, conflict, other.id, higher=mine > theirs)
            self._penalise(other, conflict, memory.id, higher=theirs > mine)
        self.memories.append(memory)
        return memory, found

    def _penalise(self, memory: CitedMemory, conflict: Conflict, other_id: str,
                  higher: bool) -> None:
        memory.conflicts.append((other_id, conflict))
        memory.penalty = min(self.penalties.cap,
                             memory.penalty + self.penalties.of(conflict.kind, higher))

    def _relevance(self, query: str, content: str) -> float:
        whitespace = self.weights.compat
        return jaccard(set(tokens(query, whitespace)), set(tokens(content, whitespace)))

    def _hits(self, query: str, min_confidence: float, now: datetime) -> list[dict[str, Any]]:
        hits = []
        for memory in self.memories:
            relevance = self._relevance(query, memory.content)
            if relevance <= 0.0:
                continue
            own = self.confidence(memory, now)
            if self.weights.compat:  # relevance folded into confidence, then applied again
                own = own * relevance
            if own < min_confidence:
                continue
            hits.append({"id": memory.id, "content": memory.content,
                         "confidence": round(own, 4), "relevance_score": round(relevance, 4),
                         "combined_score": round(own * relevance, 4),
                         "citation": memory.citation.as_dict() if memory.citation else None,
                         "source_type": memory.source_type,
                         "conflicts": [{"with": other, "type": str(c.kind),
                                        "resolution": c.resolution}
                                       for other, c in memory.conflicts]})
        return sorted(hits, key=lambda h: h["combined_score"], reverse=True)

    def search(self, query: str, now: datetime, min_confidence: float = 0.0,
               max_results: int = 5) -> SearchResult:
        """Ranked by confidence × relevance; every memory returned counts one access."""
        hits = self._hits(query, min_confidence, now)
        used, reason = False, None
        if not hits and min_confidence > 0.0:
            hits = self._hits(query, 0.0, now)
            used = True
            reason = (f"no result reached min_confidence {min_confidence}; showing results at "
                      f"min_confidence 0" if hits else
                      f"no result reached min_confidence {min_confidence}, and none is relevant "
                      f"at any confidence")
            if self.weights.compat:  # the reference reports the fallback only when it found none
                used = not hits
                reason = reason if used else None
        hits = hits[:max_results]
        by_id = {m.id: m for m in self.memories}
        for hit in hits:
            memory = by_id[hit["id"]]
            memory.access_count += 1
            if self.weights.compat:  # the reference overwrites the stored confidence on a hit
                memory.penalty = 0.0
        return SearchResult(query, hits, used, reason)
