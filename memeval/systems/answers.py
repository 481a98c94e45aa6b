"""What a system's answers must be before memeval counts them: one check per kind of answer,
each naming the system, the call and the value it refuses. A run and `python -m memeval check`
apply the same checks, through the boundary (systems/boundary.py).

An answer outside the protocol is never coerced into one inside it: a NaN score, a decision for
another turn or a label the turn does not carry would each move a figure without saying so.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import numbers
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.metrics.gate_metrics import SystemFailure, check_outcome
from memeval.systems.base import CONFLICT_TYPES, UNTYPED_CONFLICT, Hit
from memeval.utils.bounded_json import MAX_JSON_DEPTH
from memeval.utils.redact import redact

KEPT = ("stored", "dedup")  # the outcomes that leave the turn in memory
SHOWN = 80  # characters of a value quoted in a message
SHOWN_REASON = 300  # characters kept of a reason a system gives in a decision
FREE_TEXT = ("scorer_note", "embedding_error", "judge_error", "system_error")


def shown(value: Any) -> str:
    """A value as a message quotes it: its repr, redacted and cut short."""
    try:
        text = repr(value)
    except BaseException:  # a system's own __repr__ may raise anything
        text = f"<a {type(value).__name__}>"
    text = redact(text)
    return text if len(text) <= SHOWN else text[:SHOWN] + "…"


def refuse(system: str, call: str, what: str) -> SystemFailure:
    return SystemFailure(f"system '{system}' answered {call} with {what} (docs/protocol.md)")


def real(value: Any) -> bool:
    """A finite number; a bool is not one."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) \
        and math.isfinite(float(value))


def bounded_list(answer: Any, most: int, system: str, call: str, what: str) -> list[Any]:
    """Up to `most` items of an answer that must be a sequence or iterator of `what`: an endless
    one is never read to its end, and a string, a mapping or None is refused."""
    if answer is None or isinstance(answer, str | bytes | Mapping) \
            or not isinstance(answer, Iterable):
        raise refuse(system, call, f"{shown(answer)}, not a list of {what}")
    return list(itertools.islice(answer, most))


# ingest ---------------------------------------------------------------------------------------
@cache
def _decision_fields() -> dict[str, Any]:
    hints = typing.get_type_hints(Decision)
    return {f.name: hints[f.name] for f in dataclasses.fields(Decision)}


def _fits(value: Any, annotation: Any) -> bool:
    """Whether a decision's field holds its declared type (numbers finite)."""
    optional = isinstance(annotation, types.UnionType)  # `X | None`: the only unions it has
    if optional and value is None:
        return True
    kind = typing.get_args(annotation)[0] if optional else annotation
    if kind is bool:
        return isinstance(value, bool) or type(value).__name__ == "bool_"  # numpy's bool
    if kind is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) \
            and int(value) >= 0
    if kind is float:
        return real(value) and (value >= 0 or annotation is not float)  # a cost: not below 0
    if kind is str:
        return isinstance(value, str)
    if typing.get_origin(kind) is dict:
        return isinstance(value, dict) and all(  # stage → milliseconds
            isinstance(k, str) and real(v) and v >= 0 for k, v in value.items())
    return True


def check_decision(decision: Any, entry: Entry, pass_no: int, phase: str,
                   system: str) -> Decision:
    """One decision for `entry`, the turn whose decision is due, in the pass asked for, with the
    turn's own label, a known outcome that agrees with `retained`, and every field its type."""
    call = f"run_pass (pass {pass_no})"
    if not isinstance(decision, Decision):
        raise refuse(system, call, f"{shown(decision)} where the Decision for entry "
                                   f"'{entry.id}' was due")
    if decision.entry_id != entry.id:
        raise refuse(system, call, f"a decision for entry {shown(decision.entry_id)} where "
                                   f"entry '{entry.id}' was due (one decision per turn, in the "
                                   f"order given)")
    given = {"pass_no": pass_no, "phase": phase, "label": entry.label,
             "label_source": entry.label_source}
    for name, value in given.items():
        if getattr(decision, name) != value:
            raise refuse(system, call, f"{name} {shown(getattr(decision, name))} for entry "
                                       f"'{entry.id}', which was given {name} {shown(value)}")
    check_outcome(decision, system)
    for name, annotation in _decision_fields().items():
        if not _fits(getattr(decision, name), annotation):
            raise refuse(system, call, f"{name} {shown(getattr(decision, name))} for entry "
                                       f"'{entry.id}' (it must be {_said(annotation)})")
    if bool(decision.retained) != (decision.outcome in KEPT):
        raise refuse(system, call, f"outcome '{decision.outcome}' and retained "
                                   f"{decision.retained} for entry '{entry.id}': a turn is "
                                   f"retained exactly when its outcome is {' or '.join(KEPT)}")
    decision.retained = bool(decision.retained)
    for name in FREE_TEXT:  # the system's own words reach decisions.parquet and metrics.json
        text = getattr(decision, name)
        if text:
            setattr(decision, name, redact(text)[:SHOWN_REASON])
    return decision


def _said(annotation: Any) -> str:
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    return {"int": "a whole number ≥ 0", "float": "a finite number ≥ 0",
            "float | None": "None or a finite number", "bool": "a bool",
            "bool | None": "None or a bool", "str": "a string",
            "dict[str, float]": "a dict of stage → milliseconds"}.get(text, text)


# detect_conflicts -----------------------------------------------------------------------------
def conflict_answer(system: str, answer: Any, where: str) -> str:
    """The system's answer for a pair as a label (`none` for None); an answer outside the
    protocol fails the run, naming it, instead of counting as a wrong guess."""
    if answer is None:
        return "none"
    if isinstance(answer, str) and answer in (*CONFLICT_TYPES, UNTYPED_CONFLICT):
        return str(answer)
    raise refuse(system, where, f"conflict type {shown(answer)}, which is not one of "
                                f"{', '.join(CONFLICT_TYPES)}, {UNTYPED_CONFLICT} or None: fix "
                                f"the system's detect_conflict")


# score_records --------------------------------------------------------------------------------
def check_scores(answer: Any, records: Sequence[Any], system: str) -> list[float]:
    """One number in [0, 100] per record, in order."""
    scores = bounded_list(answer, len(records) + 1, system, "score_records", "scores")
    if len(scores) != len(records):
        many = f"more than {len(records)}" if len(scores) > len(records) else str(len(scores))
        raise refuse(system, "score_records", f"{many} scores for {len(records)} records (one "
                                              f"per record, in order)")
    for record, score in zip(records, scores, strict=True):
        if not real(score) or not 0.0 <= float(score) <= 100.0:
            raise refuse(system, "score_records", f"score {shown(score)} for record "
                                                  f"'{record.id}', not a number in [0, 100] "
                                                  f"(MQS's scale)")
    return [float(score) for score in scores]


# search ---------------------------------------------------------------------------------------
def check_hits(answer: Any, query: str, k: int, indexed: set[str], system: str) -> list[Hit]:
    """At most `k` hits, best first, each a memory indexed with a finite score; a repeated id
    counts once, at its best rank. Only k + 1 are read from an iterator."""
    call = f"search({shown(query)}, k={k})"
    hits = bounded_list(answer, k + 1, system, call, "Hit(id, score)")
    kept: list[Hit] = []
    for hit in hits:
        memory: Any = getattr(hit, "id", None)
        score: Any = getattr(hit, "score", None)
        if not isinstance(memory, str) or isinstance(hit, Mapping | tuple):
            raise refuse(system, call, f"{shown(hit)}, not a Hit(id, score)")
        if memory not in indexed:
            raise refuse(system, call, f"memory id {shown(memory)}, which it was not given "
                                       f"(search returns ids of the memories indexed)")
        if not real(score):
            raise refuse(system, call, f"score {shown(score)} for memory {shown(memory)}: a "
                                       f"search score must be a finite number")
        if all(h.id != memory for h in kept):
            kept.append(Hit(memory, float(score)))
    return kept[:k]


# notes and state ------------------------------------------------------------------------------
def check_json(value: Any, system: str, what: str) -> dict[str, Any]:
    """A dict with string keys that JSON holds as it is: finite numbers, strings, bools, None,
    lists and dicts, nested no deeper than memeval reads back."""
    if not isinstance(value, dict):
        raise refuse(system, what, f"{shown(value)}, not a dict")
    bad = _unjsonable(value)
    if bad is not None:
        raise refuse(system, what, bad)
    return value


def _unjsonable(value: Any) -> str | None:
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"values nested deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(node, dict):
            if not all(isinstance(key, str) for key in node):
                return f"a key that is not a string at {where or 'the top'}"
            stack += [(child, f"{where}[{shown(key)}]", depth + 1)
                      for key, child in node.items()]
        elif isinstance(node, list | tuple):
            stack += [(child, f"{where}[{i}]", depth + 1) for i, child in enumerate(node)]
        elif isinstance(node, float | int) and not isinstance(node, bool):
            if not math.isfinite(node):
                return f"{node!r} at {where}, a number JSON cannot hold"
        elif not (node is None or isinstance(node, str | bool)):
            return f"a {type(node).__name__} at {where}, which JSON cannot hold"
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as err:  # a subclass of str or dict with its own encoding
        return f"a value JSON cannot hold ({err})"
    return None
