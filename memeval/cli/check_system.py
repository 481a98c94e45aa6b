"""`python -m memeval check system=NAME`: a memory system put through each capability it
declares, on a little of the bundled data, through the same boundary a run puts it behind
(systems/boundary.py): every answer outside the protocol is named (an unknown outcome, an id
never given, a score out of range, an unknown conflict type), and so is a call that raises or
overruns its deadline. Exit 1 when anything is wrong, so a plugin's CI can run it.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

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
    """What the boundary refuses is a problem to name, not the check's end."""
    from memeval.metrics.gate_metrics import SystemFailure

    try:
        check()
    except SystemFailure as err:
        problems.append(str(err))


def _problems(found: Checked) -> list[str]:
    """A declared capability's list of problems (created with its Checked)."""
    assert found.problems is not None
    return found.problems


def _ingest(ctx: Any, system: Any, capabilities: set[str], out: dict[str, Checked]) -> None:
    entries = ctx.dataset.entries[:SAMPLE]
    found = out["ingest"]
    ingestor = system.ingestor(ctx.run_dir / "state")
    items = ingestor.prepare(entries)
    for _ in ingestor.run_pass(items, 1, "eval"):
        found.items += 1
    ingestor.pass_state({e.id: e.label for e in entries})
    if "freeze_learning" not in capabilities:
        ingestor.learning_state()
    if "reset_memories" in capabilities:
        out["reset_memories"].items = 1
        _collect(lambda: ingestor.restart(wipe_memories=True), _problems(out["reset_memories"]))
    if "freeze_learning" in capabilities:
        frozen = out["freeze_learning"]

        def replay_frozen() -> None:
            ingestor.learning = False
            for _ in ingestor.run_pass(items, 2, "eval"):
                frozen.items += 1
            ingestor.learning_state()

        _collect(replay_frozen, _problems(frozen))


def _score(system: Any, out: Checked) -> None:
    from memeval.data.quality_sets import load_memory_records
    from memeval.paths import data_path

    records = [item.record for item in load_memory_records(
        data_path("mqs/memory_records_v1.jsonl"))[0]]
    system.score_records(records)
    out.items = len(records)


def _conflicts(system: Any, out: Checked) -> None:
    from memeval.data.quality_sets import load_conflict_pairs
    from memeval.paths import data_path
    from memeval.systems.answers import conflict_answer

    pairs = load_conflict_pairs(data_path("conflicts/memory_pairs_v1.jsonl"))[0][:SAMPLE]
    problems = _problems(out)
    for pair in pairs:
        out.items += 1
        _collect(partial(lambda p: conflict_answer(system.name, system.detect_conflict(
            p.a.content, p.b.content), f"pair '{p.id}'"), pair), problems)


def _search(system: Any, capabilities: set[str], out: dict[str, Checked]) -> None:
    from memeval.data.base import redacted_names
    from memeval.data.labeled_jsonl import load_labeled_jsonl
    from memeval.data.quality_sets import load_queries
    from memeval.paths import data_path
    from memeval.systems.base import IndexedMemory
    from memeval.utils.redact import redact

    corpus = redacted_names(load_labeled_jsonl(data_path("labeled/write_gate_v1.jsonl")))
    rows = [e for e in corpus.entries if e.label == "substantive"][:SAMPLE]
    queries = load_queries(data_path("retrieval/queries_v1.jsonl"))[0][:SAMPLE]
    found = out["search"]
    problems = _problems(found)
    system.index([IndexedMemory(e.id, redact(e.assistant_response)) for e in rows])
    served: list[str] = []
    for query in queries:
        found.items += 1
        _collect(partial(lambda q: served.extend(h.id for h in system.search(q.query, 5)),
                         query), problems)
    if "feedback" in capabilities and served:
        out["feedback"].items = 1
        _collect(lambda: system.record_outcome(served[0], True), _problems(out["feedback"]))


def check(overrides: Sequence[str]) -> tuple[str, list[Checked], list[str]]:
    """The system's name, what each capability's check found, and what was wrong after the work
    (its notes, its close)."""
    from memeval.config import compose, expand_targets, quote_values, validate
    from memeval.experiments.base import RunContext
    from memeval.systems.base import Capability
    from memeval.systems.boundary import GuardedSystem, guarded, limits_of

    args = quote_values(expand_targets(["+experiment=three_pass", *overrides]))
    cfg = compose(args)
    with tempfile.TemporaryDirectory(prefix="memeval-check-") as folder:
        checked = validate(cfg)
        ctx = RunContext(cfg, Path(folder), checked)
        built = ctx.system
        # memeval's own engine too goes through the boundary here: the check is the boundary's
        system = built if isinstance(built, GuardedSystem) else guarded(
            lambda: built, built.name, limits_of(checked.system.params))
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
    return system.name, list(out.values()), [str(err) for err in system.deferred]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval check", description=DESCRIPTION)
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="the system and its settings as for run, e.g. system=memledger, "
                             "system=my_memory:build, embedder=hashing")
    options = parser.parse_args(argv)
    from memeval.reporting.table import wrapped
    from memeval.user_errors import report_user_error, user_error_types

    try:
        name, found, after = check(options.overrides)
    except user_error_types() as err:
        report_user_error(err)
        return 2
    print(f"system {name}: the protocol, capability by capability (docs/protocol.md)")
    for item in found:
        print(item.line())
        for problem in (item.problems or [])[:20]:
            print(wrapped(f"  {problem}"))
    for problem in after:
        print(wrapped(f"after the work: {problem}"))
    return 1 if after or any(item.problems for item in found) else 0
