"""`python -m memeval run --help`: what a run takes, read from the YAML files alone.

Hydra's own help composes every option of every group to list them (over 3 s here); the groups
and options are the file names under memeval/conf/ and the plugins' conf folders, which is all this
page needs. Hydra's flags stay one `--hydra-help` away.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from memeval.paths import CONF_DIR
from memeval.plugins import conf_dirs, installed
from memeval.reporting.table import wrapped

USAGE = """usage: python -m memeval run +experiment=NAME [group=option …] [key=value …]
       python -m memeval run -m +experiment=NAME key=a,b,c …   (a sweep)

Runs one experiment into one run directory (runs/DATE/TIME/, or hydra.run.dir=DIR), on the
bundled data, the offline embedder and no server unless told otherwise."""

MORE = """more:
  python -m memeval list                         every experiment and option, with its settings
  python -m memeval run +experiment=NAME --cfg job   the composed configuration, not run
  python -m memeval run --hydra-help             Hydra's own flags (-m, --cfg, --info, …)"""


def groups(folders: Iterable[Path]) -> dict[str, list[str]]:
    """Each top-level group's options: `<group>/<option>.yaml` in any of the folders."""
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in folder.glob("*/*.yaml"):
            if path.parent.name != "hydra":
                found.setdefault(path.parent.name, set()).add(path.stem)
    return {group: sorted(options) for group, options in sorted(found.items())}


def plugin_conf_dirs() -> list[Path]:
    """The installed plugins' option folders. Loading a plugin loads every built-in component
    first (most of a second), so it happens only when a plugin is installed."""
    if not installed():
        return []
    from memeval.components import load_components

    load_components()
    return conf_dirs()


def run_help() -> str:
    options = groups([CONF_DIR, *plugin_conf_dirs()])
    experiments = options.pop("experiment", [])
    lines = [USAGE, "", "experiments (+experiment=NAME):",
             wrapped(", ".join(experiments), indent="  "), "",
             "groups (group=option):"]
    width = max((len(group) for group in options), default=0)
    lines += [wrapped(f"{group.ljust(width)}  {', '.join(names)}", indent="  ")
              for group, names in options.items()]
    return "\n".join([*lines, "", MORE])
