"""Shared by the system tests: memeval's embedder served on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.serve.embeddings import EmbeddingsServer
from memeval.serve.http import Request, make_server, url_of


@pytest.fixture
def embeddings_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """memeval's hashing embedder as /v1/embeddings on loopback, recording each request."""
    server = EmbeddingsServer(HashingEmbedder(256), "hashing")
    seen: list[dict[str, Any]] = []

    def embeddings(request: Request) -> tuple[int, Any]:
        seen.append(request.body)
        return server.embeddings(request)

    http = make_server({"/v1/embeddings": {"POST": embeddings}}, "127.0.0.1", 0)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield url_of(http) + "/v1", seen
    finally:
        http.shutdown()
        http.server_close()
