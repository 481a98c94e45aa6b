"""Memory QA's offline answerer and the grader's reading of a label."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memeval.backends.answerers.base import Recalled, context
from memeval.backends.answerers.extractive import NO_ANSWER, ExtractiveAnswerer, ExtractiveConfig
from memeval.backends.answerers.grader import read_label

MAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
MEMORIES = [Recalled("Leo: My sister Ana flies in next week. We will hike the ridge trail.", MAY),
            Recalled("Maya: I signed up for the pottery class at the community center.",
                     datetime(2023, 5, 20, tzinfo=UTC))]


def answer(question: str) -> str:
    return ExtractiveAnswerer(ExtractiveConfig()).answer(question, MEMORIES).text


def test_a_question_asking_when_is_answered_with_the_evidence_s_date() -> None:
    assert answer("When did Maya sign up for the pottery class?") == "20 May 2023"


def test_other_questions_get_the_evidence_s_words_the_question_does_not_hold() -> None:
    assert answer("What class did Maya sign up for?") == "pottery community center"


def test_memories_sharing_no_content_word_with_the_question_say_so() -> None:
    assert answer("What is Priya's favourite vegetable?") == NO_ANSWER


def test_the_context_dates_each_memory() -> None:
    assert context(MEMORIES).splitlines()[0].startswith("- [8 May 2023] Leo: My sister")


@pytest.mark.parametrize(("reply", "label"), [
    ('The answer names the same class. {"label": "CORRECT"}', True),
    ('{"label": "WRONG"}', False),
    ("Different topic. WRONG", False),
    ("CORRECT or WRONG, I cannot tell", None),
    ("no label here", None),
])
def test_the_grader_reads_one_label_or_none(reply: str, label: bool | None) -> None:
    assert read_label(reply) is label
