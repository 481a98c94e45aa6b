"""Lexical anchor features: how densely a text carries the judge rubric's 'specific anchors'.

The value gate keeps text with concrete identifiers (paths, inline code, numbers, snake/camel
case names, causal wording) and skips procedural narration. Counting those per 1,000 characters
gives a scorer signal that sentence embeddings blur; the patterns are configuration and the
weights each one gets are learned from the judge's verdicts, never fixed here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np


class LexicalFeatures:
    def __init__(self, patterns: Mapping[str, str]) -> None:
        self.names = [*patterns, "log_length"]
        self._patterns = [re.compile(p) for p in patterns.values()]

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), len(self.names)), dtype=np.float32)
        for i, text in enumerate(texts):
            per_kchar = max(len(text), 1) / 1000.0
            for j, pattern in enumerate(self._patterns):
                rows[i, j] = sum(1 for _ in pattern.finditer(text)) / per_kchar
            rows[i, -1] = np.log1p(len(text))
        return np.log1p(rows)
