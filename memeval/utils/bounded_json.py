"""JSON read with limits: what memeval reads from a service, a request or a file of its own may
nest no deeper than any of them writes (a deeper one is hostile or damaged, and Python's parser
would end in RecursionError), a service's numbers must be numbers, and a file may be no larger
than memeval writes of its kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_JSON_DEPTH = 64  # no service, request or file memeval reads nests deeper


class JsonRefused(ValueError):
    """JSON memeval will not use (an answer, a request or a checkpoint of its own), and why."""


class FileTooLarge(ValueError):
    """A file larger than any memeval writes of its kind: damaged, or not memeval's."""


def _not_a_number(name: str) -> Any:
    raise JsonRefused(f"{name} where JSON allows only numbers")


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether containers nest more than `limit` deep, walked without recursion."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack += [(child, depth + 1) for child in children if isinstance(child, dict | list)]
    return False


def parse_json(body: bytes, *, allow_nan: bool = False) -> Any:
    """The JSON in `body`; JsonRefused when it nests deeper than MAX_JSON_DEPTH or, unless
    `allow_nan` (memeval's own files, which write an undefined figure as NaN), holds NaN or
    Infinity (a verdict or score that is no number); ValueError when it is not JSON."""
    try:
        value = json.loads(body, parse_constant=None if allow_nan else _not_a_number)
    except RecursionError:
        raise JsonRefused(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if isinstance(value, dict | list) and too_deep(value):
        raise JsonRefused(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def read_capped(path: Path, cap: int, what: str = "such a file") -> bytes:
    """The file's bytes; FileTooLarge when it holds more than `cap` (`what` names the kind of file
    in the message). Reads at most `cap + 1` bytes, so a file that grows, or a device, cannot
    take more memory than that."""
    with path.open("rb") as handle:
        data = handle.read(cap + 1)
    if len(data) > cap:
        size = max(path.stat().st_size, len(data))
        raise FileTooLarge(f"{size} bytes, over the {cap} {what} may take")
    return data


def read_json(path: Path, cap: int, what: str = "such a file", *, allow_nan: bool = False) -> Any:
    """A JSON file, read with `read_capped` and `parse_json`; ValueError (FileTooLarge,
    JsonRefused, JSONDecodeError, UnicodeDecodeError) says why it cannot be used."""
    return parse_json(read_capped(path, cap, what), allow_nan=allow_nan)
