"""Components from other packages: each `memeval.plugins` entry point registers its own.

An entry point names a module (imported) or a callable (called) that registers components with
memeval's registries, as a built-in module does. Its YAML options live in the plugin too: the
module (or the callable's module) sets `MEMEVAL_CONF` to a Hydra search path such as
`pkg://my_plugin.conf`, a folder holding `<group>/<option>.yaml`, which Hydra searches after
memeval's own memeval/conf/, so `system=<option>` composes a plugin's option like a built-in one.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.plugins import Plugins
from hydra.plugins.search_path_plugin import SearchPathPlugin

from memeval.registry import ConfigError

GROUP = "memeval.plugins"
MEMEVAL_DIR = Path(__file__).resolve().parent
CONF_ATTRIBUTE = "MEMEVAL_CONF"


class PluginError(ConfigError):
    """An installed plugin that cannot load: its name, what failed and where."""


@dataclass(frozen=True)
class Plugin:
    name: str  # the entry point's name
    target: str  # what it names: `module` or `module:callable`
    distribution: str  # the installed package that declares it
    conf: str | None  # the Hydra search path of its YAML options, if it ships any


_loaded: list[Plugin] | None = None
_failure: PluginError | None = None


def _distribution(entry: EntryPoint) -> str:
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"


def _failed(entry: EntryPoint, why: str) -> PluginError:
    dist = entry.dist
    fix = f" (pip uninstall {dist.name})" if dist is not None else ""
    return PluginError(f"plugin '{entry.name}' ({entry.value}, from {_distribution(entry)}) "
                       f"{why}; fix the plugin or uninstall it{fix}")


def _raised_at(err: BaseException) -> str:
    """file:line of the plugin's own code that raised (the innermost frame outside memeval and
    the import machinery), where its fix lies."""
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if not f.filename.startswith("<frozen")]
    own = [f for f in frames if not Path(f.filename).resolve().is_relative_to(MEMEVAL_DIR)]
    where = (own or frames)[-1:]
    return f" at {where[0].filename}:{where[0].lineno}" if where else ""


def conf_dir(path: str) -> Path | None:
    """The folder a `pkg://` or `file://` search path names, or None when there is none."""
    if path.startswith("file://"):
        folder = Path(path.removeprefix("file://"))
        return folder if folder.is_dir() else None
    if not path.startswith("pkg://"):
        return None
    try:
        spec = importlib.util.find_spec(path.removeprefix("pkg://").replace("/", "."))
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def _conf(entry: EntryPoint, loaded: object) -> str | None:
    module = loaded if isinstance(loaded, ModuleType) else sys.modules.get(
        getattr(loaded, "__module__", ""))
    conf = getattr(module, CONF_ATTRIBUTE, None)
    if conf is None:
        return None
    if not isinstance(conf, str) or conf_dir(conf) is None:
        raise _failed(entry, f"sets {CONF_ATTRIBUTE} = {conf!r}, which names no folder: use "
                             f"'pkg://PACKAGE.conf' (a package holding GROUP/OPTION.yaml)")
    return conf


def load_plugin(entry: EntryPoint) -> Plugin:
    """Import the module an entry point names (or call the callable it names), so it registers
    its components; any failure, a name registered twice included, names the plugin."""
    try:
        loaded = entry.load()
        if not isinstance(loaded, ModuleType):
            if not callable(loaded):
                raise _failed(entry, "names neither a module nor a callable")
            loaded()
    except PluginError:
        raise
    except Exception as err:
        raise _failed(entry, f"failed to load: {type(err).__name__}: {err}{_raised_at(err)}"
                      ) from None
    return Plugin(entry.name, entry.value, _distribution(entry), _conf(entry, loaded))


class PluginConfigs(SearchPathPlugin):
    """Hydra searches each loaded plugin's conf after memeval's own."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for plugin in _loaded or []:
            if plugin.conf is not None:
                search_path.append(f"memeval-plugin-{plugin.name}", plugin.conf)


def installed() -> bool:
    """Whether any plugin is installed, read from the entry points without loading one."""
    return bool(entry_points(group=GROUP))


def load_plugins() -> list[Plugin]:
    """Every installed plugin, loaded once per process (the built-ins must be loaded first, so
    a plugin reusing a built-in's name is the one refused)."""
    global _loaded, _failure
    if _failure is not None:  # a half-loaded plugin is not loaded again
        raise _failure
    if _loaded is None:
        try:
            _loaded = [load_plugin(entry) for entry in entry_points(group=GROUP)]
        except PluginError as err:
            _failure = err
            raise
        if any(plugin.conf for plugin in _loaded):
            Plugins.instance().register(PluginConfigs)
    return _loaded


def conf_dirs() -> list[Path]:
    """The folders of the loaded plugins' YAML options, in Hydra's search order."""
    found = (conf_dir(plugin.conf) for plugin in _loaded or [] if plugin.conf)
    return [folder for folder in found if folder is not None]
