"""Components are found, not listed: every module of the component packages is imported and
registers itself, and every registered component has a YAML option under memeval/conf/ that composes
and validates, so `group=option` works for each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from memeval.backends.embedders.base import EMBEDDERS
from memeval.backends.judges.base import JUDGES
from memeval.components import COMPONENT_PACKAGES, builtin_modules, load_builtin_components
from memeval.config import compose, validate
from memeval.data.base import INPUTS, Inputs
from memeval.data.labellers import LABELLERS
from memeval.engine.scorers.base import SCORERS
from memeval.experiments.base import EXPERIMENTS
from memeval.registry import Registry
from memeval.systems.base import SYSTEMS
from tests.engine.fakes import CONF

load_builtin_components()

GROUPS: dict[str, Registry[Any] | Inputs] = {
    "dataset": INPUTS, "labeller": LABELLERS, "embedder": EMBEDDERS, "judge": JUDGES,
    "scorer": SCORERS, "system": SYSTEMS,
}


# options that need a user's input to validate, and a bundled one to give them
CORPORA = CONF.parent / "tests" / "data" / "corpora"
REQUIRED = {("dataset", "labeled_jsonl"): [
    f"dataset.path={CONF.parent / 'data' / 'labeled' / 'write_gate_v1.jsonl'}"],
    ("dataset", "locomo"): [f"dataset.path={CORPORA / 'locomo_small.json'}"],
    ("dataset", "longmemeval"): [f"dataset.path={CORPORA / 'longmemeval_small.json'}"],
    ("dataset", "memory_jsonl"): [f"dataset.memories={CORPORA / 'memories.jsonl'}",
                                  f"dataset.queries={CORPORA / 'queries.jsonl'}"],
    ("system", "factory"): ["system.target=my_memory:build"]}


def builtin(registry: Registry[Any] | Inputs) -> set[str]:
    """The names memeval itself registers (tests register stand-ins of their own)."""
    return {name for name in registry.names()
            if registry.get(name).factory.__module__.startswith("memeval.")}


def options(group: str) -> dict[str, str]:
    """memeval/conf/<group>/<option>.yaml -> the component it names."""
    return {path.stem: str(OmegaConf.load(path).name)
            for path in sorted((CONF / group).glob("*.yaml"))}


def test_every_module_of_the_component_packages_is_found() -> None:
    for package in COMPONENT_PACKAGES:
        directory = Path(__file__).resolve().parents[1].joinpath(*package.split("."))
        on_disk = {f"{package}.{p.stem}" for p in directory.glob("*.py") if p.stem != "__init__"}
        assert on_disk and on_disk <= set(builtin_modules()), package


@pytest.mark.parametrize("group", list(GROUPS))
def test_every_registered_component_has_a_yaml_option(group: str) -> None:
    named = set(options(group).values())
    assert builtin(GROUPS[group]) <= named, f"memeval/conf/{group}/ lacks an option for some"
    assert named <= builtin(GROUPS[group]), f"memeval/conf/{group}/ names an unregistered one"


def test_every_registered_experiment_has_its_yaml() -> None:
    named = {str(OmegaConf.load(p).experiment.name) for p in (CONF / "experiment").glob("*.yaml")}
    assert named == builtin(EXPERIMENTS)


@pytest.mark.parametrize(("group", "option"),
                         [(g, o) for g in GROUPS for o in options(g)],
                         ids=lambda value: str(value))
@pytest.mark.slow
def test_every_option_composes_and_validates(group: str, option: str) -> None:
    cfg = compose(["+experiment=three_pass", f"{group}={option}",
                   *REQUIRED.get((group, option), [])])
    assert cfg[group].name == options(group)[option]
    validate(cfg)


def test_loading_the_components_imports_no_optional_library() -> None:
    """A run pays for mem0, memledger (and memledger's evaluators and sqlean) or NLTK only when
    it uses them."""
    import subprocess
    import sys

    code = ("import sys, memeval.components as c; c.load_builtin_components(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'nltk', 'mem0', 'faiss', 'memledger', 'litellm', 'evaluators', 'sqlean', "
            "'sklearn'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]"
