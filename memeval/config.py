"""Config resolvers and whole-config validation, run before any work starts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from memeval.backends.embedders.base import EMBEDDERS
from memeval.backends.judges.base import JUDGES
from memeval.components import load_components
from memeval.data.base import INPUTS
from memeval.data.labellers import LABELLERS
from memeval.engine.gate.gate import GateConfig
from memeval.engine.gate.threshold import threshold_settings
from memeval.engine.scorers.base import SCORERS
from memeval.experiments.base import EXPERIMENTS
from memeval.experiments.settings import ChecksInputs, Settings, Validated
from memeval.paths import data_path
from memeval.registry import ConfigError, did_you_mean, to_dataclass
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.systems.base import SYSTEMS
from memeval.systems.reference.content_encoder import CONTENT_ENCODERS

if TYPE_CHECKING:
    from hydra.core.override_parser.types import Override

# Settings that moved (old key -> new key): the old spelling is refused, naming the new one.
RENAMED = {"scorer.threshold": "threshold"}


def compose(overrides: list[str] | None = None, with_hydra: bool = False) -> DictConfig:
    """The config `python -m memeval run` would build, without Hydra's run-directory machinery
    (`with_hydra`: with Hydra's own node too, e.g. the group options chosen)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module

    register_resolvers()
    load_components()  # a plugin's options are on Hydra's search path once it is loaded
    with initialize_config_module(config_module="memeval.conf", version_base="1.3"):
        return hydra_compose("config", overrides=overrides or [], return_hydra_config=with_hydra)


def config_groups() -> dict[str, list[str]]:
    """Each config group under memeval/conf/ with its options, as Hydra finds them (Hydra's own
    aside)."""
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    load_components()
    with initialize_config_module(config_module="memeval.conf", version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        return {group: loader.get_group_options(group) for group in loader.list_groups("")
                if group != "hydra"}


def expand_targets(args: list[str]) -> list[str]:
    """`system=module:callable` (a system from the user's own code) as the factory option and
    its target, which Hydra can compose; so too a system composed in under a package of its own
    (`+system@experiment.systems.mine=module:callable`, compare_systems). Any other argument
    unchanged."""
    from memeval.systems.factory import FACTORY, is_target

    out = []
    for arg in args:
        key, equals, value = arg.partition("=")
        group, _, package = key.lstrip("+").partition("@")
        if equals and group == "system" and is_target(value):
            out += [f"{key}={FACTORY}", f"{package or group}.target={value}"]
        else:
            out.append(arg)
    return out


def quote_values(args: list[str]) -> list[str]:
    """Quote each `key=value` whose value Hydra's grammar refuses unquoted, such as a path
    starting with `~` (the shell leaves `dataset.path=~/x` alone), so documented commands work.
    What Hydra parses already (sweeps, `~key` deletions, flags) is passed on unchanged."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()

    def parses(line: str, value: str | None = None) -> bool:
        try:
            override = parser.parse_override(line)
        except HydraException:
            return False
        return value is None or override.value() == value

    def quoted(arg: str) -> str:
        key, equals, value = arg.partition("=")
        if arg.startswith(("-", "~")) or not equals or parses(arg):
            return arg
        candidates = (f"{key}={mark}{value}{mark}" for mark in ("'", '"'))
        # Unchanged when no quoting keeps the value intact: Hydra then names the syntax error.
        return next((c for c in candidates if parses(c, value)), arg)

    return [quoted(arg) for arg in args]


def _searched_options(overrides: list[Override]) -> dict[str, list[str]]:
    """The options the command line's own `hydra.searchpath` folders add, by group: a mapping
    YAML kept beside the user's files is an option like a built-in one."""
    from memeval.plugins import conf_dir

    found: dict[str, list[str]] = {}
    for override in overrides:
        if override.key_or_group != "hydra.searchpath":
            continue
        value = override.value()
        for path in value if isinstance(value, list) else [value]:
            folder = conf_dir(str(path))
            for option in sorted(folder.glob("*/*.yaml")) if folder else []:
                found.setdefault(option.parent.name, []).append(option.stem)
    return found


def _check_group_options(overrides: list[Override]) -> None:
    """A misspelt option (`embedder=minilmm`) is named with the option meant, as a misspelt
    component name is, instead of Hydra's search-path dump."""
    from hydra.core.override_parser.types import ChoiceSweep

    groups = config_groups()
    for group, extra in _searched_options(overrides).items():
        groups[group] = [*groups.get(group, []), *extra]
    for override in overrides:
        options = groups.get(override.key_or_group, [])
        value = override.value()
        chosen = value.list if isinstance(value, ChoiceSweep) else [value]
        for option in chosen if options else []:
            if isinstance(option, str) and option not in options:
                raise ConfigError(f"unknown {override.key_or_group} '{option}'"
                                  f"{did_you_mean(option, options)} (known: {', '.join(options)})")


def renamed(key: str) -> str | None:
    """The key's new spelling when it (or a node above it) moved, else None."""
    for old, new in RENAMED.items():
        if key == old or key.startswith(f"{old}."):
            return new + key[len(old):]
    return None


def _check_renamed(overrides: list[Override]) -> None:
    for override in overrides:
        new = renamed(override.key_or_group)
        if new is not None:
            value = str(override.input_line).partition("=")[2]
            raise ConfigError(f"{override.key_or_group} is now {new}: use {new}={value}")


def check_overrides(args: list[str]) -> None:
    """Hydra refuses a misspelt key by suggesting to add it with '+', the wrong fix: compose the
    plain overrides first (sweeps and Hydra's own aside) and name the key meant instead. A
    misspelt group option is named before Hydra's own error too, and the composed config is
    validated, so no mistake costs a run directory."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import ConfigCompositionException, OverrideParseException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    try:
        parsed = OverridesParser.create().parse_overrides(
            [a for a in args if not a.startswith("-") and ("=" in a or a.startswith("~"))])
    except OverrideParseException:
        return  # Hydra reports its own syntax errors
    _check_renamed(parsed)
    _check_group_options([o for o in parsed if not o.is_delete()])
    plain = [o for o in parsed if not o.is_sweep_override()
             and (o.key_or_group == "hydra.searchpath" or not o.key_or_group.startswith("hydra"))]
    try:
        cfg = compose([str(o.input_line) for o in plain])
    except ConfigCompositionException as err:
        cause = err.__cause__
        if not isinstance(cause, ConfigAttributeError | ConfigKeyError) or not cause.full_key:
            return
        wrong = str(cause.full_key)
        parent = wrong.rpartition(".")[0]
        rest = compose([str(o.input_line) for o in plain
                        if not f"{o.key_or_group}.".startswith(f"{wrong}.")])
        siblings = OmegaConf.select(rest, parent) if parent else rest
        leaves = [str(k) for k in (siblings.keys() if isinstance(siblings, DictConfig) else [])]
        hint = did_you_mean(wrong.rpartition(".")[2], leaves)
        if hint and parent:
            hint = hint.replace(" '", f" '{parent}.", 1)
        elif parent and isinstance(siblings, DictConfig):  # a new key in a map of its own
            hint = (f" (to add a key to {parent}, such as a stage name to a mapping, write "
                    f"+{wrong}=…)")
        raise ConfigError(f"unknown setting '{wrong}'{hint}") from None
    # The whole config too, before Hydra makes a run directory; a multirun's swept values, and
    # a command only asking Hydra for its help or the config, are checked by each job instead.
    if len(plain) == len([o for o in parsed if not o.key_or_group.startswith("hydra")]) \
            and all(a in ("-m", "--multirun") for a in args if a.startswith("-")):
        validate(cfg)


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("memeval_data"):
        OmegaConf.register_new_resolver("memeval_data", data_path)


def _gate(resolved: Mapping[Any, Any]) -> GateConfig:
    """The gate's settings with the content-score cut, which is its own top-level group (so
    `threshold=fixed` picks one) and is refused under `gate`."""
    if "threshold" in resolved["gate"]:
        raise ConfigError("gate.threshold is not a setting: the content-score cut is the "
                          "top-level threshold group (threshold=fixed, threshold.target_recall=…)")
    gate = to_dataclass(GateConfig, resolved["gate"], "gate", key="gate")
    return replace(gate, threshold=threshold_settings(resolved["threshold"]))


def validate(cfg: DictConfig, experiment: bool = True) -> Validated:
    """The composed config as types, or a ConfigError naming the fix. `experiment`: whether the
    config must choose one (a run must; `serve` runs none)."""
    load_components()
    if experiment and "experiment" not in cfg:
        raise ConfigError("no experiment chosen: add +experiment=NAME "
                          f"(known: {', '.join(EXPERIMENTS.names())})")
    for old in RENAMED:
        if OmegaConf.select(cfg, old) is not None:  # set in a YAML file (overrides are checked)
            raise ConfigError(f"{old} is now {renamed(old)}: a YAML file still sets {old}; "
                              f"move those settings to {renamed(old)}")
    missing = sorted(OmegaConf.missing_keys(cfg))  # `???` in the YAML: the user must choose
    if missing:
        raise ConfigError(f"{', '.join(missing)} not set: add "
                          f"{' '.join(f'{key}=…' for key in missing)} to the command")
    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(resolved, dict)
    top = {k: v for k, v in resolved.items() if not isinstance(v, dict)}
    checked = Validated(
        settings=to_dataclass(Settings, top, "the top level", key=""),
        experiment=(EXPERIMENTS.choose(resolved["experiment"], key="experiment")
                    if "experiment" in resolved else None),
        dataset=INPUTS.choose(resolved["dataset"], key="dataset"),
        labeller=LABELLERS.choose(resolved["labeller"], key="labeller"),
        embedder=EMBEDDERS.choose(resolved["embedder"], key="embedder"),
        content_encoder=CONTENT_ENCODERS.choose(resolved["content_encoder"],
                                                key="content_encoder"),
        scorer=SCORERS.choose(resolved["scorer"], key="scorer"),
        judge=JUDGES.choose(resolved["judge"], key="judge"),
        gate=_gate(resolved),
        phoenix=to_dataclass(PhoenixConfig, resolved["reporting"]["phoenix"], "reporting.phoenix",
                             key="reporting.phoenix"),
        system=SYSTEMS.choose(resolved["system"], key="system"),
    )
    chosen = checked.experiment
    if chosen is not None and isinstance(chosen.params, ChecksInputs):
        chosen.params.check_inputs(checked.dataset)
    return checked
