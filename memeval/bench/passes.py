"""The default `bench`: three passes against one embedding pass, per size, each size in a
fresh process (the method is in `memeval.cli.bench`'s docstring)."""

from __future__ import annotations

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
from memeval.bench.scale import (
    in_fresh_process,
    labelled_three_pass,
    markdown_table,
    peak_rss_mb,
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

WARM_UP_BATCH = 32  # sentence-transformers' default batch size
START_UP_ENTRIES = 120  # enough for the content scorer's first fits (min_learned on each side)
T = TypeVar("T")


def _timed(work: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    value = work()
    return value, time.perf_counter() - start


def _rate(count: int, seconds: float) -> dict[str, float]:
    """Seconds to the microsecond: a hashing pass takes milliseconds, and the ratios quoted
    beside it must be recomputable from the figures shown."""
    return {"texts": count, "seconds": round(seconds, 6), "texts_per_s": round(count / seconds, 1)}


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


def _start_up(cfg: DictConfig, work: Path) -> None:
    """A small three-pass run, untimed, as the model's first batch is: what the gate loads on
    first use (scikit-learn's solver, scipy) is the process's start-up, not per-entry work. It
    has a cache of its own and no stored-memory models, so the timed run still embeds and fits
    everything cold."""
    small = OmegaConf.merge(cfg, {"dataset": {"limit": START_UP_ENTRIES},
                                  "cache_dir": str(work / "start-up-cache"),
                                  "experiment": {"stored_models": {"enabled": False}}})
    assert isinstance(small, DictConfig)
    run_experiment(small, work / "start-up")


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
        _start_up(cfg, work)
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
              "quality models fitted", "stored memories scored", "run bookkeeping", "peak RSS",
              "Python heap peak"]
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
                      f"{row['fitting_s']:.1f} s", f"{row['stored_scoring_s']:.1f} s",
                      f"{row['bookkeeping_s']:.1f} s", f"{row['peak_rss_mb']:,.0f} MB",
                      f"{row['python_heap_peak_mb']:.1f} MB"])
    return markdown_table(header, cells)


def bench(sizes: list[int], embedder: str, out: Path | None) -> dict[str, Any]:
    rows = [in_fresh_process(["--entries-one", str(n), "--embedder", embedder]) for n in sizes]
    result = {"embedder": rows[0]["embedder"], "cpu_count": os.cpu_count(), "sizes": rows}
    if out is not None:
        out.write_text(json.dumps(result, indent=2))
    print(table(rows))
    return result
