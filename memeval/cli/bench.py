"""`python -m memeval bench --entries 250,1000`: what three passes cost against one embedding
pass, per stage, at several sizes.

Each size runs in a fresh process (so its peak RSS is its own) over N distinct labelled entries:
the bundled set cycled, each copy tagged so every text embeds anew. That process measures, in
this order: model load; one batch embedded untimed (a first batch pays one-off start-up); one
cold embedding pass of the N texts (no cache); the three-pass run with a cold cache; the N texts
again through the run's now-warm embedding cache; then the three passes once more on the warm
cache under tracemalloc, for the Python heap peak (tracing made the three passes about three
times slower with the hashing embedder, so the timed run is never traced). Ratios come from one
process, minutes apart. The 1-minute load average at the start and the end is recorded: other
jobs on a shared machine can still slow one side more than the other.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from memeval.backends.embedders.base import EMBEDDERS
from memeval.backends.embedders.cache import CACHE_FILE as EMBEDDING_CACHE
from memeval.backends.embedders.cache import CachedEmbedder
from memeval.cli.bench_scale import (
    in_fresh_process,
    labelled_three_pass,
    markdown_table,
    peak_rss_mb,
    run_one,
    scale,
    time_split,
)
from memeval.config import validate
from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.engine.gate.content_score import scored_view
from memeval.engine.gate.gate import GateConfig
from memeval.engine.gate.narration import Narration
from memeval.registry import to_dataclass
from memeval.results.run_dir import read_decisions
from memeval.runner import run_experiment
from memeval.utils.redact import redact

EMBEDDERS_BENCHED = ("hashing", "minilm")
WARM_UP_BATCH = 32  # sentence-transformers' default batch size
T = TypeVar("T")


def parse_sizes(text: str) -> list[int]:
    """`1000` or `250,1000`: the entry counts to measure, each at least 1."""
    sizes = [int(part) for part in text.split(",")]
    if any(size < 1 for size in sizes):
        raise ValueError(f"entry counts must be at least 1, got {text}")
    return sizes


def _timed(work: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    value = work()
    return value, time.perf_counter() - start


def _rate(count: int, seconds: float) -> dict[str, float]:
    return {"texts": count, "seconds": round(seconds, 3), "texts_per_s": round(count / seconds, 1)}


def _cold_embedding(cfg: DictConfig, texts: list[str]) -> tuple[float, float]:
    """(model load s, one uncached pass over `texts` s). One batch is embedded untimed first:
    a first real batch pays one-off start-up costs (about 1.5 s measured with MiniLM) that the
    run, later in the same process, never pays. The model is freed afterwards: the run loads
    its own, and two resident copies would inflate the peak RSS a real run never has."""
    def load() -> Any:
        model = EMBEDDERS.build(cfg.embedder)
        model.embed(["warm-up"])  # sentence-transformers loads on its first call
        return model

    model, load_s = _timed(load)
    model.embed(texts[:WARM_UP_BATCH])
    _, cold_s = _timed(partial(model.embed, texts))
    del model
    gc.collect()
    return load_s, cold_s


def _cached_embedding(cfg: DictConfig, texts: list[str], cache: Path) -> dict[str, float]:
    """`texts` through a warm cache: every lookup a hit, so the model is never even loaded."""
    embedder = CachedEmbedder(EMBEDDERS.build(cfg.embedder), cache)
    try:
        _, seconds = _timed(partial(embedder.embed, texts))
    finally:
        embedder.store.close()
    return {**_rate(len(texts), seconds), "hits": embedder.hits, "misses": embedder.misses}


def _heap_peak_mb(cfg: DictConfig, run_dir: Path) -> float:
    tracemalloc.start()
    try:
        run_experiment(cfg, run_dir)
        return round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    finally:
        tracemalloc.stop()


def stage_throughput(decisions: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """Per stage, in gate order: entries that reached it / seconds spent in it (an entry a
    stage never saw has no latency there)."""
    stages: dict[str, dict[str, float | None]] = {}
    for column in decisions.columns:
        if column.startswith("latency_") and column.endswith("_ms"):
            spent = decisions[column].dropna()
            seconds = float(spent.sum()) / 1000
            stages[column[len("latency_"):-len("_ms")]] = {
                "entries": int(spent.size), "seconds": round(seconds, 3),
                "entries_per_s": round(spent.size / seconds, 1) if seconds > 0 else None}
    return stages


def gate_texts(cfg: DictConfig, texts: list[str]) -> list[str]:
    """What the gate embeds of each text (its content stage's view), so the embedding passes
    time the same texts as the run."""
    params = OmegaConf.to_container(cfg.gate, resolve=True)
    assert isinstance(params, dict)
    gate = to_dataclass(GateConfig, params, "gate")
    content = gate.stage_config("content_score")
    if content is None:
        return texts
    narration = Narration(gate.narration)
    return [scored_view(content, narration, text) for text in texts]


def measure(entries: int, embedder: str) -> dict[str, Any]:
    """One size, in this process (run it in a fresh one: the peak RSS is the process's)."""
    with tempfile.TemporaryDirectory(prefix="memeval-bench-") as tmp:
        work = Path(tmp)
        cfg = labelled_three_pass(work, entries, embedder, "reporting.phoenix.enabled=false")
        validate(cfg)
        texts = gate_texts(cfg, [redact(e.assistant_response)
                                 for e in load_labeled_jsonl(cfg.dataset.path).entries])
        load_average = [os.getloadavg()[0]]  # other jobs on a shared machine skew both sides
        load_s, cold_s = _cold_embedding(cfg, texts)
        metrics, three_pass_s = _timed(partial(run_experiment, cfg, work / "run"))
        load_average.append(os.getloadavg()[0])
        cached = _cached_embedding(cfg, texts, work / "cache" / EMBEDDING_CACHE)
        decisions = read_decisions(work / "run")
        heap_mb = _heap_peak_mb(cfg, work / "traced")
    split = time_split(metrics, decisions)
    return {
        "entries": entries, "embedder": metrics["embedder"]["identity"],
        "model_load_s": round(load_s, 3),
        "embedding_cold": _rate(len(texts), cold_s), "embedding_cached": cached,
        "stages": stage_throughput(decisions),
        "three_pass_s": round(three_pass_s, 3),
        **{key: round(value, 3) for key, value in split.items()},
        "ratios": {"three_passes_over_one_embedding_pass": round(three_pass_s / cold_s, 3),
                   "gate_own_over_one_embedding_pass": round(split["gate_own_s"] / cold_s, 3)},
        "embedding_cache": {"hits": metrics["embedder"]["cache_hits"],
                            "misses": metrics["embedder"]["cache_misses"]},
        "peak_rss_mb": peak_rss_mb(), "python_heap_peak_mb": heap_mb,
        "load_average_1m": {"start": load_average[0], "end": load_average[1]},
        "passes": [{k: p[k] for k in ("pass", "substantive_recall", "prejudge_filter_rate",
                                      "judge_calls")} for p in metrics["passes"]],
    }


def table(rows: list[dict[str, Any]]) -> str:
    """One Markdown row per size."""
    stages = list(dict.fromkeys(name for row in rows for name in row["stages"]))
    header = ["entries", "model load", "embedding cold (texts/s)",
              "embedding cached (texts/s)", *(f"{s} (entries/s)" for s in stages),
              "three passes", "÷ one embedding pass", "gate's own work", "÷ one embedding pass",
              "peak RSS", "Python heap peak"]
    cells: list[list[str]] = []
    for row in rows:
        rates = [row["stages"].get(s, {}).get("entries_per_s") for s in stages]
        cells.append([f"{row['entries']:,}", f"{row['model_load_s']:.1f} s",
                      f"{row['embedding_cold']['texts_per_s']:,.0f}",
                      f"{row['embedding_cached']['texts_per_s']:,.0f}",
                      *("—" if r is None else f"{r:,.0f}" for r in rates),
                      f"{row['three_pass_s']:.1f} s",
                      f"{row['ratios']['three_passes_over_one_embedding_pass']:.2f}",
                      f"{row['gate_own_s']:.1f} s",
                      f"{row['ratios']['gate_own_over_one_embedding_pass']:.3f}",
                      f"{row['peak_rss_mb']:,.0f} MB", f"{row['python_heap_peak_mb']:.1f} MB"])
    return markdown_table(header, cells)


def bench(sizes: list[int], embedder: str, out: Path | None) -> dict[str, Any]:
    rows = [in_fresh_process(["--entries-one", str(n), "--embedder", embedder]) for n in sizes]
    result = {"embedder": rows[0]["embedder"], "cpu_count": os.cpu_count(), "sizes": rows}
    if out is not None:
        out.write_text(json.dumps(result, indent=2))
    print(table(rows))
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m memeval bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=parse_sizes, default=[1000], metavar="N[,N…]",
                        help="entry counts, each measured in its own process")
    parser.add_argument("--embedder", choices=EMBEDDERS_BENCHED, default="minilm")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON")
    parser.add_argument("--scale", type=parse_sizes, default=None, metavar="N,N,…",
                        help="instead: the mixed three-pass run at these corpus sizes")
    parser.add_argument("--phoenix", action="store_true",
                        help="instead: push an --entries three-pass run to a fresh local Phoenix")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="with --scale: a config override for every size (repeatable)")
    parser.add_argument("--warm-up", type=int, default=None, metavar="ROWS",
                        help="instead: a cold replay of ROWS corpus rows against a warm-up "
                             "(python -m memeval embed) and the replay after it")
    parser.add_argument("--ray", action="store_true",
                        help="with --warm-up: warm up on a Ray cluster (--address, --workers)")
    parser.add_argument("--address", default=os.environ.get("MEMEVAL_RAY_ADDRESS", "auto"),
                        help="with --ray: the cluster (default: $MEMEVAL_RAY_ADDRESS, else auto)")
    parser.add_argument("--workers", type=int, default=2,
                        help="with --ray: models embedding at once (default 2)")
    for child in ("--entries-one", "--scale-one"):  # one size, in its own process
        parser.add_argument(child, type=int, default=None, help=argparse.SUPPRESS)
    return parser


def _phoenix(sizes: list[int], embedder: str, out: Path | None) -> None:
    from memeval.cli.bench_phoenix import bench_phoenix

    result = bench_phoenix(sizes[0], embedder, out)
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key.ljust(width)}  {value}")


def _warm_up(options: argparse.Namespace) -> None:
    from memeval.backends.embedders.warm_up import Engine
    from memeval.cli.bench_warm_up import bench_warm_up

    engine = Engine("ray", options.address, options.workers) if options.ray else Engine("local")
    result = bench_warm_up(options.warm_up, options.embedder, engine)
    if options.out is not None:
        options.out.write_text(json.dumps(result, indent=2))
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key.ljust(width)}  {value}")


def main(args: list[str]) -> int:
    parser = _parser()
    options = parser.parse_args(args)
    if options.entries_one is not None:  # children print their JSON last
        print(json.dumps(measure(options.entries_one, options.embedder)))
    elif options.scale_one is not None:
        print(json.dumps(run_one(options.scale_one, options.embedder, options.override)))
    elif options.scale is not None:
        scale(options.scale, options.embedder, options.out, options.override)
    elif options.warm_up is not None:
        _warm_up(options)
    elif options.phoenix:
        if len(options.entries) != 1:
            parser.error("--phoenix measures one size: give --entries N")
        _phoenix(options.entries, options.embedder, options.out)
    else:
        bench(options.entries, options.embedder, options.out)
    return 0
