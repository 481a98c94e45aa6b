"""An experiment's own sections of metrics.json, as the frozen type the experiment declares when it
registers (`Outputs` in reporting/outputs.py): it writes its result with that type, and every
reader reads the run back with it (`RunResult.of`), so no module outside the experiment keeps a
field for it.

Each field of a `Findings` type is one top-level section, written in field order. A field is typed
JSON as written (a mapping, a list, a number) or a typed view (a `View`: `from_dict` and
`to_dict`, which writes back what it read).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, Self

OMIT_NONE = "omit_none"


class View(Protocol):
    """A typed view of one section: read from, and written back as, the JSON it came from."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self: ...

    def to_dict(self) -> dict[str, Any]: ...


def optional_section() -> Any:
    """A section written only when the experiment measured it: None leaves it out of the file
    (and a file without it reads as None)."""
    return dataclasses.field(default=None, metadata={OMIT_NONE: True})


def _typed_view(annotation: Any) -> type[View] | None:
    """The `View` class a field holds, if its annotation names one (`Mqs | None` → Mqs)."""
    for candidate in typing.get_args(annotation) or (annotation,):
        if isinstance(candidate, type) and hasattr(candidate, "from_dict"):
            return candidate
    return None


_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", int: "a number",
               float: "a number", bool: "a boolean"}


def _json_kinds(annotation: Any) -> tuple[type, ...] | None:
    """The JSON values a section so annotated may hold (null always may: a figure not measured);
    None when the annotation admits any."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    kinds: list[type] = [type(None)]
    for candidate in typing.get_args(annotation) if union else (annotation,):
        origin = typing.get_origin(candidate) or candidate
        if not isinstance(origin, type):
            return None  # Any
        if hasattr(origin, "from_dict") or issubclass(origin, Mapping):
            kinds.append(dict)
        elif issubclass(origin, str):
            kinds.append(str)
        elif issubclass(origin, Sequence):
            kinds.append(list)
        else:
            kinds += [int, float] if origin in (int, float) else [origin]
    return tuple(kinds)


def _checked(name: str, value: Any, annotation: Any) -> Any:
    """A section's value, refused (TypeError, naming it) when its JSON type is not the declared
    one: a reader would index a string or a number as the mapping it expects."""
    kinds = _json_kinds(annotation)
    if kinds is not None and not isinstance(value, kinds):
        wanted = dict.fromkeys(_JSON_NAMES.get(kind, kind.__name__) for kind in kinds
                               if kind is not type(None))
        raise TypeError(f"section '{name}' is {_JSON_NAMES.get(type(value), 'null')}, not "
                        f"{' or '.join(wanted)}")
    return value


@dataclasses.dataclass(frozen=True)
class Findings:
    """Base of the declared types: each field a top-level section of metrics.json."""

    def to_dict(self) -> dict[str, Any]:
        written: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get(OMIT_NONE):
                continue
            written[f.name] = value.to_dict() if hasattr(value, "to_dict") else value
        return written

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The sections a run wrote; one an older run lacks takes its default, one without a
        default makes the run unreadable as this type (KeyError names it), and so does one of
        another JSON type than declared (TypeError names it)."""
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise KeyError(f.name)
                continue
            value = _checked(f.name, data[f.name], hints[f.name])
            view = _typed_view(hints[f.name])
            values[f.name] = view.from_dict(value) if view and value is not None else value
        return cls(**values)
