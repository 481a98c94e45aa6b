"""Runs one experiment into one run directory: validate, load, replay, measure, write."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memeval.config import validate
from memeval.data.base import DATASETS
from memeval.engine.embedders.base import EMBEDDERS
from memeval.engine.embedders.cache import CachedEmbedder
from memeval.engine.judges.base import JUDGES
from memeval.engine.scorers.threshold import explain
from memeval.experiments.base import EXPERIMENTS, RunContext
from memeval.reporting.table import pass_table
from memeval.results.provenance import provenance
from memeval.results.run_dir import write_run

log = logging.getLogger(__name__)


def run_experiment(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    started = time.time()
    checked = validate(cfg)
    cache_dir = Path(str(cfg.cache_dir)).expanduser()
    loading = time.perf_counter()
    dataset = DATASETS.build(cfg.dataset, labeller=cfg.labeller, cache_dir=cache_dir)
    load_s = time.perf_counter() - loading
    for problem in dataset.report.problems:
        log.warning("skipped %s", problem)
    embedder = CachedEmbedder(EMBEDDERS.build(cfg.embedder), cache_dir / "embeddings.sqlite")
    judge = JUDGES.build(cfg.judge, cache_dir=cache_dir, entries=dataset.entries,
                         seed=int(cfg.seed))
    ctx = RunContext(cfg, run_dir, dataset, embedder, judge)
    replaying = time.perf_counter()
    result = EXPERIMENTS.build(cfg.experiment).run(ctx)
    experiment_s = time.perf_counter() - replaying
    metrics: dict[str, Any] = {
        "experiment": cfg.experiment.name,
        "seed": int(cfg.seed),
        "dataset": {"name": dataset.name, "source": dataset.report.source,
                    "fingerprint": dataset.fingerprint, "entries": len(dataset.entries),
                    "rows_read": dataset.report.rows_read, "skipped": dataset.report.skipped,
                    "stats": dataset.report.stats,
                    "problems": dataset.report.problems[:100]},
        "embedder": {"identity": embedder.identity, "cache_hits": embedder.hits,
                     "cache_misses": embedder.misses},
        "judge": judge.name,
        "scorer": {"name": cfg.scorer.name, "threshold_policy": checked.scorer.threshold.policy,
                   "threshold_rule": explain(checked.scorer.threshold)},
        "passes": result.passes,
        **result.extra,
        "wall_seconds": round(time.time() - started, 3),
        "timing": {"dataset_load_s": round(load_s, 3), "experiment_s": round(experiment_s, 3),
                   "embedding_s": round(embedder.seconds, 3)},
    }
    write_run(run_dir, metrics, result.decisions, OmegaConf.to_yaml(cfg, resolve=True),
              provenance())
    print(pass_table(result.passes))
    print(f"content-score threshold: {metrics['scorer']['threshold_rule']}")
    if cfg.plots:
        try:
            from memeval.reporting.plots import make_figures

            make_figures(run_dir)
        except Exception:
            log.exception("plots failed; the run's results are intact in %s", run_dir)
    print(f"run directory: {run_dir}")
    return metrics
