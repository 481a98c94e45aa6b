"""An experiment's runs and their evaluations in Phoenix, recorded the same way by every push: a
run per dataset example, created once; each evaluation written unless an earlier push wrote it;
CONCURRENCY requests at a time. A push resumed after a failure finishes without duplicates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from memeval.reporting.phoenix.rest import CONCURRENCY, PhoenixREST

RESULT = ("label", "score", "explanation")  # what an evaluation's result holds


@dataclass(frozen=True)
class ExperimentRun:
    """One example's run: its output, when it ran, its trace and its CODE evaluations (each a
    name with a label, score and explanation)."""

    node: str  # the dataset example's node id
    output: Mapping[str, Any]
    start: str
    end: str
    evaluations: Sequence[Mapping[str, Any]]
    trace_id: str | None = None


def record_runs(rest: PhoenixREST, experiment_id: str, runs: Sequence[ExperimentRun],
                names: Sequence[str], bar: tqdm[Any] | None = None) -> tuple[int, int]:
    """Each run and the evaluations among `names` it still lacks: (runs created, evaluations
    written)."""
    done = rest.experiment_runs(experiment_id)
    missing = rest.missing_evaluations(experiment_id, names) if done else {}

    def record(one: ExperimentRun) -> tuple[int, int]:
        run_id = done.get(one.node)
        wanted = set(names) if run_id is None else missing.get(run_id, set())
        if run_id is None:
            run_id = rest.create_run(experiment_id, {
                "dataset_example_id": one.node, "repetition_number": 1,
                "output": dict(one.output), "start_time": one.start, "end_time": one.end,
                **({} if one.trace_id is None else {"trace_id": one.trace_id})})
        evaluations = [e for e in one.evaluations if e["name"] in wanted]
        for evaluation in evaluations:
            rest.evaluate({"experiment_run_id": run_id, "annotator_kind": "CODE",
                           "name": evaluation["name"], "start_time": one.start,
                           "end_time": one.end, "result": {k: evaluation[k] for k in RESULT}})
        return int(one.node not in done), len(evaluations)

    created = written = 0
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        for new, count in pool.map(record, runs):
            created, written = created + new, written + count
            if bar is not None:
                bar.update()
    return created, written
