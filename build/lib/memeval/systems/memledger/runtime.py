"""What driving the memledger package offline takes: one event loop, sqlite-vec, quiet LiteLLM.

memledger is async throughout, and aiosqlite's connection and LiteLLM's HTTP clients belong to
the loop they were first used on, so every call goes through one loop in a daemon thread
(`Loop`), never a fresh `asyncio.run`. This interpreter's sqlite3 cannot load extensions; the
stock SQLite backend then answers searches with the most recent rows and no similarity (not
semantic, and its conflict check never fires). `open_memledger` therefore runs memledger's own
backend code with aiosqlite pointed at sqlean (shipped with Phoenix), which loads sqlite-vec:
search is then exact cosine. Which path is in use is reported (`SEARCH_PATHS`).
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
SEARCH_PATHS = {
    True: "sqlite-vec via sqlean: exact cosine over every stored embedding",
    False: "no sqlite-vec: memledger's fallback returns the most recent memories with no "
           "similarity, so search is not semantic and conflicts never fire",
}


class Loop:
    """One event loop in a daemon thread; `run` blocks until a coroutine on it finishes."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                        name="memeval-memledger")
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(self.timeout_s)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()


class EmbedderBridge:
    """memeval's embedder as the object memledger calls (`await embed_single(text)`)."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray]) -> None:
        self._embed = embed

    async def embed_single(self, text: str) -> list[float]:
        return [float(x) for x in self._embed([text])[0]]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embed(texts)]


def quiet_litellm(base_url: str) -> None:
    """LiteLLM reads its price list from the package (not the internet), drops the
    `dimensions` memledger always sends, and sends embeddings to `base_url`."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # read at import
    import litellm

    litellm.drop_params = True
    litellm.api_base = base_url
    litellm.api_key = litellm.api_key or "memeval"


@functools.cache
def _sqlean_backend() -> str:
    """Register memledger's SQLite backend, initialised through sqlean; its registry name."""
    from memledger import register_backend
    from memledger.backends.sqlite import SQLiteBackend
    from memledger.memledger import _register_builtin_backends

    class SqleanBackend(SQLiteBackend):
        async def initialize(self, config: dict[str, Any]) -> None:
            import aiosqlite
            import aiosqlite.core
            import sqlean

            package: Any = aiosqlite
            core: Any = aiosqlite.core
            saved = core.sqlite3, package.Row, core.Thread
            core.sqlite3, package.Row = sqlean, sqlean.Row
            # a daemon worker: a connection left open cannot hang the interpreter at exit
            core.Thread = functools.partial(threading.Thread, daemon=True)
            try:
                await super().initialize(config)
            finally:
                core.sqlite3, package.Row, core.Thread = saved

    _register_builtin_backends()
    register_backend("memeval_sqlean", SqleanBackend)
    return "memeval_sqlean"


async def open_memledger(path: Path, dimensions: int, conflict_threshold: float, *,
                         embedder: EmbedderBridge | None, model: str) -> Any:
    """A Memledger on the SQLite file at `path`: `embedder` in process, or (None) LiteLLM's
    `model`. Opened on the caller's loop, which must run every later call."""
    from memledger import Memledger, MemledgerConfig
    from memledger.memledger import _BACKEND_REGISTRY
    from memledger.models import EmbeddingConfig

    name = _sqlean_backend()
    embedding = EmbeddingConfig(provider="openai", model=model, dimensions=dimensions)
    config = MemledgerConfig(embeddings=embedding, default_backend=name,
                             conflict_threshold=conflict_threshold)
    settings = {"path": str(path), "dimensions": dimensions}
    if embedder is None:
        return await Memledger.create(backend_name=name, backend_config=settings,
                                      embedding_config=embedding, memledger_config=config)
    backend = _BACKEND_REGISTRY[name]()
    await backend.initialize(settings)
    return Memledger(backend=backend, embedder=embedder, config=config)


def vec_enabled(ledger: Any) -> bool:
    return bool(getattr(ledger._backend, "_vec_enabled", False))


async def wipe(ledger: Any) -> None:
    """Delete every memory for good (memledger's own delete only archives)."""
    connection = ledger._backend._conn
    await connection.execute("DELETE FROM memories")
    if vec_enabled(ledger):
        await connection.execute("DELETE FROM memory_embeddings")
    await connection.commit()
    ledger.audit.clear()
