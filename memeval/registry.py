"""Name → (config schema, factory) registries, so adding a component never edits a central switch.

Every configurable component (embedder, judge, scorer, dataset, experiment…) registers itself with a
dataclass schema. `Registry.choose(node)` validates the composed config node against that schema
before anything runs, and names the fix when a name or key is wrong; `Registry.make` builds the
component from what was chosen, so a setting is parsed once.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, MissingMandatoryValue, ValidationError

T = TypeVar("T")
C = TypeVar("C")


class ConfigError(ValueError):
    """A configuration mistake found before any work started."""


LOADER = "loader"  # field metadata: the function that reads the file a setting names
RANGE = "range"  # field metadata: the Range a numeric setting allows
SEEDS = (0, 2**32 - 1)  # what numpy and scikit-learn accept as a seed


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a numeric setting allows: `low`/`high` inclusive, `above`/`below` exclusive;
    None on a side means no bound there. NaN and infinities are never allowed."""

    low: float | None = None
    high: float | None = None
    above: float | None = None
    below: float | None = None

    def __contains__(self, value: float) -> bool:
        return (math.isfinite(value) and (self.low is None or value >= self.low)
                and (self.high is None or value <= self.high)
                and (self.above is None or value > self.above)
                and (self.below is None or value < self.below))

    def __str__(self) -> str:
        start = (f"[{self.low}" if self.low is not None
                 else f"({self.above}" if self.above is not None else None)
        end = (f"{self.high}]" if self.high is not None
               else f"{self.below})" if self.below is not None else None)
        if start and end:
            return f"in {start}, {end}"
        if start:
            return f"≥ {self.low}" if self.low is not None else f"> {self.above}"
        return f"≤ {self.high}" if self.high is not None else f"< {self.below}"


def bounded(default: T, low: float | None = None, high: float | None = None, *,
            above: float | None = None, below: float | None = None) -> T:
    """A numeric setting and the values it allows (`low`/`high` inclusive, `above`/`below`
    exclusive). `to_dataclass` refuses any other value before work starts, naming the setting's
    full key and the range."""
    return dataclasses.field(default=default,
                             metadata={RANGE: Range(low, high, above, below)})


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


@dataclasses.dataclass(frozen=True)
class Chosen:
    """A registered component's name and its settings, validated: what `Registry.make` builds
    (each build gets its own copy of the settings)."""

    name: str
    params: Any


def _kind(annotation: Any) -> tuple[type, bool]:
    """int or float, and whether None is allowed, from a field's annotation."""
    args = typing.get_args(annotation) or (annotation,)
    return (int if int in args else float), type(None) in args


def _within(value: Any, annotation: Any, allowed: Range) -> bool:
    kind, optional = _kind(annotation)
    if value is None:
        return optional
    if isinstance(value, list | tuple):
        return bool(value) and all(_within(item, kind, allowed) for item in value)
    if isinstance(value, bool) or not isinstance(value, int if kind is int else int | float):
        return False
    return value in allowed


class OutOfRange(ConfigError):
    """A setting outside its range; `keyed`: the message names it by its full key."""

    def __init__(self, name: str, annotation: Any, allowed: Range, value: Any,
                 keyed: bool) -> None:
        kind, optional = _kind(annotation)
        allowed_text = f"{'an integer ' if kind is int else ''}{allowed}"
        super().__init__(f"{name} must be {'null or ' if optional else ''}{allowed_text}, "
                         f"got {value!r}")
        self.keyed = keyed


def _check_ranges(obj: Any, name: Callable[[str], str], keyed: bool, prefix: str = "") -> None:
    """Every bounded field of `obj` and of the dataclasses nested in it."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            _check_ranges(value, name, keyed, f"{prefix}{f.name}.")
        elif RANGE in f.metadata and not _within(value, hints[f.name], f.metadata[RANGE]):
            raise OutOfRange(name(prefix + f.name), hints[f.name], f.metadata[RANGE], value,
                             keyed)


def _bounded_field(schema: type, path: str) -> tuple[Any, Range] | None:
    """The annotation and range of the bounded field at dotted `path` in `schema`, if any."""
    head, _, rest = path.partition(".")
    if not dataclasses.is_dataclass(schema):
        return None
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        if f.name == head:
            if rest:
                return _bounded_field(hints[head], rest)
            return (hints[head], f.metadata[RANGE]) if RANGE in f.metadata else None
    return None


# (key, params) of the component being validated, so a component validated inside its parent's
# validate() (a gate stage, a labeller's judge) is named by its full key in range errors.
_PARENT: ContextVar[tuple[str, Mapping[Any, Any]] | None] = ContextVar("parent", default=None)


@contextmanager
def _validating(key: str | None, params: Mapping[Any, Any]) -> Iterator[None]:
    token = _PARENT.set((key, params) if key is not None else None)
    try:
        yield
    finally:
        _PARENT.reset(token)


def _where(node: Mapping[Any, Any]) -> str | None:
    """The full key of `node` inside the component being validated, found by its content."""
    parent = _PARENT.get()
    if parent is None:
        return None
    bare = {k: v for k, v in node.items() if k != "name"}

    def find(tree: Any, path: str) -> str | None:
        if not isinstance(tree, Mapping):
            return None
        if tree and dict(tree) in (dict(node), bare):
            return path
        for k, v in tree.items():
            found = find(v, f"{path}.{k}" if path else str(k))
            if found is not None:
                return found
        return None

    return find(parent[1], parent[0])


# Typed instances already converted, by schema and the parameters' repr: OmegaConf's structured
# merge takes milliseconds, and a run converts the same settings many times (validation, each
# component's build, the checkpoints' settings). Each caller gets its own copy.
_TYPED: OrderedDict[tuple[type, str], Any] = OrderedDict()
TYPED_KEPT = 1024


def _typed(schema: type[C], params: Mapping[Any, Any]) -> C:
    """`params` merged onto the schema's defaults, type-checked by OmegaConf, as an instance."""
    memo = (schema, repr(params))
    if memo not in _TYPED:
        _TYPED[memo] = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema),
                                                           dict(params)))
        if len(_TYPED) > TYPED_KEPT:
            _TYPED.popitem(last=False)
    _TYPED.move_to_end(memo)
    return copy.deepcopy(_TYPED[memo])


def to_dataclass(schema: type[C], params: Mapping[Any, Any], what: str,
                 key: str | None = None) -> C:
    """Validate `params` against a dataclass schema: unknown keys, wrong types and values out of
    a field's range name the fix. `key`: where `params` sit in the config ("" for the top
    level), so a bad value is named by its full key, e.g. `gate.write.dedup_threshold`."""
    fields = {f.name for f in dataclasses.fields(schema)}  # type: ignore[arg-type]
    for name in params:
        if name not in fields:
            raise ConfigError(f"{what} has no option '{name}'{did_you_mean(name, fields)} "
                              f"(options: {', '.join(sorted(fields))})")

    def full(path: str) -> str:
        if key is None:
            return f"{what}: {path}"
        return f"{key}.{path}" if key else path

    keyed = key is not None
    try:
        obj = _typed(schema, params)
    except (ValidationError, ConfigKeyError, MissingMandatoryValue) as err:
        path = str(err.full_key)
        bounded_field = _bounded_field(schema, path)
        if bounded_field is not None:  # e.g. bootstrap=abc: said as its range, like bootstrap=0
            given: Any = params
            for part in path.split("."):
                given = given[part]
            raise OutOfRange(full(path), *bounded_field, given, keyed) from None
        raise ConfigError(f"{what}: {err.msg}") from None
    _check_ranges(obj, full, keyed)
    check = getattr(obj, "validate", None)
    if callable(check):
        try:
            with _validating(key, params):
                check()
        except OutOfRange as err:
            if err.keyed:  # a nested component's value, already named by its full key
                raise
            raise ConfigError(f"{what}: {err}") from None
        except (ValueError, re.error) as err:  # re.error: a bad pattern in a word list
            raise ConfigError(f"{what}: {err}") from None
    return obj


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

    def validate(self, node: Mapping[str, Any] | DictConfig, key: str | None = None) -> Any:
        """Return the node as an instance of the registered schema, or raise ConfigError.
        `key`: where the node sits in the config (found by content when it is validated inside
        another component's validate())."""
        raw = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node
        if not isinstance(raw, Mapping) or "name" not in raw:
            raise ConfigError(f"{self.kind} config needs a 'name' key (known: {self.names()})")
        try:
            reg = self.get(str(raw["name"]))
        except ConfigError as err:  # an option file of the user's own names what it configures
            raise ConfigError(f"{err}: the 'name' in a {self.kind} option's YAML is the "
                              f"{self.kind} it configures, whatever the file is called") from None
        params = {k: v for k, v in raw.items() if k != "name"}
        return to_dataclass(reg.schema, params, f"{self.kind} '{reg.name}'",
                            key if key is not None else _where(raw))

    def choose(self, node: Mapping[str, Any] | DictConfig, key: str | None = None) -> Chosen:
        """The node's component name with its validated settings (see `validate`)."""
        params = self.validate(node, key)  # first: a node without a name is said so
        return Chosen(str(node["name"]), params)

    def make(self, chosen: Chosen, **deps: Any) -> T:
        return self.get(chosen.name).factory(copy.deepcopy(chosen.params), **deps)

    def build(self, node: Mapping[str, Any] | DictConfig, **deps: Any) -> T:
        """`make(choose(node))`, without make's copy: validating gave these settings their own."""
        chosen = self.choose(node)
        return self.get(chosen.name).factory(chosen.params, **deps)
