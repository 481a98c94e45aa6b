"""mem0's embedder slot: memeval's embedder bridged into it, and every vector through it checked.

mem0 neither checks what its embedder returns nor names what failed: an endpoint answering 500
or JSON nested too deep surfaces as openai's or json's traceback, a vector of the wrong width as
FAISS's AssertionError, and NaN vectors are stored and searched without a word, every search then
coming back empty. So whichever embedder fills the slot, each vector it returns is checked
(numbers, finite, the index's width) before mem0 stores or searches with it, and every failure
is one EmbeddingError line naming mem0, the call and the value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from memeval.backends.embedders.base import EmbeddingError
from memeval.utils.http_retry import preview
from memeval.utils.redact import redact
from memeval.utils.stopwatch import Stopwatch

_T = TypeVar("_T")


def one_line(text: str) -> str:
    """An error's words on one line, redacted and cut short, for a message naming mem0."""
    return preview(redact(" ".join(text.split())))


# what mem0 raises reading an answer of the wrong shape (openai hands it the raw text of a body
# whose JSON it could not parse, such as one nested too deep)
_SHAPE = (AttributeError, IndexError, KeyError, TypeError)


def _said(err: BaseException) -> str:
    """The error and what caused it (openai's "Request timed out." hides the deadline's words)."""
    cause = err.__cause__
    said = f"{type(err).__name__}: {err}"
    return said if cause is None else f"{said} ({type(cause).__name__}: {cause})"


def bridge(embed: Callable[[Sequence[str]], Any], width: int) -> Any:
    """memeval's embedder as mem0 calls an embedder."""
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.embeddings.base import EmbeddingBase

    class MemevalEmbedding(EmbeddingBase):
        def __init__(self) -> None:
            super().__init__(BaseEmbedderConfig(embedding_dims=width))

        def embed(self, text: str, memory_action: str | None = None) -> Any:
            return embed([text])[0]

    return MemevalEmbedding()


def checked_vector(value: Any, width: int, where: str) -> list[float]:
    """`value` as mem0 stores it, once it is `width` finite numbers."""
    try:
        vector = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, RecursionError):
        raise EmbeddingError(f"{where} returned {preview(repr(value), 80)}, not a vector of "
                             f"numbers") from None
    if vector.shape != (width,):
        got = f"{vector.size} values" if vector.ndim == 1 else f"shape {vector.shape}"
        raise EmbeddingError(f"{where} returned a vector of {got}, not the {width} of mem0's "
                             f"index")
    bad = np.flatnonzero(~np.isfinite(vector))
    if bad.size:
        raise EmbeddingError(f"{where} returned {vector[bad[0]]} at position {bad[0]} of a "
                             f"vector ({bad.size} not finite): no search could find it")
    return [float(x) for x in vector]


class Slot(Protocol):
    """What memeval reads of the embedder in mem0's slot."""

    spent: Stopwatch  # every call into the embedder it holds


def checked(inner: Any, width: int, who: str) -> Any:
    """`inner` (a mem0 embedder) in mem0's slot, its failures and its vectors checked, its time
    kept (a Slot). `who` names it in every message ("mem0's OpenAI embedder at http://…")."""
    from mem0.embeddings.base import EmbeddingBase

    spent = Stopwatch()

    def calling(action: str | None, call: Callable[[], _T]) -> tuple[str, _T]:
        where = f"{who}, embedding for {action or 'mem0'}"
        try:
            with spent.running():
                return where, call()
        except EmbeddingError as err:  # memeval's own embedder, already one line
            raise EmbeddingError(f"{where}: {err}") from None
        except _SHAPE as err:  # mem0 reading a body that is not embeddings (JSON too deep)
            raise EmbeddingError(one_line(f"{where}: an answer not shaped as embeddings "
                                          f"({_said(err)})")) from None
        except Exception as err:  # the endpoint's status, a timeout, a refused connection
            raise EmbeddingError(one_line(f"{where}: {_said(err)}")) from None

    class CheckedEmbedding(EmbeddingBase):
        def __init__(self) -> None:
            super().__init__(inner.config)
            self.spent = spent

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            where, value = calling(memory_action, lambda: inner.embed(text, memory_action))
            return checked_vector(value, width, where)

        def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
            where, values = calling(memory_action,
                                    lambda: list(inner.embed_batch(texts, memory_action)))
            if len(values) != len(texts):
                raise EmbeddingError(f"{where} returned {len(values)} vectors for "
                                     f"{len(texts)} texts")
            return [checked_vector(value, width, where) for value in values]

    return CheckedEmbedding()
