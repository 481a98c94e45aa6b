"""BM25 over a fixed set of texts: the lexical baseline that retrieval replay sets beside cosine.

Okapi BM25 with Lucene's idf, log(1 + (N − df + 0.5) / (df + 0.5)), which never goes negative,
so a word found in most memories still counts a little instead of pushing a match down. Tokens
are lower-cased runs of letters and digits (an identifier like `maxReplicas` or `D1:3` splits
into its parts); English stop words are dropped, since a question's "what did she say about"
would otherwise decide the ranking.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from memeval.utils.english import stop_words

TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    stop = stop_words()
    return [t for t in TOKEN.findall(text.lower()) if t not in stop]


class BM25:
    """Scores of one query against every indexed text, in one sparse product."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        from scipy.sparse import csr_matrix  # loaded when an index is built, not at registration

        counted = [Counter(tokens(t)) for t in texts]
        self.vocabulary: dict[str, int] = {}
        rows, cols, values = [], [], []
        for row, counts in enumerate(counted):
            for word, n in counts.items():
                rows.append(row)
                cols.append(self.vocabulary.setdefault(word, len(self.vocabulary)))
                values.append(n)
        shape = (len(texts), len(self.vocabulary))
        tf = csr_matrix((np.array(values, dtype=float), (rows, cols)), shape=shape)
        lengths = np.array([sum(c.values()) for c in counted], dtype=float)
        mean = lengths.mean() if lengths.size and lengths.mean() > 0 else 1.0
        df = np.bincount(np.array(cols, dtype=int), minlength=len(self.vocabulary))
        self.idf = np.log1p((len(texts) - df + 0.5) / (df + 0.5))
        # the saturated term weight of every (text, word) pair, computed once
        norm = k1 * (1 - b + b * lengths / mean)
        weighted = tf.tocoo()
        saturated = weighted.data * (k1 + 1) / (weighted.data + norm[weighted.row])
        self.weights = csr_matrix((saturated, (weighted.row, weighted.col)), shape=shape)

    def scores(self, query: str, rows: np.ndarray | None = None) -> np.ndarray:
        """One score per indexed text (per one of `rows`, when given: a query searching a few
        texts of a large index costs those few); 0 for a text sharing no word with the query."""
        weights = self.weights if rows is None else self.weights[rows]
        ids = [self.vocabulary[t] for t in set(tokens(query)) if t in self.vocabulary]
        if not ids:
            return np.zeros(weights.shape[0])
        column = np.zeros(len(self.vocabulary))
        column[ids] = self.idf[ids]
        return np.asarray(weights @ column).ravel()
