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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from memeval.data.base import (
    CorpusMemory,
    CorpusQuery,
    DatasetError,
    LoadReport,
    MemoryCorpus,
    RedactedNames,
    redacted_report,
)
from memeval.utils.redact import redact

GRADES = (1, 2)  # 2: the memory answers the query; 1: it helps


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
    they are served. Ids, sessions and sources are redacted one to one (`RedactedNames`), so
    every reference still holds; a category (a benchmark's question type) like a text."""
    names = RedactedNames(_names(corpus))
    memories = [replace(m, id=names(m.id), text=redact(m.text),
                        session=None if m.session is None else names(m.session),
                        source=None if m.source is None else names(m.source),
                        metadata=_redacted_value(m.metadata, names))
                for m in corpus.memories]
    queries = [replace(q, id=names(q.id), text=redact(q.text),
                       relevant={names(m): grade for m, grade in q.relevant.items()},
                       category=redact(q.category),
                       scope=None if q.scope is None else tuple(map(names, q.scope)),
                       answer=None if q.answer is None else redact(q.answer))
               for q in corpus.queries]
    return MemoryCorpus(redact(corpus.name), memories, queries, redacted_report(corpus.report))


def _names(corpus: MemoryCorpus) -> Iterator[str]:
    for m in corpus.memories:
        yield m.id
        yield from (name for name in (m.session, m.source) if name is not None)
    yield from (q.id for q in corpus.queries)


def _redacted_value(value: Any, names: RedactedNames) -> Any:
    """A memory's metadata with every string in it redacted as a name (`sample_id`, `dia_id`)."""
    if isinstance(value, str):
        return names(value)
    if isinstance(value, Mapping):
        return {key: _redacted_value(item, names) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted_value(item, names) for item in value]
    return value
