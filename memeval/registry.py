"""Name → (config schema, factory) registries, so adding a component never edits a central switch.

Every configurable component (embedder, judge, scorer, dataset, experiment…) registers itself with a
dataclass schema. `Registry.build(node)` validates the composed config node against that schema
before anything runs, and names the fix when a name or key is wrong.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

T = TypeVar("T")
C = TypeVar("C")


class ConfigError(ValueError):
    """A configuration mistake found before any work started."""


LOADER = "loader"  # field metadata: the function that reads the file a setting names


def input_file(loader: Callable[..., Any], default: T) -> T:
    """A setting naming a JSONL input file: `loader` reads it, so `python -m memeval list` can
    show the lines it takes."""
    return dataclasses.field(default=default, metadata={LOADER: loader})


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f"; did you mean '{close[0]}'?" if close else ""


@dataclasses.dataclass(frozen=True)
class Registration(Generic[T]):
    name: str
    schema: type
    factory: Callable[..., T]


def to_dataclass(schema: type[C], params: Mapping[Any, Any], what: str) -> C:
    """Validate `params` against a dataclass schema: unknown keys and wrong types name the fix."""
    fields = {f.name for f in dataclasses.fields(schema)}  # type: ignore[arg-type]
    for key in params:
        if key not in fields:
            raise ConfigError(f"{what} has no option '{key}'{did_you_mean(key, fields)} "
                              f"(options: {', '.join(sorted(fields))})")
    try:
        obj = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), dict(params)))
    except (ValidationError, ConfigKeyError) as err:
        raise ConfigError(f"{what}: {err.msg}") from None
    check = getattr(obj, "validate", None)
    if callable(check):
        try:
            check()
        except (ValueError, re.error) as err:  # re.error: a bad pattern in a word list
            raise ConfigError(f"{what}: {err}") from None
    return obj  # type: ignore[return-value]


class Registry(Generic[T]):
    """A named family of components (e.g. 'embedder')."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Registration[T]] = {}

    def register(self, name: str, schema: type) -> Callable[[Callable[..., T]], Callable[..., T]]:
        if not dataclasses.is_dataclass(schema):
            raise TypeError(f"{self.kind} '{name}': schema must be a dataclass")

        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._items:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._items[name] = Registration(name, schema, factory)
            return factory

        return decorator

    def names(self) -> list[str]:
        return sorted(self._items)

    def get(self, name: str) -> Registration[T]:
        try:
            return self._items[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.kind} '{name}'{did_you_mean(name, self._items)} "
                f"(known: {', '.join(self.names())})"
            ) from None

    def validate(self, node: Mapping[str, Any] | DictConfig) -> Any:
        """Return the node as an instance of the registered schema, or raise ConfigError."""
        raw = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node
        if not isinstance(raw, Mapping) or "name" not in raw:
            raise ConfigError(f"{self.kind} config needs a 'name' key (known: {self.names()})")
        reg = self.get(str(raw["name"]))
        params = {k: v for k, v in raw.items() if k != "name"}
        return to_dataclass(reg.schema, params, f"{self.kind} '{reg.name}'")

    def build(self, node: Mapping[str, Any] | DictConfig, **deps: Any) -> T:
        params = self.validate(node)
        name = node["name"]
        return self.get(str(name)).factory(params, **deps)
