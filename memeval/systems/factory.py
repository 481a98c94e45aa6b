"""`system=module:factory`: a memory system from the user's own code, with no packaging.

`python -m memeval run +experiment=three_pass system=my_memory:build` is read as
`system=factory system.target=my_memory:build`: `my_memory` is imported (the current directory
is on the path under `python -m`) and `build` called with `system.settings` as keywords, plus the
run's components as `ctx` when it takes one. What it returns is checked against the protocol at
the boundary (systems/boundary.py) before any work: a name, a notes dict, and capabilities
memeval knows.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memeval.registry import ConfigError
from memeval.systems.base import SYSTEMS, Components, System
from memeval.systems.boundary import CallLimits
from memeval.systems.deadline import described

FACTORY = "factory"


def is_target(value: str) -> bool:
    """`module:callable`, as a system option never is (options are YAML file names)."""
    module, colon, name = value.partition(":")
    return bool(colon and module and name) and "/" not in value and " " not in value


@dataclass
class FactorySystemConfig(CallLimits):
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
    except Exception as err:  # the module's own code failed (a SyntaxError, an error it raised)
        raise ConfigError(f"system target {target}: importing {module_name} failed: "
                          f"{described(err)}") from None
    found: Any = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ConfigError(f"system target {target}: {module_name} has no {attribute}")
    if not callable(found):
        raise ConfigError(f"system target {target}: {attribute} is not callable")
    return found


def _unfit(signature: inspect.Signature, given: dict[str, Any]) -> str:
    """What keeps `given` from being the callable's keywords ("" when nothing does)."""
    kinds = inspect.Parameter
    params = signature.parameters.values()
    if not any(p.kind is kinds.VAR_KEYWORD for p in params):
        unknown = sorted(set(given) - {p.name for p in params if p.kind in (
            kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)})
        if unknown:
            return f"it takes no {', '.join(unknown)}"
    missing = [p.name for p in params if p.default is p.empty and p.name not in given
               and p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)]
    return f"it needs {', '.join(missing)}" if missing else ""


@SYSTEMS.register(FACTORY, FactorySystemConfig)
def build_factory(cfg: FactorySystemConfig, *, ctx: Components) -> System:
    build = _callable(cfg.target)
    try:
        signature: inspect.Signature | None = inspect.signature(build)
    except (TypeError, ValueError):  # a builtin or a class without a readable signature
        signature = None
    takes_ctx = signature is not None and "ctx" in signature.parameters
    given = {**cfg.settings, **({"ctx": ctx} if takes_ctx else {})}
    unfit = _unfit(signature, given) if signature is not None else ""
    if unfit:
        raise ConfigError(f"system target {cfg.target} cannot be called with system.settings "
                          f"{sorted(cfg.settings)}: {unfit} (give one with "
                          f"+system.settings.NAME=VALUE)")
    made: System = build(**given)  # checked at the boundary, which called this
    return made
