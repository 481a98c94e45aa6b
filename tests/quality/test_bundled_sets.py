"""The bundled labelled sets (conflict pairs, trust records, MAI scenarios) are what their cards
promise: large enough, every line usable, and each independent test split separate from the
development sets it checks (no shared id, no shared text), so a figure on it is a figure on data
nothing was chosen on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from memeval.data.quality_sets import load_conflict_pairs, load_memory_records, load_scenarios
from memeval.paths import CONF_DIR, data_path

PAIRS_DEV = ["conflicts/memory_pairs_v1.jsonl", "conflicts/memory_pairs_v2.jsonl"]
PAIRS_TEST = "conflicts/memory_pairs_heldout_v1.jsonl"
# Written later, to test the detector changed after PAIRS_TEST scored it: apart from every other
# conflict set, heldout v1 included.
PAIRS_TEST_2 = "conflicts/memory_pairs_heldout_v2.jsonl"
PAIRS_TEST_3 = "conflicts/memory_pairs_heldout_v3.jsonl"  # written after v2 had been read
PAIRS_TEST_4 = "conflicts/memory_pairs_heldout_v4.jsonl"  # written after v1-v3 were joined
# Written after v4 had scored a detector and before any later change: the held-out split today.
PAIRS_TEST_5 = "conflicts/memory_pairs_heldout_v5.jsonl"
# Written outside memeval: real entries of two teams' agent files and their replacements.
PAIRS_OUTSIDE = "conflicts/claude_md_history_entire_v1.jsonl"
PAIRS_OUTSIDE_2 = "conflicts/agents_md_history_pydantic_ai_v1.jsonl"
PAIRS_OUTSIDE_3 = "conflicts/agents_md_history_codexbar_v1.jsonl"
PAIRS_OUTSIDE_4 = "conflicts/agents_md_history_openai_agents_v1.jsonl"
PAIRS_OUTSIDE_5 = "conflicts/agents_md_history_mcp_python_sdk_v1.jsonl"
PAIRS_OUTSIDE_6 = "conflicts/agents_md_history_fastmcp_v1.jsonl"
PAIRS_OUTSIDE_7 = "conflicts/agents_md_history_prefect_v1.jsonl"
PAIRS_OUTSIDE_8 = "conflicts/claude_md_history_mcp_typescript_sdk_v1.jsonl"
PAIRS_OUTSIDE_ALL = [PAIRS_OUTSIDE, PAIRS_OUTSIDE_2, PAIRS_OUTSIDE_3, PAIRS_OUTSIDE_4,
                     PAIRS_OUTSIDE_5, PAIRS_OUTSIDE_6, PAIRS_OUTSIDE_7, PAIRS_OUTSIDE_8]
RECORDS_DEV = ["mqs/memory_records_v1.jsonl", "mqs/memory_records_v2.jsonl"]
RECORDS_TEST = "mqs/memory_records_heldout_v1.jsonl"
SCENARIOS_DEV = ["mai/attribution_scenarios_v1.jsonl", "mai/attribution_scenarios_v2.jsonl"]
SCENARIOS_TEST = "mai/attribution_scenarios_heldout_v1.jsonl"
# In memledger's golden-set convention (decisions name no memory), written apart from all three.
SCENARIOS_GOLDEN_STYLE = "mai/attribution_scenarios_golden_style_v1.jsonl"


def _rows(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in Path(data_path(name)).read_text().splitlines()]


def _pair_texts(name: str) -> set[str]:
    return {str(side["content"]).strip().lower()  # type: ignore[index]
            for row in _rows(name) for side in (row["a"], row["b"])}


def _record_texts(name: str) -> set[str]:
    return {str(row["content"]).strip().lower() for row in _rows(name)}


def _decisions(name: str) -> set[str]:
    return {str(row["agent_decision"]).strip().lower() for row in _rows(name)}


def _id(row: dict[str, object]) -> str:
    return str(row.get("pair_id", row.get("id", row.get("scenario_id"))))


def test_every_labelled_set_has_its_data_card() -> None:
    for folder in ("conflicts", "mqs", "mai", "retrieval", "labeled"):
        for jsonl in Path(data_path(folder)).glob("*.jsonl"):
            assert jsonl.with_suffix(".md").is_file(), f"{jsonl} has no data card beside it"


def test_the_development_sets_are_large_enough_and_load_cleanly() -> None:
    pairs = [p for name in PAIRS_DEV for p in load_conflict_pairs(data_path(name), "raise")[0]]
    records = [r for name in RECORDS_DEV
               for r in load_memory_records(data_path(name), "raise")[0]]
    assert len(pairs) >= 300 and len(records) >= 200
    assert {p.conflict for p in pairs} == {"none", "contradiction", "temporal", "semantic"}
    assert {r.label for r in records} == {"trusted", "questionable", "untrusted"}
    scenarios = [s for name in SCENARIOS_DEV for s in load_scenarios(data_path(name), "raise")[0]]
    assert len(scenarios) >= 150
    assert {s.ground_truth for s in scenarios} == {
        "well_attributed", "partially_attributed", "unattributed"}


@pytest.mark.parametrize(("test", "dev", "texts"), [
    (PAIRS_TEST, PAIRS_DEV, _pair_texts), (PAIRS_TEST_2, [*PAIRS_DEV, PAIRS_TEST], _pair_texts),
    (PAIRS_TEST_3, [*PAIRS_DEV, PAIRS_TEST, PAIRS_TEST_2], _pair_texts),
    (PAIRS_TEST_4, [*PAIRS_DEV, PAIRS_TEST, PAIRS_TEST_2, PAIRS_TEST_3], _pair_texts),
    (PAIRS_TEST_5, [*PAIRS_DEV, PAIRS_TEST, PAIRS_TEST_2, PAIRS_TEST_3, PAIRS_TEST_4],
     _pair_texts),
    (PAIRS_OUTSIDE, [*PAIRS_DEV, PAIRS_TEST, PAIRS_TEST_2, PAIRS_TEST_3, PAIRS_TEST_4,
                     PAIRS_TEST_5], _pair_texts),
    *[(outside, [*PAIRS_DEV, PAIRS_TEST, PAIRS_TEST_2, PAIRS_TEST_3, PAIRS_TEST_4, PAIRS_TEST_5,
                 *PAIRS_OUTSIDE_ALL[:index]], _pair_texts)
      for index, outside in enumerate(PAIRS_OUTSIDE_ALL) if index],
    (RECORDS_TEST, RECORDS_DEV, _record_texts),
    (SCENARIOS_TEST, SCENARIOS_DEV, _decisions),
    (SCENARIOS_GOLDEN_STYLE, [*SCENARIOS_DEV, SCENARIOS_TEST], _decisions)])
def test_the_independent_split_shares_nothing_with_development(
        test: str, dev: list[str], texts: Callable[[str], set[str]]) -> None:
    held = texts(test)
    # distinct memories: enough for a figure with a CI (the outside sets are smaller, real files)
    assert len(held) >= (50 if test in PAIRS_OUTSIDE_ALL else 75)
    for name in dev:
        shared = held & texts(name)
        assert not shared, f"{test} repeats {len(shared)} texts of {name}: {sorted(shared)[:2]}"
    ids = {_id(row) for row in _rows(test)}
    for name in dev:
        assert not ids & {_id(row) for row in _rows(name)}


@pytest.mark.parametrize(("name", "nones", "contradictions"), [
    (PAIRS_TEST_2, 88, 43), (PAIRS_TEST_3, 88, 44), (PAIRS_TEST_4, 87, 44),
    (PAIRS_TEST_5, 87, 45)])
def test_the_later_conflict_splits_are_whole_and_balanced(name: str, nones: int,
                                                          contradictions: int) -> None:
    pairs, report = load_conflict_pairs(data_path(name), "raise")
    assert report.skipped == 0
    counts = {label: sum(p.conflict == label for p in pairs)
              for label in ("none", "contradiction", "semantic", "temporal")}
    assert counts == {"none": nones, "contradiction": contradictions, "semantic": 44,
                      "temporal": 44}


@pytest.mark.parametrize(("name", "counts", "agreed", "edits"), [
    (PAIRS_OUTSIDE, (85, 29, 1), 114, 70), (PAIRS_OUTSIDE_2, (52, 13, 3), 67, 47),
    (PAIRS_OUTSIDE_3, (41, 8, 1), 50, 34), (PAIRS_OUTSIDE_4, (41, 6, 2), 45, 29),
    (PAIRS_OUTSIDE_5, (54, 7, 2, 2), 65, 45), (PAIRS_OUTSIDE_6, (19, 15, 0), 34, 26),
    (PAIRS_OUTSIDE_7, (60, 8, 0, 2), 69, 60), (PAIRS_OUTSIDE_8, (39, 38, 1, 1), 75, 59)])
def test_the_outside_pairs_are_the_cards(name: str, counts: tuple[int, ...], agreed: int,
                                         edits: int) -> None:
    """Counts (none, semantic, contradiction, temporal), the second labeller's agreement and the
    per-commit paths each card describes."""
    pairs, report = load_conflict_pairs(data_path(name), "raise")
    rows = _rows(name)
    assert report.skipped == 0 and len(pairs) == sum(counts)
    assert tuple(sum(p.conflict == label for p in pairs)
                 for label in ("none", "semantic", "contradiction", "temporal")) == \
        (*counts, 0, 0, 0)[:4]
    assert sum(row["labels"][0] == row["labels"][1] for row in rows) == agreed  # type: ignore[index]
    assert all(row["conflict"] in row["labels"] for row in rows)  # type: ignore[operator]
    changed = [p for p in pairs if not p.same_source]
    assert len(changed) == edits and all(p.a.timestamp and p.b.timestamp for p in changed)
    assert all("@" in str(p.a.path) and "@" in str(p.b.path) for p in pairs)


def test_the_development_pairs_are_the_files_named_once() -> None:
    """The former held-out splits are development data now; the held-out split is not."""
    named = yaml.safe_load((CONF_DIR / "dev_sets" / "bundled.yaml").read_text())
    files = [entry.removeprefix("${memeval_data:").removesuffix("}")
             for entry in named["conflict_pairs"]]
    assert files == [*PAIRS_DEV, PAIRS_TEST, PAIRS_TEST_2, PAIRS_TEST_3, PAIRS_TEST_4]


def test_temporal_pairs_name_the_newer_side_by_its_later_date() -> None:
    for name in [*PAIRS_DEV[1:], PAIRS_TEST, PAIRS_TEST_2, PAIRS_TEST_3, PAIRS_TEST_4,
                 PAIRS_TEST_5, *PAIRS_OUTSIDE_ALL]:
        for row in _rows(name):
            newer = row["newer"]
            if row["conflict"] != "temporal":
                assert newer is None, row["pair_id"]
                continue
            older = "b" if newer == "a" else "a"
            assert newer in ("a", "b"), row["pair_id"]
            assert row[newer]["timestamp"] >= row[older]["timestamp"], row["pair_id"]  # type: ignore[index]


def test_trust_grades_agree_with_their_labels() -> None:
    bands = {"trusted": (0.70, 1.0), "questionable": (0.35, 0.69), "untrusted": (0.0, 0.349)}
    for name in [*RECORDS_DEV[1:], RECORDS_TEST]:
        records, _ = load_memory_records(data_path(name), "raise")
        for item in records:
            low, high = bands[str(item.label)]
            assert item.trust is not None and low <= item.trust <= high, item.record.id
