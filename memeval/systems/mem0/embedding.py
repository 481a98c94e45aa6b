"""mem0's embedder slot: memeval's embedder bridged into it, and every vector through it checked.

mem0 neither checks what its embedder returns nor names what failed: an endpoint answering 500
or JSON nested too deep surfaces as openai's or json's traceback, a vector of the wrong width as
FAISS's AssertionError, and NaN vectors are stored and searched without a word, every search then
coming back empty. So whichever embedder fills the slot, each vector it returns is checked
(numbers, finite, the index's width) before mem0 stores or searches with it, and every failure
is one EmbeddingError line naming mem0, the call and the value.

mem0's `add()` asks its embedder for one text at a time, and one text per forward pass is what
made filling mem0 slow. So the texts about to be added are embedded ahead, many in one call
(`ahead`), and each `add()` takes its own vector, or its own failure, from them.
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

        def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[Any]:
            return list(embed(texts))

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


Held = list[float] | EmbeddingError  # a text's vector, or why it has none


class Slot(Protocol):
    """What memeval asks of the embedder in mem0's slot besides what mem0 does."""

    spent: Stopwatch  # every call into the embedder it holds

    def ahead(self, texts: Sequence[str]) -> None:
        """Embed `texts` in one call, for the `add()`s about to ask for them one by one."""


def _raised(held: Held) -> list[float]:
    if isinstance(held, EmbeddingError):
        raise held
    return held


def _each(value: Any, width: int, where: str) -> Held:
    try:
        return checked_vector(value, width, where)
    except EmbeddingError as err:
        return err


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
            self.held: dict[str, Held] = {}  # embedded ahead, each taken by its add()

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            held = self.held.pop(text, None) if memory_action == "add" else None
            if held is not None:
                return _raised(held)
            where, value = calling(memory_action, lambda: inner.embed(text, memory_action))
            return checked_vector(value, width, where)

        def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
            return [_raised(held) for held in self._batch(texts, memory_action)]

        def ahead(self, texts: Sequence[str]) -> None:
            """A failure of the whole call is its first text's, as it would have been the
            first add()'s; the others are then embedded one by one, as mem0 asks."""
            try:
                self.held = dict(zip(texts, self._batch(list(texts), "add"), strict=True))
            except EmbeddingError as err:
                self.held = {texts[0]: err} if texts else {}

        def _batch(self, texts: list[str], action: str) -> list[Held]:
            """Each text's checked vector, or what is wrong with it."""
            where, values = calling(action, lambda: list(inner.embed_batch(texts, action)))
            if len(values) != len(texts):
                raise EmbeddingError(f"{where} returned {len(values)} vectors for "
                                     f"{len(texts)} texts")
            return [_each(value, width, where) for value in values]

    return CheckedEmbedding()
