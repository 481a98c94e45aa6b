"""`answerer=extractive`: an offline baseline that answers from the recalled memories' own words,
so memory QA runs with no model and no key and its figures are real.

The sentence of the recalled memories sharing the most content words (Porter stems,
scikit-learn's English stop words aside) with the question is the evidence; ties go to the
memory the system ranked higher. A question asking when is answered with that memory's date;
any other with the evidence's words that the question does not already hold, the first
`max_words` of them. When no sentence shares a content word with the question, the memories do
not say: the answer is LoCoMo's own phrase for it. No rule here was chosen on any benchmark's
answers.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from memeval.backends.answerers.base import ANSWERERS, Answer, Recalled, when
from memeval.registry import bounded
from memeval.utils.english import stem, stop_words

NO_ANSWER = "No information available"
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
TIME_WORDS = ("when", "what date", "what year", "what month", "which year", "which month")


@dataclass
class ExtractiveConfig:
    max_words: int = bounded(6, 1)  # mem0's answer prompt asks for fewer than 5-6 words


def _content(text: str) -> list[tuple[str, str]]:
    """(word, stem) of each content word, in order."""
    stop = stop_words()
    return [(w, stem(w.lower())) for w in WORD.findall(text) if w.lower() not in stop]


class ExtractiveAnswerer:
    name = "extractive"

    def __init__(self, cfg: ExtractiveConfig) -> None:
        self.cfg = cfg

    def answer(self, question: str, memories: Sequence[Recalled]) -> Answer:
        started = time.perf_counter()
        asked = {s for _, s in _content(question)}
        best: tuple[int, int, str, Recalled] | None = None
        for rank, memory in enumerate(memories):
            for sentence in SENTENCE.split(memory.text):
                shared = len(asked & {s for _, s in _content(sentence)})
                if shared and (best is None or (shared, -rank) > best[:2]):
                    best = (shared, -rank, sentence, memory)
        if best is None:
            text = NO_ANSWER
        elif question.lower().lstrip().startswith(TIME_WORDS) and best[3].written is not None:
            text = when(best[3].written)
        else:
            words = [w for w, s in _content(best[2]) if s not in asked]
            text = " ".join(words[: self.cfg.max_words]) or best[2]
        return Answer(text, (time.perf_counter() - started) * 1000.0)

    def close(self) -> None:
        """Nothing held."""


@ANSWERERS.register("extractive", ExtractiveConfig)
def build_extractive(cfg: ExtractiveConfig, **_: object) -> ExtractiveAnswerer:
    return ExtractiveAnswerer(cfg)
