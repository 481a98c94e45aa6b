"""Push a quality experiment's run directory to Phoenix: each labelled set as a dataset, each
detector or scorer on it as an experiment (one run per item, CODE evaluations against the labels,
its headline figures with CIs as metadata), so Phoenix's compare view sets them side by side.

Idempotent like the replay push: a dataset is found by a name holding its fingerprint, an
experiment by run id, set and detector in its metadata, a run by example; evaluations upsert.
Every string is redacted.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memeval.reporting.phoenix import naming
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.experiment_runs import ExperimentRun, record_runs
from memeval.reporting.phoenix.files import PHOENIX_DIR
from memeval.reporting.phoenix.headline import declare_directions, headline_evaluations
from memeval.reporting.phoenix.naming import (
    experiments_of_run,
    fingerprint,
    settings_apart,
    upsert_experiment,
)
from memeval.reporting.phoenix.push import (
    PhoenixUnavailable,
    PushReport,
    record_push,
    redacted,
    run_label,
)
from memeval.reporting.phoenix.quality_items import VIEWS, Detector, ItemSet, item_sets
from memeval.reporting.phoenix.rest import PhoenixREST
from memeval.results.run_dir import read_metrics
from memeval.utils.redact import redact


def holds(run_dir: Path) -> bool:
    """The run kept a quality experiment's per-item tables."""
    return any((run_dir / f"{table}.parquet").is_file() for table in VIEWS)


class QualityPusher:
    def __init__(self, run_dir: Path, settings: PhoenixConfig, progress: bool) -> None:
        base = settings.base_url
        if not base:
            raise ValueError("reporting.phoenix.endpoint is not set: nowhere to push")
        self.run_dir, self.progress = run_dir, progress
        self.metrics = read_metrics(run_dir)
        self.sets = item_sets(run_dir, self.metrics)
        self.rest = PhoenixREST(base, settings.timeout_s, settings.max_body_bytes)
        self.report = PushReport(base, settings.project, str(self.metrics["run_id"]))

    def run(self) -> PushReport:
        if not self.rest.healthy():
            raise PhoenixUnavailable(f"no Phoenix answers at {self.rest.base_url} (start one with "
                                     f"`python -m memeval phoenix serve`)")
        started = time.perf_counter()
        try:
            names = [self._push_set(item_set) for item_set in self.sets]
        finally:
            self.rest.close()
        self.report.dataset = ", ".join(names)
        self.report.seconds["experiments"] = round(time.perf_counter() - started, 3)
        record_push(self.run_dir / PHOENIX_DIR, self.report)
        return self.report

    def _push_set(self, item_set: ItemSet) -> str:
        examples = [{"key": e["key"], **redacted({k: e[k] for k in ("input", "output",
                                                                    "metadata")})}
                    for e in item_set.examples]
        prefix = fingerprint(examples)[:12]
        name = f"memeval {item_set.name} {prefix}"
        dataset_id = self.rest.dataset_id(name)
        if dataset_id is None:
            dataset_id = self.rest.create_dataset(
                name, redacted(f"{item_set.description}, fingerprint {prefix}"),
                [{"id": f"{prefix}:{e['key']}", "input": e["input"], "output": e["output"],
                  "metadata": e["metadata"]} for e in examples])
        nodes = {k.split(":", 1)[1]: v for k, v in self.rest.example_node_ids(dataset_id).items()}
        run_id, experiment = self.report.run_id, self.metrics["experiment"]
        experiments = self.rest.experiments(dataset_id)
        existing = experiments_of_run(experiments, run_id,
                                      lambda m: (m.get("set"), m.get("detector")))
        chosen = [(detector, redacted(self._metadata(item_set, detector)))
                  for detector in item_set.detectors]
        varying = settings_apart(self.rest, experiments, run_id, chosen[0][1])
        declare_directions(self.rest, [s for d in item_set.detectors for s in d.scores])
        for detector, metadata in chosen:
            title = redact(naming.name(metadata, varying, experiment))
            experiment_id = upsert_experiment(
                self.rest, dataset_id, existing.get((item_set.name, detector.name)), title,
                redacted(f"{run_label(self.run_dir)}: memeval {experiment}, "
                         f"{detector.description} (run {run_id})"), metadata)
            self.report.experiments[f"{name}: {title}"] = experiment_id  # a title per set
            self._runs(experiment_id, item_set, detector, nodes)
        return name

    def _metadata(self, item_set: ItemSet, detector: Detector) -> dict[str, Any]:
        return {"memeval_run_id": self.report.run_id, "run": run_label(self.run_dir),
                "experiment": self.metrics["experiment"],
                "set": item_set.name, "detector": detector.name, "lead": detector.name,
                "tokens": {"seed": f"s{self.metrics['seed']}"} if "seed" in self.metrics else {},
                "overrides": naming.run_overrides(self.run_dir),
                "seed": self.metrics.get("seed"), "items": len(detector.outputs),
                **detector.metrics}

    def _runs(self, experiment_id: str, item_set: ItemSet, detector: Detector,
              nodes: Mapping[str, str]) -> None:
        """A run per item with its evaluations; the first also carries the detector's headline
        figures (headline.py), so each evaluation's mean is the figure."""
        headline = headline_evaluations(detector.scores, f"{detector.name} on {item_set.name}")
        anchor = next(iter(detector.outputs), None)
        now = datetime.now(UTC).isoformat()
        runs = [ExperimentRun(nodes[key], redacted(output), now, now, [
            redacted(e) for e in (*detector.evaluations[key], *(headline if key == anchor
                                                                else ()))])
            for key, output in detector.outputs.items()]
        bar = tqdm(total=len(runs), desc=f"phoenix {detector.name}", disable=not self.progress,
                   leave=False)
        created, written = record_runs(
            self.rest, experiment_id, runs,
            [*item_set.evaluation_names, *(e["name"] for e in headline)], bar)
        bar.close()
        self.report.runs_created += created
        self.report.evaluations += written


def push_quality(run_dir: Path, settings: PhoenixConfig, progress: bool = True) -> PushReport:
    return QualityPusher(run_dir, settings, progress).run()
