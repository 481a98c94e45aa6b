"""Finds and imports every built-in component module, so each registers itself with its
registry by decorator, then every installed plugin's (memeval/plugins.py).

A new component is one module in one of COMPONENT_PACKAGES or a package inside one (plus its
YAML under memeval/conf/): no list to keep. Only the packages are named here; every module in
them is imported.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

COMPONENT_PACKAGES = (
    "memeval.data",
    "memeval.backends.embedders",
    "memeval.backends.judges",
    "memeval.backends.answerers",
    "memeval.engine.scorers",
    "memeval.engine.gate",
    "memeval.experiments",
    "memeval.systems",
)


@cache
def builtin_modules() -> tuple[str, ...]:
    """Every module of the component packages, sorted (so registration order never varies)."""
    found = []
    for name in COMPONENT_PACKAGES:
        package = importlib.import_module(name)
        found += [info.name for info in pkgutil.walk_packages(package.__path__, f"{name}.")
                  if not info.ispkg]
    return tuple(sorted(found))


def load_builtin_components() -> None:
    for module in builtin_modules():
        importlib.import_module(module)


def load_components() -> None:
    """The built-ins, then every installed plugin: what `run`, `list` and Hydra's search path
    (a plugin's YAML options) need."""
    from memeval.plugins import load_plugins

    load_builtin_components()
    load_plugins()
