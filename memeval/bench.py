"""`python -m memeval bench`: what three passes cost against one embedding pass, per stage.

Builds N distinct labelled entries from the bundled set (each copy tagged so every text embeds
anew), then measures in ONE process, in this order: model load; one cold embedding pass of the N
texts (no cache); a full three-pass run with a cold cache. Ratios come from the same run, so a
shared, noisy machine moves both sides together.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from memeval.bench_scale import replicate, run_one, scale
from memeval.config import compose, validate
from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.engine.embedders.base import EMBEDDERS
from memeval.engine.redact import redact
from memeval.results.run_dir import read_decisions
from memeval.runner import run_experiment

EMBEDDERS_BENCHED = ("hashing", "minilm")


def bench(entries: int, embedder: str, out: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memeval-bench-") as tmp:
        work = Path(tmp)
        data = work / "bench.jsonl"
        replicate(Path(compose().dataset.path), entries, data, separator="\n\n")
        overrides = ["+experiment=three_pass", f"embedder={embedder}",
                     "dataset=labeled_jsonl", f"dataset.path={data}",
                     f"cache_dir={work / 'cache'}", "plots=false", "progress=false",
                     "reporting.phoenix.enabled=false"]
        cfg = compose(overrides)
        validate(cfg)
        texts = [redact(e.assistant_response) for e in load_labeled_jsonl(data).entries]

        start = time.perf_counter()
        model = EMBEDDERS.build(cfg.embedder)
        model.embed(["warm-up"])
        load_s = time.perf_counter() - start

        start = time.perf_counter()
        model.embed(texts)
        embed_s = time.perf_counter() - start

        tracemalloc.start()
        start = time.perf_counter()
        metrics = run_experiment(cfg, work / "run")
        three_pass_s = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        decisions = read_decisions(work / "run")

    stage_cols = [c for c in decisions.columns if c.startswith("latency_")]
    stage_seconds = {c[len("latency_"):-len("_ms")]: float(decisions[c].sum()) / 1000
                     for c in stage_cols}
    result = {
        "entries": entries, "embedder": metrics["embedder"]["identity"],
        "model_load_s": round(load_s, 3),
        "one_embedding_pass_s": round(embed_s, 3),
        "three_pass_run_s": round(three_pass_s, 3),
        "three_pass_over_one_embedding_pass": round(three_pass_s / embed_s, 3),
        "embedding_cache": {"hits": metrics["embedder"]["cache_hits"],
                            "misses": metrics["embedder"]["cache_misses"]},
        "stage_seconds_total": {k: round(v, 3) for k, v in stage_seconds.items()},
        "python_heap_peak_mb": round(peak / 2**20, 1),
        "passes": [{k: p[k] for k in ("pass", "substantive_recall", "prejudge_filter_rate",
                                      "judge_calls")} for p in metrics["passes"]],
    }
    if out is not None:
        out.write_text(json.dumps(result, indent=2))
    return result


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval bench", description=__doc__)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--embedder", choices=EMBEDDERS_BENCHED, default="minilm")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON")
    parser.add_argument("--scale", default=None, metavar="N,N,…",
                        help="instead: the mixed three-pass run at these corpus sizes")
    parser.add_argument("--scale-one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--phoenix", action="store_true",
                        help="instead: push an --entries three-pass run to a fresh local Phoenix")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="with --scale: a config override for every size (repeatable)")
    options = parser.parse_args(args)
    if options.scale_one is not None:  # one size, in its own process: print JSON last
        print(json.dumps(run_one(options.scale_one, options.embedder,
                                 options.override)))
        return 0
    if options.scale is not None:
        sizes = [int(size) for size in options.scale.split(",")]
        scale(sizes, options.embedder, options.out, options.override)
        return 0
    if options.phoenix:
        from memeval.bench_phoenix import bench_phoenix

        result = bench_phoenix(options.entries, options.embedder, options.out)
    else:
        result = bench(options.entries, options.embedder, options.out)
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key.ljust(width)}  {value}")
    return 0
