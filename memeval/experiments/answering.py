"""Answering from recalled memories and grading the answer: what the QA experiments share
(memory_qa on LoCoMo and LongMemEval, coding_memory on real coding sessions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memeval.backends.answerers.base import Answer
from memeval.backends.answerers.grader import Grade, Grader
from memeval.backends.judges.base import JudgeError
from memeval.metrics.gate_metrics import share_failed


def graded(grader: Grader, question: str, gold: str | None, answer: Answer) -> Grade | None:
    """J for a question with a gold answer, once there is an answer to grade."""
    if gold is None or answer.error:
        return None
    return grader.grade(question, gold, answer.text)


def answer_cost(answer: Answer, grade: Grade | None) -> dict[str, Any]:
    """A question's tokens and money, its answer's and its grade's."""
    return {"tokens_in": answer.input_tokens + (grade.input_tokens if grade else 0),
            "tokens_out": answer.output_tokens + (grade.output_tokens if grade else 0),
            "answer_tokens_in": answer.input_tokens, "answer_tokens_out": answer.output_tokens,
            "cost_usd": answer.cost_usd + (grade.cost_usd if grade else 0.0),
            "answer_cached": answer.cached, "answer_error": answer.error,
            "grade_error": grade.error if grade else ""}


def answer_failures(rows: Sequence[Mapping[str, Any]], limit: float) -> list[Exception]:
    """More answers or grades failing than `limit` (experiment.max_error_share) of the rows:
    the run fails once its results are written."""
    found: list[Exception] = []
    for column, what, noun in (("answer_error", "answerer", "answers"),
                               ("grade_error", "grader", "grades")):
        failed = [row[column] for row in rows if row[column]]
        if message := share_failed(failed, len(rows), limit, "experiment.max_error_share", what,
                                   noun):
            found.append(JudgeError(message))
    return found
