"""Registries name the fix for every config mistake, and every shipped YAML lists every option.

Hydra composes in struct mode: a key missing from a component's YAML cannot be overridden from the
command line (`scorer.k=7` would fail with "Key 'k' is not in struct"). So each YAML under
conf/{embedder,scorer,judge,dataset}/ must list every field of its schema, and each gate stage
node every field of its stage schema.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf

from memeval.components import load_builtin_components
from memeval.data.base import DATASETS
from memeval.engine.embedders.base import EMBEDDERS
from memeval.engine.gate.base import STAGES
from memeval.engine.gate.gate import GateConfig
from memeval.engine.judges.base import JUDGES
from memeval.engine.scorers.base import SCORERS
from memeval.registry import ConfigError, Registry, did_you_mean, to_dataclass
from tests.engine.fakes import CONF

load_builtin_components()

REGISTRIES: dict[str, Registry[Any]] = {
    "embedder": EMBEDDERS, "scorer": SCORERS, "judge": JUDGES, "dataset": DATASETS,
}
COMPONENT_YAMLS = sorted(p for group in REGISTRIES for p in (CONF / group).glob("*.yaml"))


def missing_fields(schema: type, node: DictConfig, prefix: str = "") -> list[str]:
    """Schema fields absent from the node, descending into nested dataclass fields."""
    missing = []
    for f in dataclasses.fields(schema):  # type: ignore[arg-type]
        key = prefix + f.name
        if f.name not in node.keys():  # noqa: SIM118 (`in node` is False for a ??? value)
            missing.append(key)
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(default):
            missing += missing_fields(type(default), node[f.name], key + ".")
    return missing


def test_missing_fields_detects_gaps() -> None:
    node = OmegaConf.load(CONF / "scorer" / "knn_margin.yaml")
    del node["k"]
    del node.threshold["refresh"]
    missing = sorted(missing_fields(SCORERS.get("knn_margin").schema, node))
    assert missing == ["k", "threshold.refresh"]


def test_every_group_has_yamls() -> None:
    for group in REGISTRIES:
        assert list((CONF / group).glob("*.yaml")), group


@pytest.mark.parametrize("path", COMPONENT_YAMLS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_component_yaml_lists_every_schema_field(path: Path) -> None:
    node = OmegaConf.load(path)
    registry = REGISTRIES[path.parent.name]
    schema = registry.get(str(node.name)).schema
    assert missing_fields(schema, node) == [], f"{path} does not list every option"
    unknown = set(node.keys()) - {f.name for f in dataclasses.fields(schema)} - {"name"}
    assert not unknown, f"{path} has options its schema lacks: {unknown}"


def test_gate_yaml_lists_every_field() -> None:
    node = OmegaConf.load(CONF / "gate" / "memoryd.yaml")
    assert missing_fields(GateConfig, node) == []
    for stage in node.order:
        schema = STAGES.get(stage).schema
        assert missing_fields(schema, node.stages[stage]) == [], f"gate.stages.{stage}"


def test_registered_names() -> None:
    assert {"hashing", "sentence_transformers", "openai_http"} <= set(EMBEDDERS.names())
    assert {"memoryd", "knn_margin", "logistic"} <= set(SCORERS.names())
    assert {"labels", "classifier"} <= set(JUDGES.names())
    assert STAGES.names() == ["content_score", "judge", "length", "prefilter"]


@pytest.mark.bad_input
def test_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"unknown scorer 'knn_margn'; did you mean 'knn_margin'"):
        SCORERS.get("knn_margn")
    with pytest.raises(ConfigError, match="known: hashing, openai_http, sentence_transformers"):
        EMBEDDERS.validate({"name": "word2vec"})


@pytest.mark.bad_input
def test_unknown_option_suggests_the_closest() -> None:
    with pytest.raises(ConfigError) as caught:
        JUDGES.validate({"name": "labels", "error_rat": 0.1})
    message = str(caught.value)
    assert "judge 'labels' has no option 'error_rat'; did you mean 'error_rate'" in message
    assert "options: error_rate, keep_labels, seed" in message


@pytest.mark.bad_input
def test_wrong_type_names_the_component() -> None:
    with pytest.raises(ConfigError, match=r"(?s)^embedder 'hashing': .*full_key: dim"):
        EMBEDDERS.validate({"name": "hashing", "dim": "large"})
    with pytest.raises(ConfigError, match=r"(?s)^scorer 'knn_margin': .*refresh"):
        SCORERS.validate({"name": "knn_margin", "threshold": {"refresh": "sometimes"}})


@pytest.mark.bad_input
def test_nested_unknown_option_is_refused() -> None:
    with pytest.raises(ConfigError, match="scorer 'knn_margin'"):
        SCORERS.validate({"name": "knn_margin", "threshold": {"polcy": "fixed"}})


@pytest.mark.bad_input
def test_missing_name() -> None:
    with pytest.raises(ConfigError, match="needs a 'name' key"):
        EMBEDDERS.validate({"dim": 8})


def test_validate_accepts_dictconfig_and_resolves() -> None:
    node = OmegaConf.create({"seed": 5, "judge": {"name": "labels", "seed": "${seed}"}})
    assert JUDGES.validate(node.judge).seed == 5


def test_did_you_mean_without_a_close_match() -> None:
    assert did_you_mean("zzz", ["alpha", "beta"]) == ""
    assert did_you_mean("alpah", ["alpha", "beta"]) == "; did you mean 'alpha'?"


@dataclass
class Toy:
    size: int = 1
    tags: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if self.size < 0:
            raise ValueError("size must be non-negative")


def test_to_dataclass_converts_and_validates() -> None:
    obj = to_dataclass(Toy, {"size": "3", "tags": ["a"]}, "toy")
    assert obj == Toy(3, ["a"])
    with pytest.raises(ConfigError, match=r"^toy: size must be non-negative$"):
        to_dataclass(Toy, {"size": -1}, "toy")


def test_register_rules() -> None:
    reg: Registry[object] = Registry("widget")
    reg.register("a", Toy)(lambda cfg: cfg)
    assert reg.build({"name": "a", "size": 2}) == Toy(2)
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("a", Toy)(lambda cfg: cfg)
    with pytest.raises(TypeError, match="must be a dataclass"):
        reg.register("b", dict)
