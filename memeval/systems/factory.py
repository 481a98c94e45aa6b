"""`system=module:factory`: a memory system from the user's own code, with no packaging.

`python -m memeval run +experiment=three_pass system=my_memory:build` is read as
`system=factory system.target=my_memory:build`: `my_memory` is imported (the current directory
is on the path under `python -m`) and `build` called with `system.settings` as keywords, plus the
run's components as `ctx` when it takes one. What it returns is checked against the protocol
(docs/protocol.md) before any work: a name, a notes dict, and capabilities memeval knows.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memeval.registry import ConfigError
from memeval.systems.base import SYSTEMS, Capability, Components, System

FACTORY = "factory"


def is_target(value: str) -> bool:
    """`module:callable`, as a system option never is (options are YAML file names)."""
    module, colon, name = value.partition(":")
    return bool(colon and module and name) and "/" not in value and " " not in value


@dataclass
class FactorySystemConfig:
    target: str = "???"  # module:callable
    settings: dict[str, Any] = field(default_factory=dict)  # keywords for the callable

    def validate(self) -> None:
        if not is_target(self.target):
            raise ValueError(f"target must be module:callable (e.g. my_memory:build), got "
                             f"{self.target!r}")


def _callable(target: str) -> Callable[..., Any]:
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"system target {target}: cannot import {module_name} ({err}); run "
                          f"from the folder holding it, or put it on PYTHONPATH") from None
    found: Any = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ConfigError(f"system target {target}: {module_name} has no {attribute}")
    if not callable(found):
        raise ConfigError(f"system target {target}: {attribute} is not callable")
    return found


def checked_system(system: Any, where: str) -> System:
    """The object, once it has what every system must: a name, notes and known capabilities
    (strings are read as capability names)."""
    missing = [a for a in ("name", "capabilities", "notes") if not hasattr(system, a)]
    if missing:
        raise ConfigError(f"{where} returned {type(system).__name__} without "
                          f"{', '.join(missing)}: a system needs name, capabilities and notes "
                          f"(docs/protocol.md)")
    known = {c.value for c in Capability}
    unknown = sorted(str(c) for c in system.capabilities if str(c) not in known)
    if unknown:
        raise ConfigError(f"{where}: system '{system.name}' declares unknown capabilities "
                          f"{unknown} (known: {', '.join(sorted(known))})")
    system.capabilities = frozenset(Capability(str(c)) for c in system.capabilities)
    return system


@SYSTEMS.register(FACTORY, FactorySystemConfig)
def build_factory(cfg: FactorySystemConfig, *, ctx: Components) -> System:
    build = _callable(cfg.target)
    try:
        takes_ctx = "ctx" in inspect.signature(build).parameters
    except (TypeError, ValueError):  # a builtin or a class without a readable signature
        takes_ctx = False
    made = build(**cfg.settings, **({"ctx": ctx} if takes_ctx else {}))
    return checked_system(made, f"system target {cfg.target}")
