"""YAML read with limits. The YAML memeval reads back (a run's settings, Hydra's record of its
job) holds no anchor or alias and nests a few levels, so a file with either is damaged or hostile
and is refused before anything is expanded: an alias loop, or aliases of aliases that expand a
few lines into billions of nodes; nesting that would take YAML's parser minutes (deep flows) or
end it in RecursionError; a file larger than memeval writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from memeval.utils.bounded_json import MAX_JSON_DEPTH, read_capped

MAX_CONFIG_BYTES = 2**20  # a run's resolved settings take a few kB
# libyaml's scanner when PyYAML has it: ten times faster than PyYAML's own over what is refused
_SCANNER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENS = (yaml.BlockSequenceStartToken, yaml.BlockMappingStartToken,
          yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken)
_CLOSES = (yaml.BlockEndToken, yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken)


class YamlRefused(ValueError):
    """YAML memeval will not load, and why."""


def checked_yaml(text: str) -> str:
    """`text`, once it is known to hold no anchor or alias and to nest no deeper than
    MAX_JSON_DEPTH; YamlRefused otherwise, yaml.YAMLError when it is not YAML."""
    if _flow_depth(text) > MAX_JSON_DEPTH:  # the scanners take minutes over deep flows
        raise YamlRefused("nested too deeply")
    depth = 0
    for token in yaml.scan(text, Loader=_SCANNER):
        if isinstance(token, yaml.AliasToken | yaml.AnchorToken):
            raise YamlRefused("YAML anchors or aliases, which memeval never writes")
        depth += isinstance(token, _OPENS) - isinstance(token, _CLOSES)
        if depth > MAX_JSON_DEPTH:
            raise YamlRefused("nested too deeply")
    return text


def read_yaml(path: Path, cap: int = MAX_CONFIG_BYTES, what: str = "a settings file") -> Any:
    """A YAML file as plain data, read with `read_capped` and `checked_yaml`; a ValueError
    (YamlRefused, FileTooLarge, UnicodeDecodeError) says in one line why it cannot be used."""
    text = read_capped(path, cap, what).decode("utf-8")
    try:
        return yaml.safe_load(checked_yaml(text))
    except yaml.YAMLError as err:
        raise YamlRefused(one_line(err)) from None


def _flow_depth(text: str) -> int:
    """How deep `[`/`{` nest in the text, quoted or not (memeval writes block style, with a
    bracket only for an empty or short list): a bound checked before YAML's own scanner runs."""
    depth = deepest = 0
    for mark in re.finditer(r"[\[\]{}]", text):
        depth += 1 if mark.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def one_line(err: Exception) -> str:
    """YAML's errors span several lines (with a caret under the spot): its problem and where."""
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        return f"{err.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return str(err).splitlines()[0] if str(err) else type(err).__name__
