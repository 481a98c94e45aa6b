"""Scores of a generated answer against a benchmark's gold answer, as the field computes them.

- **LoCoMo F1** is LoCoMo's (`task_eval/evaluation.py`): the answer and the gold are
  lower-cased, their commas, punctuation and the words a/an/the/and removed, each word
  Porter-stemmed, and the F1 of the two bags of words taken. Per category, as LoCoMo does:
  multi-hop splits both on commas and averages, over the gold's parts, each part's best F1
  against the answer's parts; open-domain keeps the gold's text before its first `;`;
  adversarial questions (nothing to answer) score 1 when the answer says "no information
  available" or "not mentioned", else 0.
- **mem0 F1** is mem0's (its `evaluation/metrics/utils.py`, from A-Mem), another measure under
  the same name: the F1 of the two *sets* of words of the lower-cased texts with `.`, `,`, `!`
  and `?` turned into spaces; no stemming, no article removal, no per-category rule. "The cats"
  against "cat" is 1.0 in LoCoMo's and 0.0 in mem0's.
- **BLEU-1** is mem0's (its `evaluation/metrics/utils.py`, from A-Mem): NLTK's sentence BLEU
  with unigram weights and smoothing method 1, over NLTK's word tokens of the lower-cased texts.
  NLTK's sentence splitter needs data that cannot be downloaded here, so sentences are split at
  `.`, `!` or `?` followed by a space before NLTK's word tokenizer runs: the same tokens for an
  answer of one sentence, as nearly all are.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import cache
from typing import Any

from memeval.utils.english import stem

MULTI_HOP, OPEN_DOMAIN = "multi-hop", "open-domain"
# What LoCoMo accepts as the answer to an adversarial question: the memories do not say.
NO_ANSWER_PHRASES = ("no information available", "not mentioned")
ARTICLES = re.compile(r"\b(a|an|the|and)\b")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
PUNCTUATION = set(string.punctuation)


@cache
def _nltk() -> tuple[Any, Any, Any]:
    """NLTK's word tokenizer, sentence BLEU and smoothing, imported on first use."""
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    return NLTKWordTokenizer(), sentence_bleu, SmoothingFunction().method1


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: commas dropped, lower-cased, punctuation and a/an/the/and
    removed, whitespace collapsed."""
    text = "".join(ch for ch in text.replace(",", "").lower() if ch not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def token_f1(answer: str, gold: str) -> float:
    """LoCoMo's `f1_score`: F1 over the two bags of stemmed, normalised words."""
    mine = [stem(w) for w in normalize_answer(answer).split()]
    theirs = [stem(w) for w in normalize_answer(gold).split()]
    same = sum((Counter(mine) & Counter(theirs)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(mine), same / len(theirs)
    return 2 * precision * recall / (precision + recall)


def says_no_answer(answer: str) -> bool:
    lowered = answer.lower()
    return any(phrase in lowered for phrase in NO_ANSWER_PHRASES)


def locomo_f1(answer: str, gold: str | None, category: str, unanswerable: bool) -> float:
    """The F1 LoCoMo's evaluation gives `answer` for a question of `category`."""
    if unanswerable or gold is None:
        return 1.0 if says_no_answer(answer) else 0.0
    if category == MULTI_HOP:
        parts = [p.strip() for p in answer.split(",")]
        golds = [g.strip() for g in gold.split(",")]
        return sum(max(token_f1(p, g) for p in parts) for g in golds) / len(golds)
    if category == OPEN_DOMAIN:
        gold = gold.split(";")[0].strip()
    return token_f1(answer, gold)


def _mem0_words(text: str) -> set[str]:
    for mark in ".,!?":
        text = text.replace(mark, " ")
    return set(text.lower().split())


def mem0_f1(answer: str, gold: str | None) -> float:
    """mem0's F1: over the two word sets; 0 when either side is empty (as its
    `calculate_metrics`)."""
    if not answer.strip() or not gold or not gold.strip():
        return 0.0
    mine, theirs = _mem0_words(answer.strip()), _mem0_words(gold.strip())
    same = len(mine & theirs)
    if not mine or not theirs or same == 0:
        return 0.0
    precision, recall = same / len(mine), same / len(theirs)
    return 2 * precision * recall / (precision + recall)


def _words(text: str) -> list[str]:
    tokenizer = _nltk()[0]
    return [token for sentence in SENTENCE_END.split(text.lower())
            for token in tokenizer.tokenize(sentence)]


def bleu1(answer: str, gold: str | None) -> float:
    """mem0's BLEU-1; 0 when either side is empty (as mem0's `calculate_metrics`)."""
    if not answer.strip() or not gold or not gold.strip():
        return 0.0
    _, sentence_bleu, smooth = _nltk()
    return float(sentence_bleu([_words(gold)], _words(answer), weights=(1, 0, 0, 0),
                               smoothing_function=smooth))
