"""`python -m memeval list`: the experiments, each component group's options and the input files
with the lines they take, read from memeval/conf/, the registries and the schema dataclasses, so the
listing cannot disagree with what `run` accepts."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from memeval.reporting.table import WIDTH
from memeval.user_errors import report_user_error

# The catalogue is built when the command runs: `list --help` loads nothing heavy.
WHAT = ("experiments", "components", "datasets")


def _flat(settings: dict[str, Any], prefix: str = "") -> list[str]:
    """`key=value` as a command line takes it: nested settings as dotted keys."""
    words = []
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            words += _flat(value, f"{prefix}{key}.")
        else:
            shown_value = json.dumps(value) if isinstance(value, dict | list) else _plain(value)
            words.append(f"{prefix}{key}={shown_value}")
    return words


def _plain(value: Any) -> str:
    """A value as YAML and Hydra's overrides spell it."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return str(value)


def _column(first: str, text: str, indent: int) -> list[str]:
    """`first` padded to `indent`, then `text` wrapped in the column after it; a `first` too
    long to leave two spaces before the column gets a line of its own, so a name never runs
    into its description."""
    own_line = len(first) + 2 > indent
    wrapped = textwrap.wrap(text, WIDTH, initial_indent=" " * indent if own_line
                            else first.ljust(indent), subsequent_indent=" " * indent,
                            break_on_hyphens=False)
    return ([first] if own_line or not wrapped else []) + wrapped


def _group_lines(group: str, entry: dict[str, Any], with_settings: bool) -> list[str]:
    lines = [f"  {group} (default: {entry['default']})"]
    for option in entry["options"]:
        component = option["component"]
        named = f" [{component}]" if component and component != option["name"] else ""
        lines += _column(f"    {option['name']}", option["description"] + named, 23)
        if with_settings and option["settings"]:
            lines += _column("", "  ".join(_flat(option["settings"])), 23)
    return lines


def _mounted_lines(group: str, entry: dict[str, Any]) -> list[str]:
    """A group an experiment mounts: its options, then the override each experiment takes."""
    lines = [f"  {group}" + ("" if entry["options"] else " (options under components)")]
    for option in entry["options"]:
        lines += _column(f"    {option['name']}", option["description"], 23)
    where = [f"{m['experiment']}: {m['override']}={m['default']}" for m in entry["mounted"]]
    return lines + _column("", f"in {';  '.join(where)}", 23)


def _experiment_lines(experiment: dict[str, Any]) -> list[str]:
    lines = _column(f"  {experiment['name']}", experiment["description"], 23)
    if experiment["sets"]:
        lines += _column("", f"sets {'  '.join(_flat(experiment['sets']))}", 23)
    for item in experiment["inputs"]:
        lines += _column("", f"{item['setting']}: JSONL, default {_plain(item['default'])}", 23)
        for kind in ("required", "optional"):
            names = [f"{f['name']} ({f['type']}{'; ' + f['needs'] if 'needs' in f else ''})"
                     for f in item.get("fields", []) if f["required"] == (kind == "required")]
            if names:
                lines += _column("", f"{kind}: {', '.join(names)}", 25)
    return lines


def render(found: dict[str, Any]) -> str:
    lines = []
    if "experiments" in found:
        lines.append("experiments (python -m memeval run +experiment=NAME):")
        for experiment in found["experiments"]:
            lines += _experiment_lines(experiment)
    if "components" in found:
        lines.append("components (python -m memeval run GROUP=OPTION GROUP.KEY=VALUE):")
        for group, entry in found["components"].items():
            lines += _group_lines(group, entry, with_settings=False)
    if "experiment_components" in found:
        lines.append("experiment components (python -m memeval run +experiment=NAME "
                     "GROUP@PACKAGE=OPTION):")
        for group, entry in found["experiment_components"].items():
            lines += _mounted_lines(group, entry)
    if "datasets" in found:
        lines.append("datasets (python -m memeval run … dataset=NAME dataset.KEY=VALUE):")
        lines += _group_lines("dataset", found["datasets"], with_settings=True)
    if "quality_sets" in found:
        lines.append("quality sets (python -m memeval run … experiment.SETTING=FILE.jsonl):")
        for kind in found["quality_sets"]:
            lines += _column(f"  {kind['name']}", f"{kind['holds']}: each line needs "
                             f"{kind['needs']}", 23)
            for setting, experiments in kind["read_by"].items():
                lines += _column("", f"{setting} of {', '.join(experiments)}", 23)
    return "\n".join(lines)


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval list", description=__doc__)
    parser.add_argument("what", nargs="?", choices=WHAT,
                        help="only the experiments, the component groups or the datasets")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    options = parser.parse_args(args)
    from memeval.catalogue.options import catalogue
    from memeval.registry import ConfigError

    try:
        found = catalogue(options.what)
    except ConfigError as err:  # e.g. an installed plugin that cannot load
        report_user_error(err)
        return 2
    print(json.dumps(found, indent=2) if options.json else render(found))
    return 0
