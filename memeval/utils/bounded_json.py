"""JSON read with limits: what memeval reads from a service, a request or a file of its own may
nest no deeper than any of them writes (a deeper one is hostile or damaged, and Python's parser
would end in RecursionError), and a service's numbers must be numbers."""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64  # no service, request or file memeval reads nests deeper


class JsonRefused(ValueError):
    """JSON memeval will not use (an answer, a request or a checkpoint of its own), and why."""


def _not_a_number(name: str) -> Any:
    raise JsonRefused(f"{name} where JSON allows only numbers")


def _too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
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
    if isinstance(value, dict | list) and _too_deep(value):
        raise JsonRefused(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value
