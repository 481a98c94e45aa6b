"""OpenAI-compatible `/embeddings` client: OpenAI, or a local llama.cpp/TEI/vLLM server.

Lets a sweep compare embedding models served over HTTP without adding them as Python deps; the
default base_url is a llama.cpp `llama-server --embeddings` on loopback.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memeval.backends.embedders.base import EMBEDDERS, EmbeddingError, l2_normalise
from memeval.registry import ConfigError, bounded
from memeval.utils.http_deadline import BoundedClient
from memeval.utils.http_retry import (
    HttpEndpointConfig,
    HttpRetryError,
    explain_failure,
    post_json,
)
from memeval.utils.redact import redact

PROBE = "memeval preflight"  # the one text the preflight embeds

log = logging.getLogger(__name__)


@dataclass
class OpenAIHttpConfig(HttpEndpointConfig):
    """`dim: 0` learns the width from the first response; a non-zero dim is checked against it."""

    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = "local"
    batch_size: int = bounded(64, 1)
    dim: int = bounded(0, 0)
    down_for_s: float = bounded(30.0, 0)

    def validate(self) -> None:
        super().validate()
        if self.batch_size <= 0:
            raise ValueError("batch_size must be positive")
        if self.down_for_s < 0:
            raise ValueError("down_for_s must be >= 0")
        if self.dim < 0:
            raise ValueError("dim must be >= 0 (0 = learn from the first response)")


class OpenAIHttpEmbedder:
    """Every error names the URL and the setting to change (credentials in the URL masked)."""

    def __init__(self, cfg: OpenAIHttpConfig, *, client: BoundedClient | None = None) -> None:
        self.cfg = cfg
        self.base_url = cfg.base_url.rstrip("/")
        self.url = f"{self.base_url}/embeddings"
        self.shown_url = redact(self.url)
        self.identity = f"openai_http:{self.base_url}:{cfg.model}"
        self.dim = cfg.dim
        self._client = client if client is not None else BoundedClient()
        self._policy = cfg.retry_policy()
        self._down_until = 0.0  # monotonic time before which the server counts as down
        self._down_because = ""

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        env = self.cfg.api_key_env
        if env:
            key = os.environ.get(env, "").strip()
            if not key:
                raise EmbeddingError(
                    f"environment variable {env} is not set: export the API key for "
                    f"{self.shown_url} in it, or set embedder.api_key_env to the variable "
                    f"holding it"
                )
            headers["authorization"] = f"Bearer {key}"
        return headers

    def _parse(self, data: Any, expected: int) -> np.ndarray:
        """Rows ordered by `index`: the spec lets servers return them in any order."""
        try:
            items = sorted(data["data"], key=lambda item: int(item["index"]))
            indices = [int(item["index"]) for item in items]
            rows = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as err:
            raise EmbeddingError(
                f"unexpected response shape from {self.shown_url} ({type(err).__name__}: {err}):"
                f" is embedder.base_url an OpenAI-compatible server?"
            ) from err
        if indices != list(range(expected)):
            raise EmbeddingError(
                f"{self.shown_url} returned indices {indices[:10]} for {expected} input(s)"
            )
        if rows.ndim != 2 or rows.shape[1] == 0:
            raise EmbeddingError(f"{self.shown_url} returned embeddings of shape {rows.shape}")
        if not np.isfinite(rows).all():
            raise EmbeddingError(f"{self.shown_url} returned non-finite embedding values")
        if self.dim and rows.shape[1] != self.dim:
            raise EmbeddingError(
                f"{self.shown_url} returned {rows.shape[1]}-dim embeddings; expected {self.dim} "
                f"(embedder.dim)"
            )
        return rows

    def _request(self, batch: list[str], headers: dict[str, str]) -> np.ndarray:
        result = post_json(
            self.url,
            {"model": self.cfg.model, "input": batch},
            self._policy,
            headers=headers,
            client=self._client,
        )
        rows = self._parse(result.data, len(batch))
        self.dim = self.dim or int(rows.shape[1])
        return rows

    def preflight(self) -> None:
        """The key is set and the server embeds one text: otherwise the run stops before any
        work, naming the URL and the setting to change."""
        if not self.cfg.preflight:
            return
        try:
            self._request([PROBE], self._headers())
        except (EmbeddingError, HttpRetryError) as err:
            reason = (explain_failure(err, setting="embedder", key_env=self.cfg.api_key_env)
                      if isinstance(err, HttpRetryError) else str(err))
            raise ConfigError(
                f"embedder=openai_http failed its preflight: {reason} (embedder.preflight=false "
                f"skips the check, e.g. to replay from the embedding cache offline)"
            ) from None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._down_until > time.monotonic():
            raise EmbeddingError(self._down_because)
        headers = self._headers()
        out: list[np.ndarray] = []
        for start in range(0, len(texts), self.cfg.batch_size):
            batch = list(texts[start : start + self.cfg.batch_size])
            try:
                out.append(self._request(batch, headers))
            except HttpRetryError as err:
                reason = explain_failure(err, setting="embedder", key_env=self.cfg.api_key_env)
                if err.exhausted:  # unreachable or failing, not a request it refused
                    self._down_until = time.monotonic() + self.cfg.down_for_s
                    self._down_because = (f"{reason}; not asked again for "
                                          f"{self.cfg.down_for_s:g} s (embedder.down_for_s)")
                    log.warning("embedding failed: %s", self._down_because)
                raise EmbeddingError(reason) from err
        return l2_normalise(np.concatenate(out, axis=0))

    def close(self) -> None:
        self._client.close()


@EMBEDDERS.register("openai_http", OpenAIHttpConfig)
def build_openai_http(cfg: OpenAIHttpConfig, **_: Any) -> OpenAIHttpEmbedder:
    return OpenAIHttpEmbedder(cfg)
