"""What `python -m memeval list` shows, read from memeval/conf/, the registries and the schema
dataclasses, so the listing cannot disagree with what `run` accepts: the experiments, each
component group's options and the input files with the lines they take."""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from memeval.components import load_components
from memeval.config import compose, config_groups
from memeval.data.base import DatasetError
from memeval.data.quality_sets import QUALITY_SETS
from memeval.experiments.base import EXPERIMENTS
from memeval.paths import CONF_DIR, DATA_DIR
from memeval.plugins import conf_dirs
from memeval.registry import LOADER

ROOT = DATA_DIR.parent
SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.?!])\s+")
JSON_TYPES = {str: "text", bool: "true/false", int: "number", float: "number", list: "list",
              dict: "object", type(None): "null"}


def description(path: Path) -> str:
    """The first sentence of the comment a memeval/conf/ YAML file opens with."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        if "@package" not in line:
            lines.append(line.lstrip("# ").strip())
    return SENTENCE_END.split(" ".join(lines), maxsplit=1)[0]


def option_file(group: str, option: str) -> Path:
    """An option's YAML where Hydra finds it: memeval's memeval/conf/ first, then each plugin's."""
    paths = [folder / group / f"{option}.yaml" for folder in (CONF_DIR, *conf_dirs())]
    return next((path for path in paths if path.is_file()), paths[0])


def shown(value: Any) -> Any:
    """Paths to bundled files relative to the checkout, so the listing reads the same anywhere."""
    if isinstance(value, str) and value.startswith(f"{ROOT}/"):
        return value[len(str(ROOT)) + 1:]
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shown(v) for v in value]
    return value


def line_format(loader: Callable[..., Any], sample: Path) -> list[dict[str, Any]]:
    """The top-level fields of the bundled file's lines; a field is required when the loader
    refuses a line without it (with its reason, when that says more than "missing"). The
    loader is the only authority on what a line needs: asking it keeps the listing from
    drifting from the code."""
    rows = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
    keys = list(dict.fromkeys(key for row in rows for key in row))
    found = []
    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / "probe.jsonl"
        for key in keys:
            row = next(r for r in rows if key in r)
            probe.write_text(json.dumps({k: v for k, v in row.items() if k != key}) + "\n")
            field: dict[str, Any] = {"name": key, "type": JSON_TYPES.get(type(row[key]), "value"),
                                     "required": False}
            try:
                loader(probe, "raise")
            except DatasetError as err:
                field["required"] = True
                reason = str(err).removeprefix(f"{probe}:1: ")
                if not reason.startswith("missing field"):
                    field["needs"] = reason
            found.append(field)
    return found


def _inputs(cfg: DictConfig) -> list[dict[str, Any]]:
    """The experiment's settings that name an input file, with their bundled defaults."""
    schema = EXPERIMENTS.get(str(cfg.experiment.name)).schema
    inputs = []
    for f in dataclasses.fields(schema):
        if LOADER not in f.metadata:
            continue
        default = cfg.experiment.get(f.name)
        item: dict[str, Any] = {"setting": f"experiment.{f.name}", "default": shown(default)}
        if default and Path(default).is_file():
            item["fields"] = line_format(f.metadata[LOADER], Path(default))
        inputs.append(item)
    return inputs


def experiments(defaults: dict[str, str]) -> list[dict[str, Any]]:
    found = []
    for option in config_groups()["experiment"]:
        cfg = compose([f"+experiment={option}"], with_hydra=True)
        choices = {group: str(chosen) for group, chosen in cfg.hydra.runtime.choices.items()
                   if group in defaults and chosen != defaults[group]}
        found.append({"name": option, "component": str(cfg.experiment.name),
                      "description": description(option_file("experiment", option)),
                      "sets": choices, "inputs": _inputs(cfg)})
    return found


def components(defaults: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each group of memeval/conf/config.yaml's defaults with its options and their settings
    (resolved against the default config, as `run` would)."""
    base = OmegaConf.to_container(compose(), resolve=False)
    assert isinstance(base, dict)
    groups = config_groups()
    found = {}
    for group, default in defaults.items():
        options = []
        for option in groups[group]:
            path = option_file(group, option)
            option_yaml = yaml.safe_load(path.read_text())
            option_yaml.pop("defaults", None)  # Hydra's defaults list (e.g. a scorer's threshold)
            node = OmegaConf.create({**base, group: option_yaml})
            settings = OmegaConf.to_container(node[group], resolve=True, throw_on_missing=False)
            assert isinstance(settings, dict)
            options.append({"name": option, "component": settings.pop("name", None),
                            "description": description(path), "settings": shown(settings)})
        found[group] = {"default": default, "options": options}
    return found


def experiment_mounts() -> dict[str, list[dict[str, str]]]:
    """Groups an experiment mounts inside its own settings (`/mqs@experiment.mqs: memledger`),
    each with where: the experiment, the override that picks another option, and the default."""
    mounts: dict[str, list[dict[str, str]]] = {}
    for option in config_groups()["experiment"]:
        listed = yaml.safe_load(option_file("experiment", option).read_text()).get("defaults", [])
        for item in listed:
            if not isinstance(item, dict):
                continue
            for key, default in item.items():
                group, _, package = key.removeprefix("/").partition("@")
                if key.startswith("/") and package:
                    override = group if package == group else f"{group}@{package}"
                    mounts.setdefault(group, []).append(
                        {"experiment": option, "override": override, "default": str(default)})
    return mounts


def experiment_components(defaults: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each group an experiment mounts and where; its options described unless the group is a
    top-level one, listed with the components already."""
    found = {}
    for group, where in sorted(experiment_mounts().items()):
        options = [] if group in defaults else [
            {"name": option, "description": description(option_file(group, option))}
            for option in config_groups()[group]]
        found[group] = {"mounted": where, "options": options}
    return found


def default_choices() -> dict[str, str]:
    """Group → default option, from memeval/conf/config.yaml's defaults list."""
    listed = OmegaConf.load(CONF_DIR / "config.yaml").defaults
    return {str(k): str(v) for item in listed if isinstance(item, DictConfig)
            for k, v in item.items()}


def catalogue(what: str | None) -> dict[str, Any]:
    load_components()
    defaults = default_choices()
    found: dict[str, Any] = {}
    if what in (None, "experiments"):
        found["experiments"] = experiments(defaults)
    if what in (None, "components"):
        found["components"] = components(defaults)
        found["experiment_components"] = experiment_components(defaults)
    if what == "datasets":
        found["datasets"] = components({"dataset": defaults["dataset"]})["dataset"]
        found["quality_sets"] = quality_sets()
    return found


def quality_sets() -> list[dict[str, Any]]:
    """Each registered kind of quality set, what its lines need, and the experiment settings
    that name a file of it (found by their loader, so the two cannot disagree)."""
    read_by: dict[str, dict[str, set[str]]] = {name: {} for name in QUALITY_SETS}
    for experiment in EXPERIMENTS.names():
        for f in dataclasses.fields(EXPERIMENTS.get(experiment).schema):
            for name, kind in QUALITY_SETS.items():
                if f.metadata.get(LOADER) == kind.load:
                    read_by[name].setdefault(f"experiment.{f.name}", set()).add(experiment)
    return [{"name": name, "holds": kind.kind.what, "needs": kind.kind.needs,
             "read_by": {setting: sorted(names) for setting, names in read_by[name].items()}}
            for name, kind in QUALITY_SETS.items()]
