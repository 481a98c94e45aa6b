"""`python -m memeval bench --warm-up ROWS [--ray]`: what warming the cache ahead of a replay buys.

The workload is the `--scale` one: the mixed three-pass replay with ROWS corpus rows. Each step is
the command a user runs, in a fresh process, timed from start to exit, in this order: a replay on
a cold cache; the warm-up (`python -m memeval embed`, in that process or on a Ray cluster) into a
second, empty cache; the same replay on that cache. For each replay: its time, the share of it
spent embedding (cache lookups included) and its cache misses; and whether the two replays
decided alike, entry by entry and pass by pass: outcome, stage, judge call, content score and
cut, bit for bit (a vector depends on its text alone, so warm and cold runs must agree exactly).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from memeval.backends.embedders.warm_up import Engine
from memeval.bench.scale import SAMPLE, replicate
from memeval.paths import data_path
from memeval.results.run_dir import read_decisions


def _memeval(*args: str) -> float:
    """Seconds `python -m memeval ARGS` took, start to exit; its output only if it failed."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memeval", *args], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"memeval {' '.join(args[:2])} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def _replay(work: Path, overrides: list[str], cache: str, name: str
            ) -> tuple[dict[str, Any], pd.DataFrame, float]:
    seconds = _memeval("run", *overrides, f"cache_dir={work / cache}",
                       f"hydra.run.dir={work / name}")
    metrics = json.loads((work / name / "metrics.json").read_text())
    return metrics, read_decisions(work / name), seconds


def _decided(decisions: pd.DataFrame) -> pd.DataFrame:
    """Everything but the clocks, which differ on every run."""
    clocks = ["started_at", *decisions.filter(like="latency_").columns]
    return decisions.drop(columns=clocks).reset_index(drop=True)


def bench_warm_up(rows: int, embedder: str, engine: Engine) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memeval-warm-up-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus.jsonl"
        replicate(Path(data_path(SAMPLE)), rows, corpus)
        overrides = ["+experiment=three_pass_mixed", f"embedder={embedder}",
                     f"dataset.corpus_path={corpus}", f"dataset.corpus_rows={rows}",
                     "plots=false", "progress=false", "bootstrap=200",
                     "reporting.phoenix.enabled=false"]
        cold, cold_decisions, cold_s = _replay(work, overrides, "cold", "cold-run")
        on_ray = ["--ray", "--address", engine.address, "--workers", str(engine.workers)]
        warm_up_s = _memeval("embed", *(on_ray if engine.name == "ray" else []), *overrides,
                             f"cache_dir={work / 'warm'}")
        warm, warm_decisions, warm_s = _replay(work, overrides, "warm", "warm-run")
    same = _decided(cold_decisions).equals(_decided(warm_decisions))
    drift = (cold_decisions["score"] - warm_decisions["score"]).abs().max()
    return {
        "corpus_rows": rows, "entries": cold["dataset"]["entries"],
        "engine": engine.name if engine.name == "local" else
        f"ray ({engine.workers} workers at {engine.address})",
        "cold_replay_s": round(cold_s, 3),
        "cold_embedding_share": round(cold["timing"]["embedding_s"] / cold_s, 3),
        "cold_cache_misses": cold["embedder"]["cache_misses"],
        "warm_up_s": round(warm_up_s, 3),
        "replay_after_warm_up_s": round(warm_s, 3),
        "embedding_share_after_warm_up": round(warm["timing"]["embedding_s"] / warm_s, 4),
        "cache_misses_after_warm_up": warm["embedder"]["cache_misses"],
        "replay_speed-up": round(cold_s / warm_s, 2),
        "warm_up_plus_replay_vs_cold": round((warm_up_s + warm_s) / cold_s, 2),
        "same_decisions": bool(same),
        "max_score_difference": float(0.0 if pd.isna(drift) else round(float(drift), 6)),
    }
