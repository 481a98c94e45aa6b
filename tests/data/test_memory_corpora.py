"""Memory corpora for retrieval replay: memeval's JSONL format, LoCoMo and LongMemEval, built
through the registry from small files in the benchmarks' exact schemas (tests/data/corpora/).
Evidence cleaning, session dedupe and renaming, what is skipped and counted, bad lines with
file:line, on_error=raise, and nothing usable."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf

from memeval.components import load_components
from memeval.config import compose, validate
from memeval.data.base import CORPORA, CORPUS, DatasetError, MemoryCorpus
from memeval.registry import ConfigError

load_components()

FILES = Path(__file__).resolve().parent / "corpora"
LOCOMO = FILES / "locomo_small.json"
LONGMEMEVAL = FILES / "longmemeval_small.json"
MEMORIES = FILES / "memories.jsonl"
QUERIES = FILES / "queries.jsonl"


def build(name: str, **settings: Any) -> MemoryCorpus:
    corpus = CORPORA.build(OmegaConf.create({"name": name, **settings}))
    assert isinstance(corpus, MemoryCorpus)
    return corpus


def by_id(items: list[Any]) -> dict[str, Any]:
    return {item.id: item for item in items}


def write_json(tmp_path: Path, value: Any, name: str = "bench.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return path


def write_lines(tmp_path: Path, name: str, rows: list[Any]) -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


# memory_jsonl

def test_memory_jsonl_loads_memories_and_queries() -> None:
    corpus = build("memory_jsonl", memories=str(MEMORIES), queries=str(QUERIES))
    memories, queries = by_id(corpus.memories), by_id(corpus.queries)
    assert corpus.name == "memories"
    assert len(memories) == 12 and len(queries) == 6 and corpus.report.problems == []
    assert memories["m01"].timestamp == datetime(2024, 3, 1, 9, 12, tzinfo=UTC)  # "Z"
    assert memories["m05"].timestamp == datetime(2024, 3, 3, 7, 0, tzinfo=UTC)  # +01:00
    assert memories["m07"].timestamp == datetime(2024, 3, 5, 16, 20, tzinfo=UTC)  # naive: UTC
    assert memories["m08"].timestamp is None
    assert (memories["m01"].session, memories["m01"].source) == ("s1", "claude_code:turn-14")
    assert memories["m04"].metadata == {"kind": "convention"}
    assert "12" in memories  # an integer id is text
    assert queries["q1"].relevant == {"m01": 2, "m09": 1}
    assert queries["q2"].relevant == {"12": 2}  # a list: each graded 2
    assert queries["q3"].scope == ("m01", "m02", "12") and queries["q1"].scope is None
    assert queries["q5"].asked_at == datetime(2024, 3, 12, 8, 30, tzinfo=UTC)
    assert queries["q6"].category == "security" and queries["q4"].asked_at is None


MEMORY = {"id": "a", "text": "the deploy runs from main"}
BAD_MEMORIES: list[tuple[Any, str]] = [
    ({**MEMORY, "id": "b", "colour": "red"}, "unknown fields ['colour']"),
    ({"id": "b", "text": "  "}, "'text' must be non-empty text"),
    ({"id": True, "text": "x"}, "'id' must be non-empty text or an integer"),
    ({"id": "b", "text": "x", "timestamp": "yesterday"}, "not an ISO 8601 time"),
    ({"id": "b", "text": "x", "metadata": [1]}, "'metadata' must be an object"),
    ({"id": "b", "text": "x", "timestamp": "9999-12-31T23:59:59-01:00"},
     "'timestamp' 9999-12-31T23:59:59-01:00 lies outside the years 1-9999 once taken to UTC"),
    ({**MEMORY, "text": "again"}, "duplicate id 'a'"),
    ("{not json", "Expecting property name"),
]


@pytest.mark.bad_input
@pytest.mark.parametrize(("bad", "message"), BAD_MEMORIES)
def test_memory_jsonl_bad_memory_line_is_reported_and_skipped(tmp_path: Path, bad: Any,
                                                              message: str) -> None:
    memories = write_lines(tmp_path, "m.jsonl", [MEMORY, bad, {"id": "c", "text": "ok"}])
    queries = write_lines(tmp_path, "q.jsonl", [{"id": "q", "query": "deploy?",
                                                 "relevant": ["a"]}])
    corpus = build("memory_jsonl", memories=str(memories), queries=str(queries))
    assert [m.id for m in corpus.memories] == ["a", "c"]
    (problem,) = corpus.report.problems
    assert problem.startswith(f"{memories}:2: ") and message in problem


BAD_QUERIES: list[tuple[Any, str]] = [
    ({"id": "q2", "query": "x", "relevant": ["zzz"]}, "relevant memories ['zzz'] are not loaded"),
    ({"id": "q2", "query": "x", "relevant": {"a": 3}}, "grades must be 1 or 2"),
    ({"id": "q2", "query": "x", "relevant": []}, "'relevant' names no memory"),
    ({"id": "q2", "query": "x", "relevant": "a"}, "'relevant' must be an object"),
    ({"id": "q2", "query": "x", "relevant": ["a"], "scope": ["c"]}, "outside its 'scope'"),
    ({"id": "q2", "query": "x", "relevant": ["a"], "scope": ["a", "nope"]},
     "'scope' names memories that are not loaded: ['nope']"),
    ({"id": "q2", "query": "", "relevant": ["a"]}, "'query' must be non-empty text"),
    ({"id": "q2", "query": "x", "relevant": ["a"], "answer": "y"}, "unknown fields ['answer']"),
    ({"id": "q1", "query": "x", "relevant": ["a"]}, "duplicate id 'q1'"),
    ({"id": "q2", "query": "x", "relevant": ["a"], "asked_at": "0001-01-01T00:00:00+01:00"},
     "'asked_at' 0001-01-01T00:00:00+01:00 lies outside the years 1-9999 once taken to UTC"),
]


@pytest.mark.bad_input
@pytest.mark.parametrize(("bad", "message"), BAD_QUERIES)
def test_memory_jsonl_bad_query_line_is_reported_and_skipped(tmp_path: Path, bad: Any,
                                                             message: str) -> None:
    memories = write_lines(tmp_path, "m.jsonl", [MEMORY, {"id": "c", "text": "ok"}])
    queries = write_lines(tmp_path, "q.jsonl", [{"id": "q1", "query": "deploy?",
                                                 "relevant": ["a"]}, bad])
    corpus = build("memory_jsonl", memories=str(memories), queries=str(queries))
    assert [q.id for q in corpus.queries] == ["q1"]
    (problem,) = corpus.report.problems
    assert problem.startswith(f"{queries}:2: ") and message in problem
    with pytest.raises(DatasetError, match=f"^{queries}:2: "):
        build("memory_jsonl", memories=str(memories), queries=str(queries), on_error="raise")


@pytest.mark.bad_input
def test_memory_jsonl_with_nothing_usable_fails_loudly(tmp_path: Path) -> None:
    memories = write_lines(tmp_path, "m.jsonl", [{"id": "a"}])
    queries = write_lines(tmp_path, "q.jsonl", [{"id": "q", "query": "x", "relevant": ["a"]}])
    with pytest.raises(DatasetError, match=r"no usable memories \(1 lines read, 1 bad\); each "
                                           r"line needs an 'id' and a 'text'"):
        build("memory_jsonl", memories=str(memories), queries=str(queries))
    memories = write_lines(tmp_path, "m.jsonl", [MEMORY])
    queries = write_lines(tmp_path, "q.jsonl", [{"id": "q", "query": "x", "relevant": ["b"]}])
    with pytest.raises(DatasetError, match=r"q.jsonl: no usable queries") as caught:
        build("memory_jsonl", memories=str(memories), queries=str(queries))
    assert f"{queries}:1: relevant memories ['b'] are not loaded" in str(caught.value)
    with pytest.raises(DatasetError, match="query file not found"):
        build("memory_jsonl", memories=str(memories), queries=str(tmp_path / "none.jsonl"))


# locomo

def test_locomo_turns_become_memories_with_session_times() -> None:
    corpus = build("locomo", path=str(LOCOMO))
    memories = by_id(corpus.memories)
    assert corpus.name == "locomo_small" and len(memories) == 18 + 12
    first = memories["conv-1:D1:1"]
    assert first.text == ("Maya: Hey Leo! I finally signed up for the pottery class at the "
                          "community center downtown.")
    assert first.timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # "1:56 pm on 8 May, 2023"
    assert (first.session, first.source) == ("conv-1:session_1", "conv-1:D1:1")
    assert first.metadata == {"sample_id": "conv-1", "speaker": "Maya", "dia_id": "D1:1"}
    photo = memories["conv-1:D2:1"]
    assert photo.text == ("Maya: Look what I made in pottery class this week! [shares a photo: "
                          "a photo of a lopsided blue ceramic bowl on a wooden table]")
    assert photo.timestamp == datetime(2023, 5, 21, 10, 15, tzinfo=UTC)
    # conv-2 skips session 2: its session 3 keeps its number
    assert memories["conv-2:D3:1"].session == "conv-2:session_3"
    assert memories["conv-2:D3:1"].timestamp == datetime(2023, 4, 17, 9, 20, tzinfo=UTC)


def test_locomo_questions_are_scoped_categorised_and_their_evidence_cleaned() -> None:
    corpus = build("locomo", path=str(LOCOMO))
    queries = by_id(corpus.queries)
    assert sorted(queries) == sorted([*(f"conv-1:q{i}" for i in range(6)),
                                      *(f"conv-2:q{i}" for i in range(5))])
    # an adversarial question with no evidence is kept for memory QA: nothing to answer
    assert queries["conv-1:q4"].relevant == {} and queries["conv-1:q4"].unanswerable
    assert queries["conv-1:q4"].answer is None and queries["conv-1:q1"].answer == "1 June 2023"
    assert queries["conv-1:q2"].relevant == {"conv-1:D2:1": 2, "conv-1:D3:4": 2}  # "D2:1; D3:4"
    assert queries["conv-1:q3"].relevant == {"conv-1:D1:4": 2, "conv-1:D2:4": 2}  # "D2:04"
    assert queries["conv-1:q5"].relevant == {"conv-1:D3:6": 2}  # D3:9 names no turn
    assert queries["conv-1:q0"].text == "What class did Maya sign up for at the community center?"
    assert [queries[f"conv-2:q{i}"].category for i in range(5)] == \
        ["multi-hop", "temporal", "open-domain", "adversarial", "single-hop"]
    assert queries["conv-1:q0"].asked_at is None
    conv1 = tuple(m.id for m in corpus.memories if m.id.startswith("conv-1:"))
    assert queries["conv-1:q0"].scope == conv1 and len(conv1) == 18
    assert set(queries["conv-2:q0"].scope or ()) == {m.id for m in corpus.memories} - set(conv1)
    assert corpus.report.stats == {"evidence_unknown": 1, "no_evidence": 1,
                                   "queries:multi-hop": 2, "queries:temporal": 2,
                                   "queries:open-domain": 2, "queries:single-hop": 3,
                                   "queries:adversarial": 2}
    assert corpus.report.problems == [f"{LOCOMO}: sample 0 (conv-1) qa 5 (conv-1:q5): "
                                      f"evidence 'D3:9' names no turn: the id is dropped, the "
                                      f"question kept"]
    assert corpus.report.skipped == 0  # the question is not skipped, only its unknown id
    assert corpus.report.rows_read == 2


def test_locomo_session_summaries_stand_for_their_turns() -> None:
    corpus = build("locomo", path=str(LOCOMO), unit="session_summary")
    memories, queries = by_id(corpus.memories), by_id(corpus.queries)
    assert sorted(memories) == ["conv-1:S1", "conv-1:S2", "conv-1:S3", "conv-2:S1", "conv-2:S3"]
    assert memories["conv-2:S3"].text.startswith("Sam accepted the Austin job")
    assert memories["conv-2:S3"].timestamp == datetime(2023, 4, 17, 9, 20, tzinfo=UTC)
    assert memories["conv-1:S1"].session == "conv-1:session_1"
    assert queries["conv-1:q2"].relevant == {"conv-1:S2": 2, "conv-1:S3": 2}
    assert queries["conv-2:q0"].relevant == {"conv-2:S1": 2, "conv-2:S3": 2}
    assert queries["conv-1:q5"].relevant == {"conv-1:S3": 2}  # D3:6 and D3:9: once, D3:9 dropped
    assert queries["conv-1:q0"].scope == ("conv-1:S1", "conv-1:S2", "conv-1:S3")
    assert corpus.report.stats["evidence_unknown"] == 1


def test_locomo_keeps_only_the_chosen_categories() -> None:
    corpus = build("locomo", path=str(LOCOMO), categories=[2, 5])
    assert sorted(q.id for q in corpus.queries) == ["conv-1:q1", "conv-1:q4", "conv-2:q1",
                                                    "conv-2:q3"]
    assert corpus.report.stats["category_filtered"] == 7
    assert corpus.report.stats["no_evidence"] == 1  # conv-1:q4, category 5
    assert "evidence_unknown" not in corpus.report.stats  # conv-1:q5 was filtered out first


def test_locomo_limit_reads_only_the_first_conversations() -> None:
    whole, cut = build("locomo", path=str(LOCOMO)), build("locomo", path=str(LOCOMO), limit=1)
    first = [m.id for m in whole.memories if m.id.startswith("conv-1:")]
    assert [m.id for m in cut.memories] == first and len(first) < len(whole.memories)
    assert {q.scope for q in cut.queries} == {tuple(first)}
    assert len(cut.queries) == sum(q.scope == tuple(first) for q in whole.queries)
    assert cut.report.rows_read == 1 and whole.report.rows_read == 2


def locomo_samples() -> list[Any]:
    value = json.loads(LOCOMO.read_text())
    assert isinstance(value, list)
    return value


def test_locomo_unparseable_dates_and_unknown_categories_are_counted(tmp_path: Path) -> None:
    samples = locomo_samples()
    samples[1]["conversation"]["session_3_date_time"] = "sometime in spring"
    samples[1]["qa"][0]["category"] = 9
    corpus = build("locomo", path=str(write_json(tmp_path, samples)))
    memories, queries = by_id(corpus.memories), by_id(corpus.queries)
    assert memories["conv-2:D3:1"].timestamp is None
    assert memories["conv-2:D1:1"].timestamp is not None
    assert corpus.report.stats["undated_sessions"] == 1
    assert queries["conv-2:q0"].category == "9" and corpus.report.stats["queries:9"] == 1


@pytest.mark.bad_input
def test_locomo_bad_samples_are_named_by_position(tmp_path: Path) -> None:
    samples = [*locomo_samples(), ["not", "a", "sample"], {"sample_id": "conv-9", "qa": []}]
    path = write_json(tmp_path, samples)
    corpus = build("locomo", path=str(path))
    skipped = [f"{path}: sample 2: not an object with a 'conversation'",
               f"{path}: sample 3: not an object with a 'conversation'"]
    assert corpus.report.problems[:2] == skipped and corpus.report.skipped == 2
    # a run warns of each as what happened: the samples skipped, the question kept
    assert corpus.report.told() == [*(f"skipped {line}" for line in skipped),
                                    f"{path}: sample 0 (conv-1) qa 5 (conv-1:q5): evidence "
                                    f"'D3:9' names no turn: the id is dropped, the question kept"]
    assert len(corpus.queries) == 11
    with pytest.raises(DatasetError, match=r": evidence 'D3:9' names no turn: the id is dropped"):
        build("locomo", path=str(path), on_error="raise")


@pytest.mark.bad_input
@pytest.mark.parametrize("categories", [None, [1, 2, 3, 4, 5]], ids=["all", "filtered"])
def test_a_locomo_question_whose_category_is_no_number_is_named_and_skipped(
        tmp_path: Path, categories: list[int] | None) -> None:
    samples = locomo_samples()
    samples[0]["qa"][0]["category"] = [1, 2]
    path = write_json(tmp_path, samples)
    corpus = build("locomo", path=str(path), categories=categories)
    assert "conv-1:q0" not in by_id(corpus.queries)
    assert f"{path}: sample 0 (conv-1) qa 0 (conv-1:q0): 'category' must be a number, got " \
           "list" in corpus.report.problems


@pytest.mark.bad_input
@pytest.mark.parametrize(("name", "pack"), [("gzip", gzip.compress), ("zstd", None)])
def test_a_compressed_benchmark_file_is_named_as_compressed(
        tmp_path: Path, name: str, pack: Callable[[bytes], bytes] | None) -> None:
    raw = LOCOMO.read_bytes()
    path = tmp_path / "locomo10.json"
    path.write_bytes(pack(raw) if pack else b"\x28\xb5\x2f\xfd" + raw[:100])
    with pytest.raises(DatasetError, match=f"^{re.escape(str(path))}: a {name}-compressed file; "
                                           f"decompress it first"):
        build("locomo", path=str(path))


@pytest.mark.bad_input
def test_locomo_bad_turns_are_skipped_and_named(tmp_path: Path) -> None:
    samples = locomo_samples()
    samples[0]["conversation"]["session_1"][1] = {"speaker": "Leo", "text": "no id"}
    corpus = build("locomo", path=str(write_json(tmp_path, samples)))
    assert "conv-1:D1:2" not in by_id(corpus.memories)
    assert any(p.endswith("sample 0 (conv-1) session_1 turn 1: needs 'speaker' and 'dia_id' "
                          "as text") for p in corpus.report.problems)


@pytest.mark.bad_input
@pytest.mark.parametrize(("content", "message"), [
    ('{"sample_id": "conv-1"}', r"expected the LoCoMo \(locomo10.json\) JSON array, got one"),
    ("[1, 2", "not a JSON file"),
    ("[]", "no usable LoCoMo samples"),
    ('[{"sample_id": "x", "conversation": {}}]', "no usable LoCoMo samples"),
])
def test_locomo_file_that_is_no_usable_array_fails_loudly(tmp_path: Path, content: str,
                                                          message: str) -> None:
    path = tmp_path / "locomo10.json"
    path.write_text(content)
    with pytest.raises(DatasetError, match=message):
        build("locomo", path=str(path))


@pytest.mark.bad_input
def test_locomo_without_any_evidence_keeps_only_questions_to_answer(tmp_path: Path) -> None:
    samples = locomo_samples()
    for sample in samples:
        for item in sample["qa"]:
            item["evidence"] = ["D99:1"]
    corpus = build("locomo", path=str(write_json(tmp_path, samples)))
    assert len(corpus.queries) == 11 and not any(q.relevant for q in corpus.queries)
    assert all(q.answerable for q in corpus.queries)  # memory QA reads them; retrieval cannot
    assert "evidence 'D99:1' names no turn" in corpus.report.problems[0]


def test_locomo_with_neither_evidence_nor_answers_has_no_usable_queries(tmp_path: Path) -> None:
    samples = locomo_samples()
    for sample in samples:
        for item in sample["qa"]:
            item["evidence"] = ["D99:1"]
            item.pop("answer", None)
            item["category"] = 1
    with pytest.raises(DatasetError, match="no usable LoCoMo queries"):
        build("locomo", path=str(write_json(tmp_path, samples)))


@pytest.mark.bad_input
def test_locomo_gold_answers_memory_qa_cannot_score_are_counted_and_named(
        tmp_path: Path) -> None:
    """A number is read as text; a list, an object, null, a boolean or NaN leaves the question
    to retrieval alone, counted and named, never dropped unseen nor read as "nan"."""
    samples = locomo_samples()
    golds = [["a", "b"], {"a": 1}, None, True, float("nan"), 7, 2.5]
    spots = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2)]  # none adversarial
    for (sample, index), gold in zip(spots, golds, strict=True):
        samples[sample]["qa"][index]["answer"] = gold
    path = write_json(tmp_path, samples)
    corpus = build("locomo", path=str(path))
    queries, report = by_id(corpus.queries), corpus.report
    assert [queries[f"conv-1:q{i}"].answerable for i in range(4)] == [False] * 4
    assert queries["conv-1:q0"].relevant  # still a retrieval query
    assert [queries[f"conv-2:q{i}"].answer for i in range(3)] == [None, "7", "2.5"]
    assert report.stats["gold_unscored"] == 5
    assert [p for p in report.problems if "memory QA" in p] == [
        f"{path}: question conv-{q}: left out of memory QA: its gold answer ({why}) is not text "
        f"or a number" for q, why in (("1:q0", "list"), ("1:q1", "object"), ("1:q2", "null"),
                                      ("1:q3", "boolean"), ("2:q0", "NaN"))]
    with pytest.raises(DatasetError, match=r"question conv-1:q0: its gold answer \(list\) is "
                                           r"not text or a number"):
        build("locomo", path=str(path), on_error="raise")


# longmemeval

def test_longmemeval_sessions_are_memories_deduplicated_across_haystacks() -> None:
    corpus = build("longmemeval", path=str(LONGMEMEVAL))
    memories = by_id(corpus.memories)
    assert sorted(memories) == sorted(["sharegpt_a1_0", "answer_food_1", "ultrachat_b2",
                                       "answer_gym_1", "answer_gym_2", "ultrachat_b2#q_gym02",
                                       "answer_car_1"])  # the _abs haystack is not read
    # shared by q_food01 and q_gym02 with one text: one memory, at the earliest date
    assert memories["sharegpt_a1_0"].timestamp == datetime(2023, 5, 18, 9, 0, tzinfo=UTC)
    food = memories["answer_food_1"]
    assert food.text == ("I've decided I want to learn to cook Thai food this year, starting "
                         "with green curry.\nWhere can I buy galangal and kaffir lime leaves?")
    assert (food.session, food.source) == ("answer_food_1", "answer_food_1")
    # the same id with another text in q_gym02: kept apart, counted
    assert memories["ultrachat_b2"].text == "What is the capital of Australia?"
    assert memories["ultrachat_b2#q_gym02"].text.startswith("Summarise the plot of Hamlet")
    assert memories["ultrachat_b2#q_gym02"].session == "ultrachat_b2"
    assert corpus.report.stats == {"session_id_reused": 1, "abstention": 1,
                                   "queries:single-session-user": 2,
                                   "queries:knowledge-update": 1}


def test_longmemeval_questions_search_their_own_haystack() -> None:
    queries = by_id(build("longmemeval", path=str(LONGMEMEVAL)).queries)
    assert sorted(queries) == ["q_car03", "q_food01", "q_gym02"]
    gym = queries["q_gym02"]
    assert gym.text == "How many times a week do I go to the gym now?"
    assert gym.relevant == {"answer_gym_1": 2, "answer_gym_2": 2}
    assert gym.asked_at == datetime(2023, 6, 10, 8, 15, tzinfo=UTC)
    assert gym.category == "knowledge-update"
    assert gym.scope == ("sharegpt_a1_0", "answer_gym_1", "answer_gym_2", "ultrachat_b2#q_gym02")
    assert queries["q_food01"].scope == ("sharegpt_a1_0", "answer_food_1", "ultrachat_b2")


def test_longmemeval_search_all_leaves_questions_unscoped() -> None:
    """`search: all`: every session of the file is searchable (by time, at replay)."""
    corpus = build("longmemeval", path=str(LONGMEMEVAL), search="all")
    assert all(q.scope is None for q in corpus.queries)
    assert by_id(corpus.queries)["q_gym02"].relevant == {"answer_gym_1": 2, "answer_gym_2": 2}
    assert len(corpus.memories) == len(build("longmemeval", path=str(LONGMEMEVAL)).memories)


def lme_instances() -> list[Any]:
    value = json.loads(LONGMEMEVAL.read_text())
    assert isinstance(value, list)
    return value


def test_longmemeval_relevant_ids_follow_a_renamed_session(tmp_path: Path) -> None:
    instances = lme_instances()
    instances[2]["haystack_sessions"][0] = [{"role": "user", "content": "A different session."}]
    instances[2]["answer_session_ids"] = ["answer_food_1"]
    corpus = build("longmemeval", path=str(write_json(tmp_path, instances)))
    car = by_id(corpus.queries)["q_car03"]
    assert car.relevant == {"answer_food_1#q_car03": 2}
    assert car.scope == ("answer_food_1#q_car03", "answer_car_1")
    assert by_id(corpus.memories)["answer_food_1#q_car03"].text == "A different session."
    assert corpus.report.stats["session_id_reused"] == 2


def test_longmemeval_all_turns_limit_and_skips(tmp_path: Path) -> None:
    corpus = build("longmemeval", path=str(LONGMEMEVAL), text="all", limit=1)
    assert [q.id for q in corpus.queries] == ["q_food01"]
    assert by_id(corpus.memories)["ultrachat_b2"].text == \
        "user: What is the capital of Australia?\nassistant: Canberra."
    instances = lme_instances()
    instances[0]["answer_session_ids"] = ["not_in_haystack"]
    instances[1]["question_date"] = "the day after"
    instances[1]["haystack_dates"][1] = "?"
    corpus = build("longmemeval", path=str(write_json(tmp_path, instances)))
    queries = by_id(corpus.queries)
    assert sorted(queries) == ["q_car03", "q_gym02"]
    assert queries["q_gym02"].asked_at is None
    assert by_id(corpus.memories)["answer_gym_1"].timestamp is None
    stats = corpus.report.stats
    assert (stats["answer_not_in_haystack"], stats["undated_questions"],
            stats["undated_sessions"], stats["abstention"]) == (1, 1, 1, 1)


@pytest.mark.bad_input
def test_longmemeval_gold_answers_memory_qa_cannot_score_are_counted_and_named(
        tmp_path: Path) -> None:
    instances = lme_instances()
    instances[0]["answer"], instances[1]["answer"], instances[2]["answer"] = \
        ["Thai", "Greek"], float("inf"), 3
    path = write_json(tmp_path, instances)
    corpus = build("longmemeval", path=str(path))
    queries = by_id(corpus.queries)
    assert sorted(queries) == ["q_car03", "q_food01", "q_gym02"]  # all still searched
    assert [queries[q].answer for q in ("q_food01", "q_gym02", "q_car03")] == [None, None, "3"]
    assert corpus.report.stats["gold_unscored"] == 2
    assert corpus.report.problems == [
        f"{path}: question {q}: left out of memory QA: its gold answer ({why}) is not text or a "
        f"number" for q, why in (("q_food01", "list"), ("q_gym02", "infinity"))]


@pytest.mark.bad_input
def test_longmemeval_bad_questions_are_named_by_position(tmp_path: Path) -> None:
    instances = lme_instances()
    instances[1]["haystack_dates"] = instances[1]["haystack_dates"][:2]
    instances[2]["haystack_sessions"][1][0] = {"role": "user"}
    path = write_json(tmp_path, [*instances, dict(instances[0])])
    corpus = build("longmemeval", path=str(path))
    assert [q.id for q in corpus.queries] == ["q_food01"]
    assert corpus.report.problems == [
        f"{path}: question 1: haystack_session_ids, haystack_dates and haystack_sessions must "
        f"be lists of one length",
        f"{path}: question 2: a turn is not an object with 'role' and 'content' as text",
        f"{path}: question 4: duplicate question_id 'q_food01'"]
    with pytest.raises(DatasetError, match=f"^{path}: question 1: "):
        build("longmemeval", path=str(path), on_error="raise")


@pytest.mark.bad_input
def test_longmemeval_with_nothing_usable_fails_loudly(tmp_path: Path) -> None:
    only_abstention = [i for i in lme_instances() if i["question_id"].endswith("_abs")]
    with pytest.raises(DatasetError, match=r"no usable LongMemEval questions .*'abstention': 1"):
        build("longmemeval", path=str(write_json(tmp_path, only_abstention)))
    with pytest.raises(DatasetError, match="LongMemEval file not found"):
        build("longmemeval", path=str(tmp_path / "missing.json"))


# configuration

@pytest.mark.parametrize(("option", "settings"), [
    ("locomo", [f"dataset.path={LOCOMO}", "dataset.unit=session_summary",
                "dataset.categories=[1,2]"]),
    ("longmemeval", [f"dataset.path={LONGMEMEVAL}", "dataset.text=all", "dataset.limit=2"]),
    ("memory_jsonl", [f"dataset.memories={MEMORIES}", f"dataset.queries={QUERIES}"]),
])
@pytest.mark.slow
def test_each_yaml_composes_validates_and_builds(option: str, settings: list[str]) -> None:
    cfg = compose(["+experiment=three_pass", f"dataset={option}", *settings])
    assert cfg.dataset.name == option
    assert validate(cfg).dataset.kind == CORPUS  # the option says which kind it reads
    assert isinstance(CORPORA.build(cfg.dataset), MemoryCorpus)


@pytest.mark.bad_input
@pytest.mark.parametrize(("node", "message"), [
    ({"name": "locomo", "path": "x", "unit": "sentence"}, "unit must be one of"),
    ({"name": "locomo", "path": "x", "categories": [0]}, "categories must be"),
    ({"name": "longmemeval", "path": "x", "text": "assistant"}, "text must be one of"),
    ({"name": "longmemeval", "path": "x", "limit": 0}, "limit must be"),
    ({"name": "locomo", "path": "x", "limit": 0}, "limit must be"),
    ({"name": "longmemeval", "path": "x", "search": "everything"}, "search must be one of"),
    ({"name": "memory_jsonl", "memories": "m", "queries": "q", "on_error": "ignore"},
     "on_error must be one of"),
])
def test_bad_settings_are_refused_before_loading(node: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CORPORA.build(OmegaConf.create(node))


@pytest.mark.bad_input
@pytest.mark.parametrize("option", ["locomo", "longmemeval", "memory_jsonl"])
def test_a_required_path_must_be_given(option: str) -> None:
    with pytest.raises(ConfigError, match="not set"):
        validate(compose(["+experiment=three_pass", f"dataset={option}"]))


@pytest.mark.bad_input
def test_an_experiment_that_gates_entries_refuses_a_corpus_by_name(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    from memeval.runner import run_experiment

    cfg = fast_config("+experiment=three_pass", "dataset=locomo",
                      f"dataset.path={FILES / 'locomo_small.json'}")
    with pytest.raises(ConfigError, match="dataset 'locomo' is a memory corpus .* only "
                                          r"\+experiment=retrieval_replay and memory_qa read one"):
        run_experiment(cfg, tmp_path / "run")
    assert not (tmp_path / "run" / "metrics.json").exists()
