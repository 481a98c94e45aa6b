"""A retrieval replay's measured searches in Phoenix: the evaluation queries as a dataset, each
arm's last pass as an experiment (a run per query, linked to its search's trace, with nDCG@k
and recall@k as CODE evaluations and the arm's nDCG@k as its headline figure), so the compare
view sets the ranking policies side by side; and each served document's labelled relevance as
the document evaluation Phoenix computes its own retrieval metrics from.

Read from the run directory alone (`retrieval_queries`, metrics.json), like the other pushes,
and idempotent like them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memeval.paths import shown_path
from memeval.reporting.outputs import RATE, Score
from memeval.reporting.phoenix import naming
from memeval.reporting.phoenix.experiment_runs import ExperimentRun, record_runs
from memeval.reporting.phoenix.files import SEARCHES
from memeval.reporting.phoenix.headline import declare_directions, headline_evaluations
from memeval.reporting.phoenix.rest import PhoenixREST
from memeval.reporting.phoenix.spans import search_ids
from memeval.results.result import as_ci
from memeval.results.run_dir import read_table

RELEVANCE = "relevance"  # the document evaluation's name, Phoenix's own for retrieval


def holds_searches(run_dir: Path) -> bool:
    """The run measured searches (a retrieval replay)."""
    return (run_dir / f"{SEARCHES}.parquet").is_file()


def document_annotations(span: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each served document's labelled relevance grade (0: not relevant), from its metadata."""
    attributes, found = span["attributes"], []
    for key, value in attributes.items():
        if key.startswith("retrieval.documents.") and key.endswith(".document.metadata"):
            grade = int(json.loads(value).get(RELEVANCE, 0))
            found.append({"span_id": span["span_id"], "name": RELEVANCE,
                          "annotator_kind": "CODE", "document_position": int(key.split(".")[2]),
                          "result": {"label": "relevant" if grade else "not relevant",
                                     "score": float(grade),
                                     "explanation": f"graded {grade} in the labelled queries"}})
    return found


def _evaluation(name: str, value: float) -> dict[str, Any]:
    return {"name": name, "label": f"{value:.3f}", "score": float(value),
            "explanation": f"{name} of this query's served memories"}


def push_searches(rest: PhoenixREST, run_dir: Path, metrics: Mapping[str, Any],
                  metadata: Mapping[str, Any], run: str
                  ) -> tuple[str, dict[str, str], tuple[int, int]]:
    """The queries' dataset and an experiment per arm: (the dataset's name, {experiment name:
    id}, (runs, evaluations) written). `metadata`: what every experiment's carries (run id,
    tokens, overrides)."""
    table = read_table(run_dir, SEARCHES)
    last = int(table["pass"].max())
    rows = table[table["pass"] == last].sort_values("query_id").to_dict("records")
    settings = (metrics.get("retrieval") or {}).get("settings") or {}
    k = int(settings.get("k", 5))
    examples = {str(r["query_id"]): {"input": {"query": r["query"], "kind": r.get("kind")},
                                     "output": {}, "metadata": {"query_id": r["query_id"]}}
                for r in rows}
    dataset, dataset_id, nodes = _dataset(rest, examples, metrics)
    experiments = rest.experiments(dataset_id)
    run_id = str(metrics["run_id"])
    existing = naming.experiments_of_run(experiments, run_id, lambda m: m.get("arm"))
    figures = next(p for p in metrics["passes"] if int(p["pass"]) == last)
    scored = arm_scores(metrics)
    chosen = {arm: {**metadata, "arm": arm, "pass": last, "lead": arm,
                    **{f"{m}{s}": figures[arm].get(f"{m}{s}") for m in ("ndcg", "recall")
                       for s in ("", "_ci95")}}
              for arm in figures["arms"]}
    varying = naming.settings_apart(rest, experiments, run_id, next(iter(chosen.values())))
    declare_directions(rest, [s for found in scored.values() for s in found])
    made, written = {}, (0, 0)
    for arm, meta in chosen.items():
        title = naming.name(meta, varying, str(metrics["experiment"]))
        experiment_id = naming.upsert_experiment(
            rest, dataset_id, existing.get(arm), title,
            f"{run}: memeval {metrics['experiment']}, {arm} arm, pass {last} (run {run_id})",
            meta)
        made[title] = experiment_id
        mine = [r for r in rows if r["arm"] == arm]
        top = headline_evaluations(scored[arm], f"{arm} arm, pass {last}")
        runs = []
        for i, r in enumerate(mine):  # the first run carries the arm's headline figure
            at = datetime.fromtimestamp(float(r["searched_at"]), UTC).isoformat()
            runs.append(ExperimentRun(
                nodes[str(r["query_id"])], {"served": list(map(str, r["served_memories"])),
                                            "ndcg": r["ndcg"], "recall": r["recall"]}, at, at,
                [_evaluation(f"nDCG@{k}", r["ndcg"]), _evaluation(f"recall@{k}", r["recall"]),
                 *(top if i == 0 else ())],
                search_ids(run_id, arm, last, str(r["query_id"]))[0]))
        names = [f"nDCG@{k}", f"recall@{k}", *(e["name"] for e in top)]
        created, evaluations = record_runs(rest, experiment_id, runs, names)
        written = (written[0] + created, written[1] + evaluations)
    return dataset, made, written


def arm_scores(metrics: Mapping[str, Any]) -> dict[str, list[Score]]:
    """Each arm's headline figures on the last pass, as retrieval_replay declares its own."""
    figures = metrics["passes"][-1]
    k = int(((metrics.get("retrieval") or {}).get("settings") or {}).get("k", 5))
    queries = ((metrics.get("retrieval") or {}).get("queries") or {}).get("evaluation")
    last = figures["pass"]
    return {arm: [Score("retrieval", f"nDCG@{k}", figures[arm]["ndcg"],
                        as_ci(figures[arm].get("ndcg_ci95")),
                        population=f"{queries} evaluation queries, {arm}, pass {last}"),
                  Score("retrieval", f"recall@{k}", figures[arm]["recall"],
                        as_ci(figures[arm].get("recall_ci95")), unit=RATE,
                        population=f"{queries} evaluation queries, {arm}, pass {last}")]
            for arm in figures["arms"]}


def _dataset(rest: PhoenixREST, examples: Mapping[str, Mapping[str, Any]],
             metrics: Mapping[str, Any]) -> tuple[str, str, dict[str, str]]:
    prefix = naming.fingerprint([{"key": key, **value} for key, value in examples.items()])[:12]
    name = f"memeval retrieval {prefix}"
    dataset_id = rest.dataset_id(name)
    if dataset_id is None:
        workload = (metrics.get("retrieval") or {}).get("workload") or {}
        dataset_id = rest.create_dataset(
            name, f"memeval retrieval replay: the {len(examples)} evaluation queries of "
                  f"{shown_path(str(workload.get('queries_file') or ''))}, fingerprint {prefix}",
            [{"id": f"{prefix}:{key}", **value} for key, value in examples.items()])
    nodes = rest.example_node_ids(dataset_id)
    return name, dataset_id, {k.split(":", 1)[1]: v for k, v in nodes.items()}
