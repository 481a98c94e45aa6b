"""Checks and redaction of a memory corpus (data/base.py): memories to search and labelled
queries that search them.

Retrieval replay reads one of these whatever it came from: memeval's own JSONL format
(`dataset=memory_jsonl`), a public benchmark's files (`dataset=locomo`, `dataset=longmemeval`),
or the store a three-pass write-gate run ended with. A query may be confined to a `scope` (the
memories of its own conversation, or its own haystack) and carry the time it was asked, so a
replay in time order searches only what existed by then.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from memeval.data.base import (
    CorpusMemory,
    CorpusQuery,
    DatasetError,
    LoadReport,
    MemoryCorpus,
    names_held,
    redacted_report,
    redacted_value,
)
from memeval.utils.redact import redact

GRADES = (1, 2)  # 2: the memory answers the query; 1: it helps
TEXTS = ("text", "category", "answer")  # served redacted as texts; every other string is a name


def checked_corpus(name: str, memories: Sequence[CorpusMemory], queries: Sequence[CorpusQuery],
                   report: LoadReport) -> MemoryCorpus:
    """The corpus, once its references hold: duplicate memory ids, a query whose relevant ids
    name no memory (or lie outside its own scope) and empty texts are refused here, with the
    ids, instead of scoring as misses later."""
    ids = [m.id for m in memories]
    if len(set(ids)) != len(ids):
        doubled = sorted(i for i, n in Counter(ids).items() if n > 1)[:5]
        raise DatasetError(f"{report.source}: duplicate memory ids {doubled}")
    known = set(ids)
    for q in queries:
        missing = sorted(set(q.relevant) - known)
        outside = sorted(set(q.relevant) - set(q.scope)) if q.scope is not None else []
        if missing or outside:
            raise DatasetError(f"{report.source}: query '{q.id}' names relevant memories "
                               f"{(missing or outside)[:5]} that are not "
                               f"{'in the corpus' if missing else 'in its scope'}")
        if q.scope is not None and set(q.scope) - known:
            raise DatasetError(f"{report.source}: query '{q.id}' scopes unknown memories "
                               f"{sorted(set(q.scope) - known)[:5]}")
        if any(g not in GRADES for g in q.relevant.values()) or not (q.relevant
                                                                      or q.answerable):
            raise DatasetError(f"{report.source}: query '{q.id}' needs relevant memories "
                               f"graded {' or '.join(map(str, GRADES))}, or a gold answer")
    if not memories or not queries:
        raise DatasetError(f"{report.source}: a corpus needs memories and queries "
                           f"({len(memories)} memories, {len(queries)} queries usable)")
    return MemoryCorpus(name, list(memories), list(queries), report)


def redacted_corpus(corpus: MemoryCorpus) -> MemoryCorpus:
    """Texts, names and load problems redacted before anything is embedded, searched or written:
    the run's tables, spans and console, and the system under test, see memories and queries as
    they are served. Ids, sessions, sources and metadata are redacted one to one
    (`RedactedNames`), so every reference still holds; a category (a benchmark's question type)
    like a text."""
    texts = dict.fromkeys(TEXTS, redact)
    names = names_held([*corpus.memories, *corpus.queries], texts)
    return MemoryCorpus(redact(corpus.name),
                        [redacted_value(m, names, texts) for m in corpus.memories],
                        [redacted_value(q, names, texts) for q in corpus.queries],
                        redacted_report(corpus.report))
