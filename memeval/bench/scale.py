"""`python -m memeval bench --scale 1000,10000,32000`: the mixed three-pass run at corpus scale.

Offline, a replicated copy of the bundled trace sample stands in for the 32k-row HF corpus (each
copy's texts tagged, so every row embeds anew). Each size runs in a fresh process, so its peak
RSS is its own. Reported per size: rows/s over three passes, peak RSS, and where the time went —
embedding (cache lookups included), judge, and the gate's own work (everything else).

The other bench modes share its workload builders, time split and fresh-process runner.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig

from memeval.config import compose
from memeval.paths import data_path
from memeval.results.run_dir import read_decisions
from memeval.runner import run_experiment

SAMPLE = "traces/trace_sample_v1.jsonl"


def replicate(source: Path, rows: int, path: Path, separator: str = " ") -> None:
    """`rows` rows cycling through a JSONL file; every copy after the first gets a tag on its
    (non-empty) response, so each copy embeds anew instead of hitting the cache."""
    base = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            row = dict(base[i % len(base)])
            copy = i // len(base)
            row["id"] = f"{row['id']}-{copy}"
            if copy and row["assistant_response"]:
                row["assistant_response"] += f"{separator}(session {copy})"
            handle.write(json.dumps(row) + "\n")


def labelled_three_pass(work: Path, entries: int, embedder: str, *extra: str) -> DictConfig:
    """The three-pass config over `entries` distinct copies of the bundled labelled set, with
    its data and a cold cache under `work` (the `bench` and `bench --phoenix` workload)."""
    data = work / "bench.jsonl"
    replicate(Path(compose().dataset.path), entries, data, separator="\n\n")
    return compose(["+experiment=three_pass", f"embedder={embedder}", "dataset=labeled_jsonl",
                    f"dataset.path={data}", f"cache_dir={work / 'cache'}", "plots=false",
                    "progress=false", *extra])


def time_split(metrics: dict[str, Any], decisions: pd.DataFrame) -> dict[str, float]:
    """Where a run's experiment time went: embedding (cache lookups included), the judge,
    fitting the quality models (once per settings and data: the fit cache keeps them), scoring
    each pass's stored memories (MQS, the learned detector, the trust score, their CIs), the
    run's bookkeeping (each pass's metrics and its checkpoint), and the gate's own work
    (stages, learning, redaction, building the gate: everything else)."""
    judge_column = "latency_judge_ms"
    judge_s = float(decisions[judge_column].sum()) / 1000 if judge_column in decisions else 0.0
    timing = metrics["timing"]
    embed_s, fit_s = timing["embedding_s"], timing.get("fitting_s", 0.0)
    scoring_s = timing.get("stored_scoring_s", 0.0)
    bookkeeping_s = timing.get("bookkeeping_s", 0.0)
    return {"embedding_s": embed_s, "judge_s": judge_s, "fitting_s": fit_s,
            "stored_scoring_s": scoring_s, "bookkeeping_s": bookkeeping_s,
            "gate_own_s": timing["experiment_s"] - embed_s - judge_s - fit_s - scoring_s
            - bookkeeping_s}


def peak_rss_mb() -> float:
    """This process's peak resident set so far (Linux reports ru_maxrss in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def in_fresh_process(args: list[str], show_progress: bool = False) -> dict[str, Any]:
    """`python -m memeval bench ARGS` in a new process, so its peak RSS is its own; the child
    prints its result as JSON on its last stdout line. `show_progress`: its stderr (progress
    bars, warnings) goes to this one's as it runs, for a child that runs for minutes."""
    done = subprocess.run([sys.executable, "-m", "memeval", "bench", *args], text=True,
                          stdout=subprocess.PIPE,
                          stderr=None if show_progress else subprocess.PIPE, check=False)
    if done.returncode != 0:
        shown = "see above" if show_progress else done.stderr[-2000:]
        raise RuntimeError(f"bench {' '.join(args)} failed:\n{shown}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_one(rows: int, embedder: str, overrides: list[str] | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memeval-scale-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus.jsonl"
        replicate(Path(data_path(SAMPLE)), rows, corpus)
        cfg = compose(["+experiment=three_pass_mixed", f"embedder={embedder}",
                       f"dataset.corpus_path={corpus}", f"dataset.corpus_rows={rows}",
                       f"cache_dir={work / 'cache'}", "plots=false", "bootstrap=200",
                       "reporting.phoenix.enabled=false",
                       *(overrides or [])])
        start = time.perf_counter()
        metrics = run_experiment(cfg, work / "run")
        total = time.perf_counter() - start
        decisions = read_decisions(work / "run")
    entries = metrics["dataset"]["entries"]
    split = time_split(metrics, decisions)
    own = split["gate_own_s"]
    return {"corpus_rows": rows, "overrides": overrides or [], "entries": entries,
            "entry_passes": 3 * entries,
            "seconds": round(total, 2), "rows_per_s": round(3 * entries / total, 1),
            "embedding_s": round(split["embedding_s"], 2), "judge_s": round(split["judge_s"], 2),
            "gate_own_s": round(own, 2), "gate_own_share": round(own / total, 4),
            "fitting_s": round(split["fitting_s"], 2),
            "stored_scoring_s": round(split["stored_scoring_s"], 2),
            "bookkeeping_s": round(split["bookkeeping_s"], 2),
            "harness_s": round(total - metrics["timing"]["experiment_s"], 2),
            "peak_rss_mb": peak_rss_mb(),
            "prejudge_filter_rate": [p["prejudge_filter_rate"] for p in metrics["passes"]],
            "substantive_recall": [p["substantive_recall"] for p in metrics["passes"]]}


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """The benchmark tables as Markdown, the form docs/ quotes them in."""
    lines = [header, *rows]
    return "\n".join(["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(header),
                      *("| " + " | ".join(cells) + " |" for cells in lines[1:])])


def scale_table(results: list[dict[str, Any]]) -> str:
    """One Markdown row per corpus size, in docs/datasets.md's columns (the judge's time, which
    a judge over HTTP adds, is in the JSON that --out writes)."""
    header = ["corpus rows", "entries after empty-row filtering", "three passes", "rows/s",
              "embedding (incl. cache lookups)", "gate's own work", "share",
              "quality models fitted", "stored memories scored", "run bookkeeping",
              "harness (load, write)", "peak RSS"]
    return markdown_table(header, [
        [f"{r['corpus_rows']:,}", f"{r['entries']:,}", f"{r['seconds']:.1f} s",
         f"{r['rows_per_s']:,.0f}", f"{r['embedding_s']:.1f} s",
         f"{r['gate_own_s']:.1f} s", f"{r['gate_own_share']:.1%}", f"{r['fitting_s']:.1f} s",
         f"{r['stored_scoring_s']:.1f} s", f"{r['bookkeeping_s']:.1f} s",
         f"{r['harness_s']:.1f} s",
         f"{r['peak_rss_mb']:,.0f} MB"] for r in results])


def scale(sizes: list[int], embedder: str, out: Path | None,
          overrides: list[str] | None = None) -> list[dict[str, Any]]:
    results = []
    extra = [arg for o in overrides or [] for arg in ("--override", o)]
    for rows in sizes:
        results.append(in_fresh_process(["--scale-one", str(rows), "--embedder", embedder,
                                         *extra]))
        print(f"{rows:,} corpus rows: {results[-1]['seconds']:.1f} s", flush=True)
    if out is not None:
        out.write_text(json.dumps(results, indent=2))
    print(scale_table(results))
    return results
