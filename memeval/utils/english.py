"""English words as memeval's text matchers read them: NLTK's Porter stems (LoCoMo's F1 uses
them) and scikit-learn's English stop words (BM25 and the extractive answerer drop them)."""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any


@cache
def _stemmer() -> Any:
    """NLTK (a second and more to import) loads on the first word stemmed, not with memeval."""
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return str(_stemmer().stem(word))


@cache
def stop_words() -> frozenset[str]:
    """Loaded on first use, not when a module that may need them is imported."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)
