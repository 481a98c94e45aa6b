"""Embedding a corpus ahead of its replay, in this process or across a Ray cluster.

A replay spends nearly all its time embedding, and embedding is embarrassingly parallel and
content-addressed: warming the cache first lets the (sequential) replay read vectors only. Both
engines take the same chunks — texts sorted shortest first and cut into the cache's own chunk
size, so each batch pads to similar lengths — and yield each chunk's keys with its vectors.

On Ray the chunks become a Ray Data dataset mapped by `map_batches` over an actor pool: each
actor builds the embedder once (one model per worker) and embeds whole chunks, so a batch is the
same on every node as in a local run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memeval.backends.embedders.base import Embedder
from memeval.backends.embedders.cache import Chunk
from memeval.registry import ConfigError

Embedded = tuple[list[str], np.ndarray]  # (cache keys, float32 rows)
BuildEmbedder = Callable[[], Embedder]  # picklable: Ray ships it to every worker
LOOPBACK = ("127.0.0.1", "localhost")
LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": every Ray process binds loopback


@dataclass(frozen=True)
class Engine:
    """Where chunks are embedded. `address`: the Ray cluster (auto, HOST:PORT, ray://…);
    `workers`: models embedding at once (Ray actors; 1 in this process)."""

    name: str
    address: str = "auto"
    workers: int = 1


def embed_here(chunks: Sequence[Chunk], build: BuildEmbedder, engine: Engine) -> Iterator[Embedded]:
    embedder = build()
    for keys, texts in chunks:
        yield keys, np.asarray(embedder.embed(texts), dtype=np.float32)


def chunk_embedder(build: BuildEmbedder) -> type:
    """The `map_batches` class: one embedder per Ray actor, built when the actor starts. Made
    here around `build`, so Ray ships it inside the class rather than as constructor arguments
    (which an actor restart could not get back)."""

    class ChunkEmbedder:
        def __init__(self) -> None:
            self.embedder = build()

        def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
            keys: list[str] = []
            rows: list[np.ndarray] = []
            for chunk_keys, texts in zip(batch["keys"], batch["texts"], strict=True):
                keys += [str(key) for key in chunk_keys]
                rows.append(np.asarray(self.embedder.embed([str(t) for t in texts]),
                                       dtype=np.float32))
            return {"key": np.asarray(keys, dtype=object), "vector": np.concatenate(rows)}

    return ChunkEmbedder


def embed_on_ray(chunks: Sequence[Chunk], build: BuildEmbedder,
                 engine: Engine) -> Iterator[Embedded]:
    """Each chunk is one row of a Ray Data dataset and one call of a worker's model."""
    try:
        import ray
    except ImportError:
        raise ConfigError('embedding on Ray needs Ray: pip install "memeval[ray]"') from None
    connected_here = not ray.is_initialized()
    if connected_here:
        _join(ray, engine.address)
    # memeval's own bar counts the vectors as they arrive; Ray Data's progress lines would
    # interleave with it
    data_context = ray.data.DataContext.get_current()
    data_context.enable_progress_bars = False
    data_context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "bars disabled"
    try:
        dataset = ray.data.from_items([{"keys": keys, "texts": texts} for keys, texts in chunks])
        vectors = dataset.map_batches(chunk_embedder(build), batch_size=1, num_cpus=1,
                                      compute=ray.data.ActorPoolStrategy(size=engine.workers))
        for batch in vectors.iter_batches(batch_size=None, batch_format="numpy"):
            yield [str(key) for key in batch["key"]], np.asarray(batch["vector"], np.float32)
    finally:
        if connected_here:
            ray.shutdown()


def _join(ray: Any, address: str) -> None:
    """Connect to the cluster, or say why not instead of waiting on it."""
    host = address.removeprefix("ray://").rpartition(":")[0]
    if host in LOOPBACK and os.environ.get(LOOPBACK_SWITCH) != "0":
        # Ray would swap 127.0.0.1 for the routable address and wait for a GCS that is not there
        raise ConfigError(f"a Ray cluster on loopback ({address}) needs {LOOPBACK_SWITCH}=0 in "
                          f"the environment, here and where `ray start` ran (docs/scaling.md)")
    try:
        ray.init(address=address, log_to_driver=False)
    except ConnectionError as err:
        raise ConfigError(f"no Ray cluster at {address} ({err}): start one with `ray start "
                          f"--head`, or give its address (--address, $MEMEVAL_RAY_ADDRESS)"
                          ) from None


ENGINES: dict[str, Callable[[Sequence[Chunk], BuildEmbedder, Engine], Iterator[Embedded]]] = {
    "local": embed_here, "ray": embed_on_ray}
