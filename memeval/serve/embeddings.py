"""`python -m memeval serve embeddings`: memeval's embedder (the bundled MiniLM by default) as an
OpenAI-compatible `POST /v1/embeddings`, so memledger (through LiteLLM) and other tools can use
it offline. Vectors come through the content-addressed embedding cache, as in a run.

`input` is a string or a list of at most `--max-inputs` strings (2048, the OpenAI API's own cap;
more is a 413 naming it); `model` is echoed; `encoding_format: base64` sends
little-endian float32 bytes; `dimensions` is accepted when it equals the model's width (memeval
never truncates a vector). `usage` counts whitespace-separated words: the model's own tokenizer
is not exposed, so it is an estimate.
"""

from __future__ import annotations

import base64
import threading
from typing import Any

import numpy as np

from memeval.backends.embedders.base import Embedder, EmbeddingError
from memeval.serve.http import MAX_INPUTS, ApiError, Request, Routes

ENCODINGS = ("float", "base64")


def _inputs(raw: Any, cap: int) -> list[str]:
    texts = [raw] if isinstance(raw, str) else raw
    if isinstance(texts, list) and len(texts) > cap:
        raise ApiError(413, f"input holds {len(texts)} texts, over the {cap} one request may "
                            f"carry (serve embeddings --max-inputs): send them in batches")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "input must be a string or a non-empty list of strings (token "
                            "arrays are not supported: send text)")
    return texts


class EmbeddingsServer:
    def __init__(self, embedder: Embedder, model: str, max_inputs: int = MAX_INPUTS) -> None:
        self.embedder = embedder
        self.model = model  # answered when a request names none
        self.max_inputs = max_inputs
        self._lock = threading.Lock()

    @property
    def routes(self) -> Routes:
        return {"/v1/embeddings": {"POST": self.embeddings},
                "/embeddings": {"POST": self.embeddings}}

    def embeddings(self, request: Request) -> tuple[int, Any]:
        body = request.body
        if not isinstance(body, dict):
            raise ApiError(400, "the body must be a JSON object with `input`")
        texts = _inputs(body.get("input"), self.max_inputs)
        model = body.get("model") or self.model
        encoding = body.get("encoding_format") or "float"
        if not isinstance(model, str) or encoding not in ENCODINGS:
            raise ApiError(400, f"model must be a string and encoding_format one of "
                                f"{', '.join(ENCODINGS)}")
        dimensions = body.get("dimensions")
        with self._lock:
            width = self.embedder.dim
            if dimensions is not None and dimensions != width:
                raise ApiError(400, f"dimensions {dimensions!r} differs from the model's {width}:"
                                    f" memeval serves whole vectors; leave dimensions out or send "
                                    f"{width}")
            try:
                vectors = self.embedder.embed(texts)
            except EmbeddingError as err:
                raise ApiError(503, f"embedding failed: {err}") from None
        data = [{"object": "embedding", "index": i,
                 "embedding": _encoded(vector, encoding)} for i, vector in enumerate(vectors)]
        words = sum(len(text.split()) for text in texts)
        return 200, {"object": "list", "model": model, "data": data,
                     "usage": {"prompt_tokens": words, "total_tokens": words}}


def _encoded(vector: np.ndarray, encoding: str) -> Any:
    if encoding == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]
