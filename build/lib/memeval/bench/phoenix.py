"""`python -m memeval bench --phoenix`: what reporting a three-pass run to Phoenix costs.

Runs three passes over N distinct labelled entries (Phoenix files only), then, against a fresh
Phoenix started on free loopback ports: writing the files again, a first push, and a re-push
(which must add nothing). Phoenix stores spans asynchronously, so the push's `ingest` phase is
Phoenix's own storage lag, not memeval's sending.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from memeval.bench.scale import labelled_three_pass
from memeval.config import validate
from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.reporting.phoenix.files import write_phoenix_files
from memeval.reporting.phoenix.push import push_run
from memeval.reporting.phoenix.server import PhoenixServer, PhoenixSettings, free_port
from memeval.runner import run_experiment
from memeval.utils.redact import redact


def bench_phoenix(entries: int, embedder: str, out: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memeval-bench-phoenix-") as tmp:
        work = Path(tmp)
        cfg = labelled_three_pass(work, entries, embedder, "reporting.phoenix.endpoint=null")
        settings = validate(cfg).phoenix
        metrics = run_experiment(cfg, work / "run")
        start = time.perf_counter()
        write_phoenix_files(work / "run", load_labeled_jsonl(cfg.dataset.path).entries, metrics,
                            cfg, settings, redact)
        write_s = time.perf_counter() - start
        server = PhoenixSettings(port=free_port(), grpc_port=free_port(),
                                 working_dir=work / "phoenix")
        with PhoenixServer(server):
            settings.endpoint = server.url
            first = push_run(work / "run", settings, progress=False)
            start = time.perf_counter()
            again = push_run(work / "run", settings, progress=False)
            repush_s = time.perf_counter() - start
    result = {
        "entries": entries, "passes": len(metrics["passes"]), "spans": first.spans,
        "annotations": first.annotations, "experiment_runs": first.runs_created,
        "evaluations": first.evaluations, "write_files_s": round(write_s, 3),
        "push_seconds": first.seconds, "push_total_s": round(sum(first.seconds.values()), 3),
        "spans_sent_per_s": round(first.spans_per_s, 1),
        "spans_stored_per_s": round(first.spans / (first.seconds["spans"]
                                                   + first.seconds["experiments"]
                                                   + first.seconds["ingest"]), 1),
        "repush_s": round(repush_s, 3), "repush_new_runs": again.runs_created,
    }
    if out is not None:
        out.write_text(json.dumps(result, indent=2))
    return result
