"""Hand-labelled entries mixed into sampled corpus rows, as the memoryd benchmark did (144 + 856).

Ground-truth metrics come from the human-labelled rows only; the corpus rows are labelled by the
configured labeller (label_source says which) and show the stage distribution on real traffic.
`corpus` picks the loader: the bundled trace sample (offline default), the HF corpus, or Claude
Code session logs; `corpus_path` points it at data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from memeval.data.base import DATASETS, Dataset, DatasetError, LoadReport
from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.data.labellers import LABELLERS
from memeval.data.splits import stratified_split
from memeval.paths import data_path
from memeval.registry import SEEDS, Chosen, ConfigError, bounded, did_you_mean

# corpus name → (loader, default path or None for the loader's own default)
CORPORA: dict[str, tuple[str, str | None]] = {
    "trace_sample": ("hf_traces", "traces/trace_sample_v1.jsonl"),
    "hf_traces": ("hf_traces", None),
    "claude_code": ("claude_code", None),
}


@dataclass
class MixedConfig:
    limit_setting: ClassVar[str] = "corpus_rows"  # what cuts a run of it (run_cost.py)
    labeled_path: str = "???"
    labeled_rows: int | None = bounded(144, 1)
    corpus: str = "trace_sample"
    corpus_path: str | None = None
    corpus_rows: int = bounded(856, 0)
    corpus_options: dict[str, Any] = field(default_factory=dict)
    seed: int = bounded(0, *SEEDS)

    def validate(self) -> None:
        if self.corpus not in CORPORA:
            raise ConfigError(f"unknown corpus '{self.corpus}'{did_you_mean(self.corpus, CORPORA)}"
                              f" (known: {', '.join(CORPORA)})")
        if self.corpus_rows < 0 or (self.labeled_rows is not None and self.labeled_rows < 1):
            raise ValueError("corpus_rows must be ≥ 0 and labeled_rows ≥ 1")


def corpus_node(cfg: MixedConfig) -> dict[str, Any]:
    loader, bundled = CORPORA[cfg.corpus]
    node: dict[str, Any] = {"name": loader, **cfg.corpus_options}
    if cfg.corpus_path:
        node["path"] = cfg.corpus_path
    elif bundled:
        node["path"] = data_path(bundled)
    return node


def build_mixed_dataset(cfg: MixedConfig, labeller: Chosen, **deps: Any) -> Dataset:
    rng = np.random.default_rng(cfg.seed)
    labelled = load_labeled_jsonl(cfg.labeled_path)
    human = labelled.entries
    if cfg.labeled_rows is not None and cfg.labeled_rows < len(human):
        human, _ = stratified_split(human, cfg.labeled_rows / len(human), cfg.seed)
    try:
        corpus = DATASETS.build(corpus_node(cfg))
    except DatasetError as err:  # the corpus loader names its own setting, `path`
        raise DatasetError(str(err).replace("dataset.path=", "dataset.corpus_path=")) from None
    picked = sorted(rng.permutation(len(corpus.entries))[: cfg.corpus_rows])
    rows = LABELLERS.make(labeller, training=labelled.entries, **deps).label(
        [corpus.entries[i] for i in picked])
    mixed = [*human, *rows]
    order = rng.permutation(len(mixed))
    report = LoadReport(
        source=f"{labelled.report.source} + {corpus.report.source}",
        rows_read=labelled.report.rows_read + corpus.report.rows_read,
        stats={"human_rows": len(human), "corpus_rows": len(rows),
               "corpus_rows_requested": cfg.corpus_rows,
               "corpus_rows_available": len(corpus.entries),
               **{f"corpus_{k}": v for k, v in corpus.report.stats.items()}},
    )
    report.found.absorb(labelled.report.found)
    report.found.absorb(corpus.report.found)
    return Dataset(name=f"{labelled.name}+{corpus.name}", entries=[mixed[i] for i in order],
                   report=report)


@DATASETS.register("mixed", MixedConfig)
def build_mixed(cfg: MixedConfig, *, labeller: Chosen | None = None,
                **deps: Any) -> Dataset:
    if labeller is None:
        raise ConfigError("dataset 'mixed' needs a labeller config (labeller=heuristic)")
    return build_mixed_dataset(cfg, labeller, **deps)
