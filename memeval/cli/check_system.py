"""`python -m memeval check system=NAME`: a memory system put through each capability it
declares, on a little of the bundled data, with every answer outside the protocol named (an
unknown outcome, an id never given, a score out of range, an unknown conflict type). Exit 1 when
anything is wrong, so a plugin's CI can run it; a run refuses the same answers as it meets them.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

DESCRIPTION = "put a memory system through each capability it declares, naming any answer " \
              "outside the protocol (docs/protocol.md)"
SAMPLE = 40  # items per capability: enough to meet each kind of answer, seconds to run


@dataclass
class Checked:
    capability: str
    items: int = 0
    problems: list[str] | None = None

    def line(self) -> str:
        if self.problems is None:
            return f"{self.capability:<16} not declared"
        state = "ok" if not self.problems else f"{len(self.problems)} problem(s)"
        return f"{self.capability:<16} {state} ({self.items} checked)"


def _collect(check: Callable[[], object], problems: list[str]) -> None:
    from memeval.metrics.gate_metrics import SystemFailure

    try:
        check()
    except (SystemFailure, ValueError, TypeError, KeyError, AttributeError,
            NotImplementedError) as err:
        problems.append(f"{type(err).__name__}: {err}")


def _ingest(ctx: Any, system: Any, capabilities: set[str], out: dict[str, Checked]) -> None:
    from memeval.metrics.gate_metrics import check_outcome

    entries = ctx.dataset.entries[:SAMPLE]
    ids = {e.id for e in entries}
    found = out["ingest"]
    problems: list[str] = []
    ingestor = system.ingestor(ctx.run_dir / "state")
    items = ingestor.prepare(entries)
    for decision in ingestor.run_pass(items, 1):
        found.items += 1
        _collect(partial(check_outcome, decision, system.name), problems)
        if decision.entry_id not in ids:
            problems.append(f"decision for entry {decision.entry_id!r}, which was not given")
        if not isinstance(decision.retained, bool | np.bool_):
            problems.append(f"entry {decision.entry_id!r}: retained is "
                            f"{type(decision.retained).__name__}, not a bool")
    if found.items != len(entries):
        problems.append(f"{found.items} decisions for {len(entries)} turns")
    found.problems = problems
    if "reset_memories" in capabilities:
        out["reset_memories"].problems = []
        _collect(lambda: ingestor.restart(wipe_memories=True), out["reset_memories"].problems)
        out["reset_memories"].items = 1
    if "freeze_learning" in capabilities:
        frozen = out["freeze_learning"]
        frozen.problems = []

        def replay_frozen() -> None:
            ingestor.learning = False
            frozen.items = sum(1 for _ in ingestor.run_pass(items, 2, "eval"))

        _collect(replay_frozen, frozen.problems)


def _score(system: Any, out: Checked) -> None:
    from memeval.data.quality_sets import load_memory_records
    from memeval.paths import data_path

    records = [item.record for item in load_memory_records(
        data_path("mqs/memory_records_v1.jsonl"))[0]]
    out.problems, out.items = [], len(records)
    scores: list[Any] = []
    _collect(lambda: scores.extend(system.score_records(records)), out.problems)
    if scores and len(scores) != len(records):
        out.problems.append(f"{len(scores)} scores for {len(records)} records")
    for record, score in zip(records, scores, strict=False):
        if not isinstance(score, int | float) or not math.isfinite(score) \
                or not 0.0 <= score <= 100.0:
            out.problems.append(f"record {record.id!r}: score {score!r} is not a number in "
                                f"[0, 100] (MQS's scale)")


def _conflicts(system: Any, out: Checked) -> None:
    from memeval.data.quality_sets import load_conflict_pairs
    from memeval.paths import data_path
    from memeval.systems.base import conflict_answer

    pairs = load_conflict_pairs(data_path("conflicts/memory_pairs_v1.jsonl"))[0][:SAMPLE]
    out.problems, out.items = [], len(pairs)
    def answer(a: str, b: str, where: str) -> str:
        return conflict_answer(system, system.detect_conflict(a, b), where)

    for pair in pairs:
        _collect(partial(answer, pair.a.content, pair.b.content, f"pair '{pair.id}'"),
                 out.problems)


@dataclass(frozen=True)
class _Query:
    id: str
    text: str
    pool: np.ndarray


def _search(system: Any, capabilities: set[str], out: dict[str, Checked]) -> None:
    from memeval.data.labeled_jsonl import load_labeled_jsonl
    from memeval.data.quality_sets import load_queries
    from memeval.experiments.system_search import checked_hits
    from memeval.paths import data_path
    from memeval.systems.base import IndexedMemory

    rows = [e for e in load_labeled_jsonl(data_path("labeled/write_gate_v1.jsonl")).entries
            if e.label == "substantive"][:SAMPLE]
    memories = [IndexedMemory(e.id, e.assistant_response) for e in rows]
    known = {m.id: i for i, m in enumerate(memories)}
    queries = load_queries(data_path("retrieval/queries_v1.jsonl"))[0][:SAMPLE]
    found, problems = out["search"], list[str]()
    found.problems, found.items = problems, len(queries)
    _collect(partial(system.index, memories), problems)
    served: list[str] = []
    for query in queries:
        asked = _Query(query.id, query.query, np.arange(len(memories)))

        def ask(q: _Query = asked) -> None:
            hits = system.search(q.text, 5)
            if len(hits) > 5:
                problems.append(f"query {q.id!r}: {len(hits)} results for k=5 (memeval keeps "
                                f"the first 5)")
            served.extend(h.id for h in checked_hits(system, q, hits, known, 5))

        _collect(ask, problems)
    if "feedback" in capabilities and served:
        out["feedback"].problems, out["feedback"].items = [], 1
        _collect(lambda: system.record_outcome(served[0], True), out["feedback"].problems)


def check(overrides: Sequence[str]) -> tuple[str, list[Checked]]:
    """The system's name and what each capability's check found."""
    from memeval.config import compose, expand_targets, quote_values, validate
    from memeval.experiments.base import RunContext
    from memeval.systems.base import Capability

    args = quote_values(expand_targets(["+experiment=three_pass", *overrides]))
    cfg = compose(args)
    with tempfile.TemporaryDirectory(prefix="memeval-check-") as folder:
        ctx = RunContext(cfg, Path(folder), validate(cfg))
        system = ctx.system
        try:
            capabilities = {str(c) for c in system.capabilities}
            out = {str(c): Checked(str(c)) for c in Capability}
            if "ingest" in capabilities:
                _ingest(ctx, system, capabilities, out)
            if "score_records" in capabilities:
                _score(system, out["score_records"])
            if "detect_conflicts" in capabilities:
                _conflicts(system, out["detect_conflicts"])
            if "search" in capabilities:
                _search(system, capabilities, out)
        finally:
            system.close()
    return system.name, list(out.values())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval check", description=DESCRIPTION)
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="the system and its settings as for run, e.g. system=memledger, "
                             "system=my_memory:build, embedder=hashing")
    options = parser.parse_args(argv)
    from memeval.user_errors import report_user_error, user_error_types

    try:
        name, found = check(options.overrides)
    except user_error_types() as err:
        report_user_error(err)
        return 2
    print(f"system {name}: the protocol, capability by capability (docs/protocol.md)")
    for item in found:
        print(item.line())
        for problem in (item.problems or [])[:20]:
            print(f"  {problem}")
    return 1 if any(item.problems for item in found) else 0
