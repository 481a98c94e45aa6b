"""Memory QA's scores match their definitions: LoCoMo's F1 per category (the expected values
were computed with LoCoMo's own task_eval/evaluation.py), mem0's F1 and BLEU-1 (by hand)."""

from __future__ import annotations

import math

import pytest

from memeval.metrics.qa_scores import bleu1, locomo_f1, mem0_f1, normalize_answer, token_f1


@pytest.mark.parametrize(("answer", "gold", "category", "expected"), [
    ("He went running in the park, twice", "running, park", "multi-hop", 1 / 3),
    ("The meeting was on 7 May 2023", "7 May 2023", "temporal", 2 / 3),
    ("psychology", "Psychology, counseling certification; maybe", "open-domain", 0.5),
    ("She adopted the dogs", "adopted dogs", "single-hop", 0.8),
    ("Melanie", "Caroline", "single-hop", 0.0),
])
def test_f1_is_locomos_per_category(answer: str, gold: str, category: str,
                                    expected: float) -> None:
    assert locomo_f1(answer, gold, category, unanswerable=False) == pytest.approx(expected)


@pytest.mark.parametrize(("answer", "expected"), [
    ("That is not mentioned in the conversation", 1.0),
    ("No information available.", 1.0),
    ("Her instructor is called Ana", 0.0),
])
def test_an_adversarial_question_is_right_only_when_the_answer_says_the_memories_do_not_hold_it(
        answer: str, expected: float) -> None:
    assert locomo_f1(answer, None, "adversarial", unanswerable=True) == expected


def test_normalisation_and_stemming_are_locomos() -> None:
    assert normalize_answer("The Cats, and a Dog!") == "cats dog"
    assert token_f1("running dogs", "the dog runs") == 1.0  # Porter: run, dog


def test_bleu1_is_clipped_unigram_precision_times_the_brevity_penalty() -> None:
    assert bleu1("7 May 2023", "7 may 2023") == pytest.approx(1.0)
    assert bleu1("a b c d", "a b") == pytest.approx(0.5)  # longer than the gold: no penalty
    assert bleu1("a", "a b c") == pytest.approx(math.exp(1 - 3))  # shorter: exp(1 - r/c)
    assert bleu1("", "a") == 0.0 and bleu1("a", None) == 0.0


@pytest.mark.parametrize(("answer", "gold", "locomo", "mem0"), [
    ("The cats", "cat", 1.0, 0.0),  # LoCoMo drops the article and stems; mem0 does neither
    ("running dogs", "the dog runs", 1.0, 0.0),
    ("dog dog cat", "dog cat", 0.8, 1.0),  # a bag of words against a set
    ("7 May, 2023!", "7 may 2023", 1.0, 1.0),  # both drop case and these marks
])
def test_mem0s_f1_is_another_measure_than_locomos(answer: str, gold: str, locomo: float,
                                                   mem0: float) -> None:
    assert locomo_f1(answer, gold, "single-hop", unanswerable=False) == pytest.approx(locomo)
    assert mem0_f1(answer, gold) == pytest.approx(mem0)


def test_mem0s_f1_is_zero_when_either_side_is_empty() -> None:
    assert mem0_f1("", "a") == 0.0 and mem0_f1("a", None) == 0.0 and mem0_f1(" ", "a") == 0.0
