"""Property-based checks (hypothesis): loaders account for every line, redaction is idempotent,
MQS stays in range and rises with confidence, conflict rules are symmetric, PageRank is a
distribution. Inputs are generated, so the cases nobody thought to write are covered too."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memeval.data.base import DatasetError
from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.quality.conflicts import ConflictDetector, ConflictRules
from memeval.quality.graph import GraphConfig, MemoryGraph
from memeval.quality.mqs import compute_mqs
from memeval.quality.record import MemoryRecord
from memeval.utils.redact import redact

FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
TEXT = st.text(st.characters(codec="utf-8"), max_size=200)
VALUE = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), TEXT)
ROW = st.fixed_dictionaries(
    {}, optional={"id": st.one_of(TEXT, st.integers()), "user_prompt": st.one_of(TEXT, VALUE),
                  "assistant_response": st.one_of(TEXT, VALUE),
                  "label": st.one_of(st.sampled_from(["noise", "low", "low_value",
                                                      "substantive", "other"]), VALUE)})
LINE = st.one_of(ROW.map(lambda r: json.dumps(r).encode()), st.binary(max_size=80),
                 st.lists(VALUE, max_size=3).map(lambda v: json.dumps(v).encode()))

pytestmark = pytest.mark.bad_input  # arbitrary input: always an entry or a reported problem


@FAST
@given(lines=st.lists(LINE, min_size=1, max_size=12))
def test_every_labelled_line_is_an_entry_or_a_reported_problem(tmp_path: Path,
                                                               lines: list[bytes]) -> None:
    path = tmp_path / "set.jsonl"
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n")
    try:
        dataset = load_labeled_jsonl(path)
    except DatasetError as err:  # nothing usable: said, with the file
        assert str(path) in str(err)
        return
    report = dataset.report
    assert len(dataset.entries) + report.skipped == report.rows_read
    assert all(p.startswith(f"{path}:") for p in report.problems)
    assert all(e.assistant_response.strip() for e in dataset.entries)


@FAST
@given(text=TEXT, key=st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16))
def test_redaction_is_idempotent_and_removes_a_planted_key(text: str, key: str) -> None:
    planted = f"{text} AKIA{key} {text}"
    once = redact(planted)
    assert redact(once) == once
    assert f"AKIA{key}" not in once



@FAST
@given(confidence=st.floats(0.0, 1.0), bump=st.floats(0.0, 1.0),
       successes=st.integers(0, 50), failures=st.integers(0, 50), accesses=st.integers(0, 50),
       conflicts=st.integers(0, 12), hedged=st.booleans())
def test_mqs_stays_in_range_adds_up_and_rises_with_confidence(
        confidence: float, bump: float, successes: int, failures: int, accesses: int,
        conflicts: int, hedged: bool) -> None:
    def score(value: float) -> tuple[int, float, float]:
        record = MemoryRecord("r", "x", value, success_count=successes, failure_count=failures,
                              access_count=accesses, conflicts=[f"c{i}" for i in range(conflicts)],
                              hedged=hedged)
        b = compute_mqs(record)
        parts = b.confidence + b.usage + b.access - b.conflict_penalty - b.hedged_penalty
        return b.score, b.raw, parts

    low, raw, parts = score(confidence)
    assert 0 <= low <= 100 and math.isclose(raw, parts, abs_tol=1e-9)
    assert score(min(1.0, confidence + bump))[0] >= low


@FAST
@given(a=TEXT, b=TEXT, compat=st.booleans())
def test_conflict_rules_do_not_depend_on_order(a: str, b: str, compat: bool) -> None:
    detector = ConflictDetector(ConflictRules(compat=compat))
    one, other = detector.detect(a, b), detector.detect(b, a)
    assert (one.kind if one else None) == (other.kind if other else None)


@FAST
@given(seed=st.integers(0, 10_000), retrievals=st.lists(
    st.lists(st.integers(0, 7), min_size=1, max_size=4, unique=True), max_size=15))
def test_pagerank_is_a_distribution_whatever_the_usage(seed: int,
                                                       retrievals: list[list[int]]) -> None:
    rng = np.random.default_rng(seed)
    graph = MemoryGraph(GraphConfig())
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(8):
        vector = rng.normal(size=8).astype(np.float32)
        graph.add(f"m{i}", vector / np.linalg.norm(vector), float(rng.random()), now)
    for served in retrievals:
        graph.record_retrieval([f"m{i}" for i in served], now)
        graph.feedback(f"m{served[0]}", bool(rng.random() < 0.5), [f"m{i}" for i in served], now)
    scores = graph.rank({f"m{i}": float(rng.random()) for i in range(8)})
    assert math.isclose(sum(scores.values()), 1.0, abs_tol=1e-6)
    assert min(scores.values()) >= 0.0
