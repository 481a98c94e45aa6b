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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy loads only once a check runs, not for --help
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
        if not self.problems and not self.items:
            return f"{self.capability:<16} not checked: a step before it failed"
        state = "ok" if not self.problems else f"{len(self.problems)} problem(s)"
        return f"{self.capability:<16} {state} ({self.items} checked)"


def _collect(check: Callable[[], object], problems: list[str]) -> None:
    """Whatever the system's code raises is a problem to name, not the check's end."""
    try:
        check()
    except Exception as err:  # the system's own code: any error it raises is reported
        problems.append(f"{type(err).__name__}: {err}")


def _problems(found: Checked) -> list[str]:
    """A declared capability's list of problems (created with its Checked)."""
    assert found.problems is not None
    return found.problems


CHECKPOINTED = ("state_dir", "learning", "stores", "learning_state", "restore_learning_state")


def _ingest(ctx: Any, system: Any, capabilities: set[str], out: dict[str, Checked]) -> None:
    import numpy as np

    from memeval.metrics.gate_metrics import check_outcome

    entries = ctx.dataset.entries[:SAMPLE]
    ids = {e.id for e in entries}
    found = out["ingest"]
    problems = _problems(found)
    ingestor = system.ingestor(ctx.run_dir / "state")
    missing = [a for a in CHECKPOINTED if not hasattr(ingestor, a)]
    if missing:
        problems.append(f"the ingestor has no {', '.join(missing)}: memeval saves each pass "
                        f"with them (subclass KeepsItsOwnState when there is nothing to save; "
                        f"docs/protocol.md)")
    items = ingestor.prepare(entries)
    if not isinstance(items, list) or len(items) != len(entries):
        problems.append(f"prepare() returned {type(items).__name__}"
                        + (f" of {len(items)}" if isinstance(items, list) else "")
                        + f" for {len(entries)} entries: it returns a list, one item per entry")
        return
    for decision in ingestor.run_pass(items, 1, "eval"):
        found.items += 1
        _collect(partial(check_outcome, decision, system.name), problems)
        if decision.entry_id not in ids:
            problems.append(f"decision for entry {decision.entry_id!r}, which was not given")
        if not isinstance(decision.retained, bool | np.bool_):
            problems.append(f"entry {decision.entry_id!r}: retained is "
                            f"{type(decision.retained).__name__}, not a bool")
    if found.items != len(entries):
        problems.append(f"{found.items} decisions for {len(entries)} turns")
    if "freeze_learning" not in capabilities:
        _collect(ingestor.learning_state, problems)
    if "reset_memories" in capabilities:
        out["reset_memories"].items = 1
        _collect(lambda: ingestor.restart(wipe_memories=True), _problems(out["reset_memories"]))
    if "freeze_learning" in capabilities:
        frozen = out["freeze_learning"]

        def replay_frozen() -> None:
            ingestor.learning = False
            frozen.items = sum(1 for _ in ingestor.run_pass(items, 2, "eval"))

        _collect(replay_frozen, _problems(frozen))


def _score(system: Any, out: Checked) -> None:
    from memeval.data.quality_sets import load_memory_records
    from memeval.paths import data_path

    records = [item.record for item in load_memory_records(
        data_path("mqs/memory_records_v1.jsonl"))[0]]
    problems = _problems(out)
    out.items = len(records)
    scores: list[Any] = []
    _collect(lambda: scores.extend(system.score_records(records)), problems)
    if scores and len(scores) != len(records):
        problems.append(f"{len(scores)} scores for {len(records)} records")
    for record, score in zip(records, scores, strict=False):
        if not isinstance(score, int | float) or not math.isfinite(score) \
                or not 0.0 <= score <= 100.0:
            problems.append(f"record {record.id!r}: score {score!r} is not a number in "
                                f"[0, 100] (MQS's scale)")


def _conflicts(system: Any, out: Checked) -> None:
    from memeval.data.quality_sets import load_conflict_pairs
    from memeval.paths import data_path
    from memeval.systems.base import conflict_answer

    pairs = load_conflict_pairs(data_path("conflicts/memory_pairs_v1.jsonl"))[0][:SAMPLE]
    problems = _problems(out)
    out.items = len(pairs)
    def answer(a: str, b: str, where: str) -> str:
        return conflict_answer(system, system.detect_conflict(a, b), where)

    for pair in pairs:
        _collect(partial(answer, pair.a.content, pair.b.content, f"pair '{pair.id}'"),
                 problems)


@dataclass(frozen=True)
class _Query:
    id: str
    text: str
    pool: np.ndarray


def _search(system: Any, capabilities: set[str], out: dict[str, Checked]) -> None:
    import numpy as np

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
    found = out["search"]
    problems = _problems(found)
    found.items = len(queries)
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
        out["feedback"].items = 1
        _collect(lambda: system.record_outcome(served[0], True), _problems(out["feedback"]))


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
            out = {str(c): Checked(str(c), problems=[] if str(c) in capabilities else None)
                   for c in Capability}
            steps = {"ingest": partial(_ingest, ctx, system, capabilities, out),
                     "score_records": partial(_score, system, out["score_records"]),
                     "detect_conflicts": partial(_conflicts, system, out["detect_conflicts"]),
                     "search": partial(_search, system, capabilities, out)}
            for capability, step in steps.items():
                if capability in capabilities:
                    _collect(step, _problems(out[capability]))
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
