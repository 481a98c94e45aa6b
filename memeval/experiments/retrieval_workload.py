"""What a retrieval replay searches and asks: a memory store and the queries replayed on it.

Two sources give the same `Workload`. A memory corpus (`dataset=locomo`, `longmemeval`,
`memory_jsonl`) is searched as it is. Any trace dataset is first written through the write gate
for `store_passes` passes (each but the last checkpointed, as a three-pass replay's); the
memories its last pass stored are the store, the labelled queries of `experiment.queries` search
it (their relevant entries mapped to the memories stored from them), and the traces' own user
prompts are unlabelled use.

Each query is searched over its `scope` and, when it carries the time it was asked, only over
memories written by then; its cosine and BM25 scores over that pool are computed once, since
they never change while the policies learn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np

from memeval.data.base import CorpusMemory, CorpusQuery, DatasetError, MemoryCorpus
from memeval.data.quality_sets import load_queries
from memeval.experiments.base import RunContext, replay
from memeval.experiments.checkpoint import PassRecord
from memeval.quality.bm25 import BM25
from memeval.quality.mqs import compute_mqs
from memeval.quality.rankers import Store
from memeval.quality.record import MemoryRecord
from memeval.quality.stored import StoredMQSConfig, records_from_store
from memeval.systems.base import Ingestor
from memeval.systems.reference.stored_quality import gate_confidences
from memeval.systems.reference.system import reference_ingestor

START = datetime(2026, 1, 1, tzinfo=UTC)  # the clock of a replay whose queries carry no time
EMBED_BATCH = 64  # texts per embedding call: how often the progress bar moves


@dataclass(frozen=True)
class Ask:
    """One query as replayed: the pool it searches and its scores there, fixed for the run."""

    id: str
    text: str
    vector: np.ndarray
    pool: np.ndarray  # store indices
    cosine: np.ndarray
    lexical: np.ndarray
    grades: dict[int, int]  # store index -> grade, over the pool; empty for unlabelled use
    asked_at: datetime | None
    category: str
    group: Any  # the scope it was drawn from (one graph per scope)


@dataclass
class Workload:
    source: dict[str, Any]  # what metrics.json says of where the store and queries came from
    memories: list[CorpusMemory]
    store: Store
    records: list[MemoryRecord]
    queries: list[Ask]  # labelled
    prompts: list[Ask]  # unlabelled use (a trace dataset's own prompts)
    unreachable: list[str]  # labelled queries none of whose relevant memories is searchable


def embedded(ctx: RunContext, texts: Sequence[str], what: str) -> np.ndarray:
    """`texts` embedded in batches of EMBED_BATCH, with a progress bar counting texts: a bar
    counting batches sits at 0/1 through the whole of a small set."""
    parts = []
    with ctx.bar(len(texts), f"embedding {what}", unit="text") as bar:
        for start in range(0, len(texts), EMBED_BATCH):
            parts.append(ctx.embedder.embed(list(texts[start : start + EMBED_BATCH])))
            bar.update(len(parts[-1]))
    return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)


def pool_of(query: CorpusQuery, memories: Sequence[CorpusMemory],
            index: dict[str, int]) -> np.ndarray:
    """The memories (indices) a query searches: its scope, and of those, when it carries the
    time it was asked, only the ones written by then. `index`: memory id → index."""
    pool = np.arange(len(memories)) if query.scope is None else \
        np.array([index[i] for i in query.scope], dtype=int)
    if query.asked_at is not None:
        pool = np.array([i for i in pool if memories[i].timestamp is None
                         or memories[i].timestamp <= query.asked_at], dtype=int)
    return pool


def _asks(queries: Sequence[CorpusQuery], vectors: np.ndarray, memory_vectors: np.ndarray,
          memories: Sequence[CorpusMemory], bm25: BM25,
          labelled: bool = True) -> tuple[list[Ask], list[str]]:
    """Each query's pool and scores; a labelled query none of whose relevant memories is in its
    pool is left out and named (it cannot score, whatever the policy)."""
    index = {m.id: i for i, m in enumerate(memories)}
    asks, unreachable = [], []
    for query, vector in zip(queries, vectors, strict=True):
        pool = pool_of(query, memories, index)
        available = set(pool.tolist())
        grades = {index[m]: g for m, g in query.relevant.items() if index[m] in available}
        if labelled and not grades:
            unreachable.append(query.id)
            continue
        asks.append(Ask(query.id, query.text, vector, pool, memory_vectors[pool] @ vector,
                        bm25.scores(query.text, pool), grades, query.asked_at, query.category,
                        query.scope))
    return asks, unreachable


def workload_of(ctx: RunContext, memories: list[CorpusMemory], vectors: np.ndarray,
                confidences: Sequence[float | None], queries: Sequence[CorpusQuery],
                prompts: Sequence[str], stored: StoredMQSConfig,
                source: dict[str, Any]) -> Workload:
    """The store's records and graph importance (MQS / 100), and every query's pool and scores."""
    records = records_from_store(memories, vectors, confidences, stored)
    importance = [compute_mqs(r, None, stored.mqs).score / 100.0 for r in records]
    bm25 = BM25([m.text for m in memories])
    query_vectors = embedded(ctx, [q.text for q in queries], "queries")
    prompt_vectors = embedded(ctx, list(prompts), "prompts")
    asks, unreachable = _asks(queries, query_vectors, vectors, memories, bm25)
    unlabelled = [CorpusQuery(f"prompt-{n}", text, {}) for n, text in enumerate(prompts)]
    prompt_asks, _ = _asks(unlabelled, prompt_vectors, vectors, memories, bm25, labelled=False)
    starts = [m.timestamp for m in memories if m.timestamp is not None]
    return Workload(source, memories,
                    Store([m.id for m in memories], vectors, importance,
                          min(starts) if starts else START),
                    records, asks, prompt_asks, unreachable)


def corpus_workload(ctx: RunContext, corpus: MemoryCorpus, stored: StoredMQSConfig) -> Workload:
    """A memory corpus searched as it is: no confidence was declared for its memories. A query
    with a gold answer and no evidence (memory QA's) has nothing to retrieve: left out."""
    vectors = embedded(ctx, [m.text for m in corpus.memories], "memories")
    queries = [q for q in corpus.queries if q.relevant]
    if not queries:
        raise DatasetError(f"{corpus.report.source}: no question names evidence to retrieve "
                           f"({len(corpus.queries)} have only a gold answer: "
                           f"+experiment=memory_qa reads them)")
    source = {"kind": "corpus", "name": corpus.name, "source": corpus.report.source,
              "fingerprint": corpus.fingerprint, "memories": len(corpus.memories),
              "queries": len(queries), "answer_only_queries": len(corpus.queries) - len(queries),
              "rows_read": corpus.report.rows_read,
              "skipped": corpus.report.skipped, "stats": corpus.report.stats,
              "problems": corpus.report.problems[:100]}
    return workload_of(ctx, corpus.memories, vectors,
                       [None] * len(corpus.memories), queries, [], stored, source)


def _store_pass(ctx: RunContext, gate: Ingestor, items: list[Any], pass_no: int) -> PassRecord:
    """One write-gate pass over the traces, from empty stores: its decisions."""
    gate.restart(wipe_memories=True)
    return PassRecord({}, replay(ctx, gate, items, pass_no, "eval", arm="store"))


def store_workload(ctx: RunContext, queries_path: str, on_error: str, store_passes: int,
                   trace_prompts: bool, stored: StoredMQSConfig) -> Workload:
    """The memories the last of `store_passes` write-gate passes stored, each a memory record
    carrying its write-time confidence, searched by the labelled queries."""
    entries = ctx.dataset.entries  # loaded and checked before the run holds anything to resume
    ctx.checkpoints.begin()  # a resume embeds only what the cache has not kept
    gate = reference_ingestor(ctx.system, ctx.run_dir / "state", "retrieval_replay")
    items = ctx.prepare(gate, entries)
    for pass_no in range(1, store_passes):
        ctx.checkpoints.run_pass(gate, f"store-pass-{pass_no}",
                                 partial(_store_pass, ctx, gate, items, pass_no))
    # the last pass's memories are held in memory only: it runs again on a resume, from the
    # stores and learning state the pass before it left
    ctx.checkpoints.restored(gate)
    decisions = _store_pass(ctx, gate, items, store_passes).decisions
    stored_memories = list(gate.memories.memories)
    by_entry = {d.entry_id: d for d in decisions}
    confidences = gate_confidences(gate, [by_entry[m.source_id].score for m in stored_memories])
    memories = [CorpusMemory(m.id, m.text, source=m.source_id) for m in stored_memories]
    memory_of = {m.source_id: m.id for m in stored_memories}
    labelled, report = load_queries(queries_path, on_error, ctx.dataset.names)  # its entries' names
    queries = [CorpusQuery(q.id, q.query, {memory_of[e]: g for e, g in q.relevant.items()
                                           if e in memory_of}, category=q.kind)
               for q in labelled]
    relevant = {e for q in labelled for e in q.relevant}
    source = {"kind": "three-pass store", "name": ctx.dataset.name,
              "fingerprint": ctx.dataset.fingerprint, "memories": len(memories),
              "store_passes": store_passes, "queries_file": report.source,
              "queries": len(labelled), "skipped": report.skipped,
              "problems": report.problems[:100],
              "relevant_entries": len(relevant),
              "relevant_entries_stored": len(relevant & set(memory_of))}
    prompts = [e.user_prompt for e in ctx.dataset.entries] if trace_prompts else []
    return workload_of(ctx, memories, gate.memories.vectors.copy(),
                       confidences, queries, prompts, stored, source)
