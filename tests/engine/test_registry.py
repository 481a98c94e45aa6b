"""Registries name the fix for every config mistake, and every shipped YAML lists every option.

Hydra composes in struct mode: a key missing from a component's YAML cannot be overridden from the
command line (`scorer.k=7` would fail with "Key 'k' is not in struct"). So each YAML under
memeval/conf/{embedder,scorer,judge,dataset}/ must list every field of its schema, and each gate
stage node every field of its stage schema.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf

from memeval.backends.embedders.base import EMBEDDERS
from memeval.backends.judges.base import JUDGES
from memeval.components import load_builtin_components
from memeval.config import compose, validate
from memeval.data.base import INPUTS, Inputs
from memeval.engine.gate.base import STAGES
from memeval.engine.gate.gate import GateConfig
from memeval.engine.gate.threshold import ThresholdConfig
from memeval.engine.scorers.base import SCORERS
from memeval.experiments.base import EXPERIMENTS
from memeval.registry import (
    RANGE,
    ConfigError,
    Range,
    Registry,
    bounded,
    did_you_mean,
    to_dataclass,
)
from memeval.systems.base import SYSTEMS
from memeval.systems.reference.content_encoder import CONTENT_ENCODERS
from tests.engine.fakes import CONF

load_builtin_components()

REGISTRIES: dict[str, Registry[Any] | Inputs] = {
    "embedder": EMBEDDERS, "scorer": SCORERS, "judge": JUDGES, "dataset": INPUTS,
    "system": SYSTEMS, "content_encoder": CONTENT_ENCODERS,
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


# The gate's content-score cut is the top-level `threshold` group's, joined when a run's
# settings are validated: the gate's YAML does not hold it.
NOT_IN_GATE_YAML = ["threshold"]


def test_missing_fields_detects_gaps() -> None:
    node = OmegaConf.load(CONF / "gate" / "memoryd.yaml")
    del node["max_embedding_failure_share"]
    del node.write["min_chars"]
    missing = sorted(missing_fields(GateConfig, node))
    assert missing == ["max_embedding_failure_share", *NOT_IN_GATE_YAML, "write.min_chars"]


def test_every_group_has_yamls() -> None:
    for group in REGISTRIES:
        assert list((CONF / group).glob("*.yaml")), group


@pytest.mark.parametrize("path", COMPONENT_YAMLS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_component_yaml_lists_every_schema_field(path: Path) -> None:
    node = OmegaConf.load(path)
    registry = REGISTRIES[path.parent.name]
    schema = registry.get(str(node.name)).schema
    assert missing_fields(schema, node) == [], f"{path} does not list every option"
    unknown = set(node.keys()) - {f.name for f in dataclasses.fields(schema)} - {
        "name", "defaults"}
    assert not unknown, f"{path} has options its schema lacks: {unknown}"


def test_gate_yaml_lists_every_field() -> None:
    node = OmegaConf.load(CONF / "gate" / "memoryd.yaml")
    assert missing_fields(GateConfig, node) == NOT_IN_GATE_YAML
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
    with pytest.raises(ConfigError,
                       match="known: hashing, onnx, openai_http, sentence_transformers"):
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
    with pytest.raises(ConfigError, match=r"^embedder 'hashing': dim must be an integer in "
                                          r"\[8, 65536\], got 'large'$"):
        EMBEDDERS.validate({"name": "hashing", "dim": "large"})
    with pytest.raises(ConfigError, match=r"^scorer 'knn_margin': min_learned must be an integer"):
        SCORERS.validate({"name": "knn_margin", "min_learned": "many"})


@pytest.mark.bad_input
def test_nested_unknown_option_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^experiment 'mqs_calibration': .*'xx'"):
        EXPERIMENTS.validate({"name": "mqs_calibration", "mai": {"xx": 1}})


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


def config_schemas() -> dict[str, type]:
    """Every config dataclass a run validates: the top level, each registered component's
    schema, the gate and Phoenix, and the dataclasses nested in them, by a key naming it."""
    from memeval.data.labellers import LABELLERS
    from memeval.experiments.settings import Settings
    from memeval.reporting.phoenix.config import PhoenixConfig

    found: dict[str, type] = {}

    def add(key: str, schema: type) -> None:
        found[key] = schema
        hints = typing.get_type_hints(schema)
        for f in dataclasses.fields(schema):  # type: ignore[arg-type]
            if dataclasses.is_dataclass(hints[f.name]):
                add(f"{key}.{f.name}", hints[f.name])

    add("settings", Settings)
    add("gate", GateConfig)
    add("reporting.phoenix", PhoenixConfig)
    add("threshold", ThresholdConfig)
    for registry in (*REGISTRIES.values(), STAGES, LABELLERS, EXPERIMENTS):
        for name in registry.names():
            add(f"{registry.kind} '{name}'", registry.get(name).schema)
    return found


def numeric_fields() -> list[tuple[str, dataclasses.Field[Any], Any]]:
    fields = []
    for key, schema in config_schemas().items():
        hints = typing.get_type_hints(schema)
        for f in dataclasses.fields(schema):  # type: ignore[arg-type]
            args = typing.get_args(hints[f.name]) or (hints[f.name],)
            if {int, float} & set(args) and bool not in args:
                fields.append((f"{key}: {f.name}", f, hints[f.name]))
    return fields


NUMERIC = numeric_fields()


def test_the_walk_finds_every_kind_of_config() -> None:
    keys = {key.split(":")[0] for key, _, _ in NUMERIC}
    assert {"settings", "gate.write", "reporting.phoenix", "gate stage 'length'",
            "threshold", "experiment 'mqs_calibration'.mai",
            "labeller 'judge'", "embedder 'openai_http'"} <= keys
    assert len(NUMERIC) > 100


@pytest.mark.parametrize(("key", "field_", "annotation"), NUMERIC, ids=[k for k, _, _ in NUMERIC])
def test_every_numeric_setting_declares_its_range(key: str, field_: dataclasses.Field[Any],
                                                  annotation: Any) -> None:
    assert RANGE in field_.metadata, f"{key} has no range: declare it with bounded(default, …)"
    default = (field_.default_factory() if field_.default is dataclasses.MISSING  # type: ignore[misc]
               else field_.default)
    for value in default if isinstance(default, list) else [default]:
        assert value is None or value in field_.metadata[RANGE], f"{key}'s default is outside"


@dataclass
class Inner:
    share: float = bounded(0.5, 0, 1)


@dataclass
class Bounded:
    count: int = bounded(3, 1, 10)
    limit: int | None = bounded(None, 1)
    rate: float = bounded(1.0, above=0)
    inner: Inner = field(default_factory=Inner)


@pytest.mark.bad_input
@pytest.mark.parametrize(("params", "message"), [
    ({"count": 0}, "x.count must be an integer in [1, 10], got 0"),
    ({"count": 11}, "x.count must be an integer in [1, 10], got 11"),
    ({"count": "abc"}, "x.count must be an integer in [1, 10], got 'abc'"),
    ({"count": True}, "x.count must be an integer in [1, 10], got True"),
    ({"count": 2.5}, "x.count must be an integer in [1, 10], got 2.5"),
    ({"limit": 0}, "x.limit must be null or an integer ≥ 1, got 0"),
    ({"rate": 0}, "x.rate must be > 0, got 0.0"),
    ({"rate": "nan"}, "x.rate must be > 0, got nan"),
    ({"rate": float("inf")}, "x.rate must be > 0, got inf"),
    ({"inner": {"share": 1.5}}, "x.inner.share must be in [0, 1], got 1.5"),
    ({"inner": {"share": "half"}}, "x.inner.share must be in [0, 1], got 'half'"),
])
def test_a_value_out_of_range_is_refused_by_its_full_key(params: dict[str, Any],
                                                        message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        to_dataclass(Bounded, params, "thing", key="x")
    assert str(caught.value) == message


def test_values_in_range_pass_and_keep_their_type() -> None:
    obj = to_dataclass(Bounded, {"count": "10", "limit": None, "rate": 2, "inner": {"share": 0}},
                       "thing", key="x")
    assert obj == Bounded(10, None, 2.0, Inner(0.0))
    with pytest.raises(ConfigError, match=r"^thing: count must be an integer in \[1, 10\], got 0$"):
        to_dataclass(Bounded, {"count": 0}, "thing")  # no key: named by what it is


@pytest.mark.bad_input
@pytest.mark.parametrize(("override", "message"), [
    ("bootstrap=0", "bootstrap must be an integer in [20, 100000], got 0"),
    ("bootstrap=-5", "bootstrap must be an integer in [20, 100000], got -5"),
    ("bootstrap=abc", "bootstrap must be an integer in [20, 100000], got 'abc'"),
    ("bootstrap=100000000", "bootstrap must be an integer in [20, 100000], got 100000000"),
    ("seed=-1", "seed must be an integer in [0, 4294967295], got -1"),
    ("gate.write.dedup_threshold=1.5",
     "gate.write.dedup_threshold must be in [-1, 1], got 1.5"),
    ("gate.write.dedup_threshold=-2",
     "gate.write.dedup_threshold must be in [-1, 1], got -2.0"),
    ("gate.stages.length.min_chars=-1",
     "gate.stages.length.min_chars must be an integer ≥ 0, got -1"),
    ("threshold.target_recall=0", "threshold.target_recall must be in "
                                         "(0, 1], got 0.0"),
    ("labeller=judge", None),
    ("reporting.phoenix.timeout_s=0", "reporting.phoenix.timeout_s must be > 0, got 0.0"),
])
@pytest.mark.slow
def test_settings_are_refused_up_front_naming_the_key_and_range(override: str,
                                                                message: str | None) -> None:
    cfg = compose(["+experiment=three_pass", override])
    if message is None:
        validate(cfg)
        return
    with pytest.raises(ConfigError) as caught:
        validate(cfg)
    assert str(caught.value) == message


@pytest.mark.bad_input
def test_a_component_inside_another_is_named_by_its_full_key() -> None:
    cfg = compose(["+experiment=three_pass", "labeller=judge", "~labeller.judge",
                   "+labeller.judge={name: labels, error_rate: 2}"])
    with pytest.raises(ConfigError) as caught:
        validate(cfg)
    assert str(caught.value) == "labeller.judge.error_rate must be in [0, 1], got 2.0"


@dataclasses.dataclass
class Grid:
    values: list[float] = dataclasses.field(default_factory=lambda: [1.0],
                                            metadata={RANGE: Range(above=0)})


@pytest.mark.bad_input
@pytest.mark.parametrize("values", [[0.0, 1.0], [], [2.0, -1.0]])
def test_a_list_setting_needs_every_value_in_range(values: list[Any]) -> None:
    with pytest.raises(ConfigError, match=r"^x\.values must be > 0, got "):
        to_dataclass(Grid, {"values": values}, "grid", key="x")
    assert to_dataclass(Grid, {"values": [0.1, 10]}, "grid", key="x").values == [0.1, 10.0]
