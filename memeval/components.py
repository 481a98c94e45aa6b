"""Imports every built-in component module so each registers itself with its registry, then
every installed plugin's (memeval/plugins.py).

A new component is one module plus one line here (and one YAML file under conf/).
"""

from __future__ import annotations

import importlib

BUILTIN_MODULES = (
    "memeval.data.labeled_jsonl",
    "memeval.data.claude_code",
    "memeval.data.hf_traces",
    "memeval.data.mixed",
    "memeval.data.labellers",
    "memeval.engine.embedders.hashing",
    "memeval.engine.embedders.sentence_transformer",
    "memeval.engine.embedders.openai_http",
    "memeval.engine.judges.labels",
    "memeval.engine.judges.classifier",
    "memeval.engine.judges.anthropic",
    "memeval.engine.judges.openai_chat",
    "memeval.engine.scorers.memoryd",
    "memeval.engine.scorers.knn_margin",
    "memeval.engine.scorers.logistic",
    "memeval.engine.gate.prefilter",
    "memeval.engine.gate.length",
    "memeval.engine.gate.content_score",
    "memeval.engine.gate.judge_stage",
    "memeval.experiments.three_pass",
    "memeval.experiments.holdout",
    "memeval.experiments.feedback_loop",
    "memeval.experiments.mqs_calibration",
    "memeval.experiments.conflict_detection",
    "memeval.experiments.retrieval_replay",
    "memeval.experiments.compare_systems",
    "memeval.systems.reference",
    "memeval.systems.http",
    "memeval.systems.memledger",
)


def load_builtin_components() -> None:
    for module in BUILTIN_MODULES:
        importlib.import_module(module)


def load_components() -> None:
    """The built-ins, then every installed plugin: what `run`, `list` and Hydra's search path
    (a plugin's YAML options) need."""
    from memeval.plugins import load_plugins

    load_builtin_components()
    load_plugins()
