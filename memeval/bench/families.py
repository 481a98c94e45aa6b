"""`python -m memeval bench --scale 1000,10000,100000 --family NAME`: does an experiment's cost
grow linearly with its input?

Each family (`FAMILIES`) is one experiment over a workload replicated from bundled data
(bench/workloads.py) to each size, every size in a fresh process, so its peak RSS is its own.
Every family embeds with the offline hashing embedder, so embedding cost does not hide the
algorithm's. Reported per size: wall time and CPU time of the experiment run, peak RSS; per
family, the exponent b of time ≈ a·size^b (least squares on log-log): 1 is linear.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memeval.bench import workloads
from memeval.bench.scale import in_fresh_process, markdown_table, peak_rss_mb
from memeval.config import compose
from memeval.runner import run_experiment
from memeval.utils.atomic import write_text_atomic

EMBEDDER = "hashing"


@dataclass(frozen=True)
class Family:
    items: str  # what a size counts
    workload: Callable[[Path, int], list[str]]  # writes its data, returns config overrides


FAMILIES = {
    "three_pass": Family("entries", workloads.gate_entries),
    "retrieval_replay": Family("memories", workloads.retrieval_conversations),
    "memory_qa": Family("memories", workloads.qa_conversations),
    "conflict_detection": Family("pairs", workloads.tagged_pairs),
    "mqs_calibration": Family("records", workloads.tagged_records),
}


def run_family(name: str, size: int) -> dict[str, Any]:
    """One family at one size, in this process: the experiment's wall and CPU time (every
    thread's), and this process's peak RSS."""
    with tempfile.TemporaryDirectory(prefix="memeval-scale-") as tmp:
        work = Path(tmp)
        cfg = compose([*FAMILIES[name].workload(work, size), f"embedder={EMBEDDER}",
                       f"cache_dir={work / 'cache'}", "plots=false", "bootstrap=200",
                       "reporting.phoenix.enabled=false"])
        cpu, start = time.process_time(), time.perf_counter()
        run_experiment(cfg, work / "run")
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"family": name, "size": size, "items": FAMILIES[name].items,
            "seconds": round(seconds, 2), "cpu_s": round(cpu, 2), "peak_rss_mb": peak_rss_mb()}


def exponent(sizes: list[int], values: list[float]) -> float | None:
    """b in value ≈ a·size^b, least squares on log-log; None with fewer than two sizes."""
    if len(set(sizes)) < 2:
        return None
    slope, _ = np.polyfit(np.log(sizes), np.log(np.maximum(values, 1e-9)), 1)
    return float(slope)


def family_table(results: list[dict[str, Any]]) -> str:
    """One Markdown row per family and size, then each family's exponents: fitted over every
    size, and over the largest two when there are more."""
    rows = []
    for name in dict.fromkeys(r["family"] for r in results):
        mine = [r for r in results if r["family"] == name]
        for r in mine:
            rows.append([name, f"{r['size']:,} {r['items']}", f"{r['seconds']:.1f} s",
                         f"{r['cpu_s']:.1f} s", f"{1e6 * r['seconds'] / r['size']:,.0f} µs",
                         f"{r['peak_rss_mb']:,.0f} MB"])
        fits = {"exponent (log-log fit)": mine}
        if len(mine) > 2:  # fixed costs flatten the fit; the largest step shows the trend
            fits["exponent (largest two sizes)"] = mine[-2:]
        for label, fitted in fits.items():
            b = [exponent([r["size"] for r in fitted], [r[key] for r in fitted])
                 for key in ("seconds", "cpu_s", "peak_rss_mb")]
            if None not in b:
                rows.append([name, label, f"{b[0]:.2f}", f"{b[1]:.2f}", "", f"{b[2]:.2f}"])
    return markdown_table(["family", "size", "wall", "CPU", "wall per item", "peak RSS"], rows)


def scale_families(names: list[str], sizes: list[int],
                   out: Path | None) -> list[dict[str, Any]]:
    """Each family at each size, each in a fresh process whose progress shows; the results
    as JSON to `out` too, after every size (a long run stopped keeps what it measured)."""
    print(f"embedder: {EMBEDDER} (offline: embedding cost does not hide the algorithm's)",
          flush=True)
    results = []
    for name in names:
        for size in sizes:
            print(f"{name} at {size:,} {FAMILIES[name].items}…", flush=True)
            results.append(in_fresh_process(["--family", name, "--scale-one", str(size)],
                                            show_progress=True))
            print(f"{name} at {size:,}: {results[-1]['seconds']:.1f} s", flush=True)
            if out is not None:
                write_text_atomic(out, json.dumps(results, indent=2))
    print(family_table(results))
    return results


def check_families(names: list[str]) -> list[str]:
    """`names`, with `all` standing for every family; an unknown name is a ValueError."""
    chosen = list(FAMILIES) if "all" in names else names
    unknown = [n for n in chosen if n not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families {unknown}: choose from {', '.join(FAMILIES)} or all")
    return chosen


