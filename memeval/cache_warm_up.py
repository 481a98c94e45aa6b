"""What `python -m memeval embed` does: every text a run's replay would embed that the cache
lacks, embedded here or on a Ray cluster, written as content-addressed Parquet shards and
imported into this machine's cache."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from memeval.backends.embedders.base import EMBEDDERS, Embedder, unit_rows
from memeval.backends.embedders.cache import (
    CACHE_FILE,
    CACHE_TABLE,
    CHUNK,
    chunked,
    usable_vectors,
)
from memeval.backends.embedders.warm_up import ENGINES, Embedded, Engine
from memeval.components import load_components
from memeval.config import validate
from memeval.data.base import CORPUS
from memeval.engine.gate.gate import embedded_texts, prepared_texts
from memeval.experiments.base import RunContext
from memeval.experiments.settings import ReplaysPart
from memeval.utils.cache_shards import SHARD_ROWS, ImportReport, import_shards, write_shards
from memeval.utils.kvcache import SqliteKV, content_key
from memeval.utils.redact import redact

CACHE = "embeddings"  # the shard folder's cache name (python -m memeval cache)


@dataclass(frozen=True)
class WarmUp:
    texts: int  # distinct texts the run embeds
    cached: int  # of them, already in the cache
    embedded: int  # embedded now
    refused: int  # embedded but not unit vectors (nothing to embed): not stored, as in a run
    shards: list[Path]
    imported: ImportReport
    seconds: float


def build_embedder(node: dict[str, Any]) -> Embedder:
    """The run's embedder from its settings; run on each Ray worker, so it loads the components
    (and plugins) there too."""
    load_components()
    return EMBEDDERS.build(node)


def run_texts(ctx: RunContext, every: bool = True) -> list[str]:
    """What the run embeds: a memory corpus's memories and queries (retrieval replay), or what
    the write gate embeds of each entry it replays: all it may (`every`), or only what every run
    does (a corpus's memories: which queries are asked depends on the experiment)."""
    if ctx.input_kind == CORPUS:
        corpus = ctx.corpus
        queries = [q.text for q in corpus.queries] if every else []
        return list(dict.fromkeys([m.text for m in corpus.memories] + queries))
    texts = embedded_texts if every else prepared_texts
    entries, experiment = ctx.dataset.entries, ctx.validated.experiment
    if experiment is not None and isinstance(experiment.params, ReplaysPart):
        entries = experiment.params.replayed(entries)
    return texts(ctx.gate_config(), redact, entries)


def warm_up(cfg: DictConfig, engine: Engine, shards: Path, progress: bool = True) -> WarmUp:
    """Embed what a run of `cfg` would and the cache lacks; shard it; import the shards."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memeval-embed-") as scratch:
        ctx = RunContext(cfg, Path(scratch), validate(cfg))
        texts = run_texts(ctx)
        cache_dir = ctx.cache_dir
    # a plain dict crosses to Ray workers, which load the components before they build it
    settings = OmegaConf.to_container(cfg.embedder, resolve=True)
    assert isinstance(settings, dict)
    node = {str(key): value for key, value in settings.items()}
    identity = EMBEDDERS.make(ctx.validated.embedder).identity  # models load lazily
    store = SqliteKV(cache_dir / CACHE_FILE, CACHE_TABLE)
    try:
        keyed = {content_key(identity, text): text for text in texts}
        cached = set(store.get_many(sorted(keyed)))
        missing = {key: text for key, text in keyed.items() if key not in cached}
        chunks = chunked(missing, CHUNK)
        build = partial(build_embedder, node)
        written: list[Path] = []
        refused = 0
        with tqdm(total=len(missing), desc=f"embedding ({engine.name})", unit="text",
                  leave=False, disable=not progress) as bar:
            for rows in _in_shards(ENGINES[engine.name](chunks, build, engine), bar):
                kept = [(key, value) for key, value, unit in rows if unit]
                refused += len(rows) - len(kept)
                written += write_shards(shards, CACHE, kept, identity=identity)
        imported = (import_shards(shards, CACHE, store, valid=usable_vectors) if written
                    else ImportReport(0, 0, 0, 0, ()))
    finally:
        store.close()
    return WarmUp(len(keyed), len(cached), len(missing), refused, written, imported,
                  time.perf_counter() - started)


def _in_shards(batches: Iterator[Embedded], bar: tqdm[Any]
               ) -> Iterator[list[tuple[str, bytes, bool]]]:
    """(key, vector bytes, is a unit vector) rows, SHARD_ROWS at a time, as chunks arrive."""
    rows: list[tuple[str, bytes, bool]] = []
    for keys, vectors in batches:
        rows += [(key, vector.tobytes(), bool(unit))
                 for key, vector, unit in zip(keys, vectors, unit_rows(vectors), strict=True)]
        bar.update(len(keys))
        if len(rows) >= SHARD_ROWS:
            yield rows[:SHARD_ROWS]
            rows = rows[SHARD_ROWS:]
    if rows:
        yield rows


def summary(result: WarmUp, engine: Engine, shards: Path) -> str:
    where = "in this process" if engine.name == "local" else \
        f"on Ray at {engine.address}, {engine.workers} worker(s)"
    imported = result.imported
    lines = [f"{result.texts:,} texts to embed: {result.cached:,} already cached, "
             f"{result.embedded:,} embedded {where} in {result.seconds:.1f} s",
             f"{len(result.shards)} shard(s) in {shards / CACHE}; imported {imported.imported:,} "
             f"vectors into the cache ({imported.present:,} already there)"]
    if result.refused:
        lines.append(f"{result.refused:,} texts had nothing to embed (zero vectors): a run "
                     "embeds them again, as it always does")
    lines += [f"  skipped damaged shard {line}" for line in imported.damaged]
    return "\n".join(lines)
