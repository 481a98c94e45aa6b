"""Components from installed plugins (`memeval.plugins` entry points): loading, the errors that
name a broken plugin, their YAML options on Hydra's search path, and the example plugin
installed for real and run from the command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from memeval import plugins
from memeval.catalogue.options import option_file
from memeval.components import load_builtin_components
from memeval.config import compose
from memeval.plugins import GROUP, PluginError, load_plugin, load_plugins
from tests.test_cli import unwrapped

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "memeval-plugin-example"


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No plugin loaded yet in this process, and `tmp_path` importable for fake plugins."""
    monkeypatch.setattr(plugins, "_loaded", None)
    monkeypatch.setattr(plugins, "_failure", None)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:  # the fake plugins' modules
        if name.startswith("fake_plugin"):
            del sys.modules[name]


def entry(name: str, target: str) -> EntryPoint:
    return EntryPoint(name, target, GROUP)


def installed(monkeypatch: pytest.MonkeyPatch, *entries: EntryPoint) -> None:
    monkeypatch.setattr(plugins, "entry_points", lambda group: list(entries))


@pytest.mark.bad_input
def test_a_plugin_that_fails_to_import_is_named_with_where_it_failed(fresh: Path) -> None:
    (fresh / "fake_plugin_broken.py").write_text('"""A plugin."""\nimport no_such_module_x\n')
    with pytest.raises(PluginError) as err:
        load_plugin(entry("broken", "fake_plugin_broken"))
    message = str(err.value)
    assert message.startswith("plugin 'broken' (fake_plugin_broken, from ")
    assert "ModuleNotFoundError: No module named 'no_such_module_x'" in message
    assert f"at {fresh / 'fake_plugin_broken.py'}:2" in message
    assert "fix the plugin or uninstall it" in message


@pytest.mark.bad_input
def test_a_plugin_registering_a_builtin_name_is_named(fresh: Path) -> None:
    load_builtin_components()
    (fresh / "fake_plugin_dup.py").write_text(
        "from memeval.engine.scorers.base import SCORERS\n"
        "from memeval.engine.scorers.knn_margin import KnnMarginConfig\n"
        "SCORERS.register('knn_margin', KnnMarginConfig)(lambda cfg: None)\n")
    with pytest.raises(PluginError, match=r"^plugin 'dup' \(fake_plugin_dup, .*\) failed to "
                                          r"load: ValueError: scorer 'knn_margin' is "
                                          r"registered twice at .*fake_plugin_dup.py:3"):
        load_plugin(entry("dup", "fake_plugin_dup"))


@pytest.mark.bad_input
def test_a_search_path_naming_no_folder_is_refused(fresh: Path) -> None:
    (fresh / "fake_plugin_noconf.py").write_text("MEMEVAL_CONF = 'pkg://fake_plugin_none.conf'\n")
    with pytest.raises(PluginError, match=r"plugin 'noconf' .* sets MEMEVAL_CONF = "
                                          r"'pkg://fake_plugin_none.conf', which names no folder"):
        load_plugin(entry("noconf", "fake_plugin_noconf"))


@pytest.mark.bad_input
def test_an_entry_point_naming_neither_module_nor_callable_is_refused(fresh: Path) -> None:
    (fresh / "fake_plugin_value.py").write_text("VALUE = 3\n")
    with pytest.raises(PluginError, match="names neither a module nor a callable"):
        load_plugin(entry("value", "fake_plugin_value:VALUE"))


def test_plugins_load_once_and_a_callable_is_called(fresh: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (fresh / "fake_plugin_calls.py").write_text("CALLS = []\n\ndef register():\n"
                                                "    CALLS.append(1)\n")
    installed(monkeypatch, entry("calls", "fake_plugin_calls:register"))
    first, second = load_plugins(), load_plugins()
    assert first is second and [p.name for p in first] == ["calls"]
    assert sys.modules["fake_plugin_calls"].CALLS == [1]


@pytest.mark.bad_input
def test_a_failed_plugin_fails_the_same_way_again(fresh: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin that registered half its names before failing is not imported again (that
    would report its first name as registered twice)."""
    (fresh / "fake_plugin_half.py").write_text("CALLS = []\n\ndef register():\n"
                                               "    CALLS.append(1)\n    raise RuntimeError('x')\n")
    installed(monkeypatch, entry("half", "fake_plugin_half:register"))
    with pytest.raises(PluginError) as first:
        load_plugins()
    with pytest.raises(PluginError) as second:
        load_plugins()
    assert second.value is first.value and "RuntimeError: x" in str(first.value)
    assert sys.modules["fake_plugin_half"].CALLS == [1]


def test_a_plugins_yaml_options_compose_and_are_listed(fresh: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin's conf/ is on Hydra's search path after memeval's own: its option composes
    by name, and the listing reads its YAML from there."""
    package = fresh / "fake_plugin_conf"
    (package / "conf" / "system").mkdir(parents=True)
    (package / "__init__.py").write_text("MEMEVAL_CONF = 'pkg://fake_plugin_conf.conf'\n")
    (package / "conf" / "__init__.py").write_text("")
    option = package / "conf" / "system" / "fake_option.yaml"
    option.write_text("# The reference engine under another name.\nname: reference\n")
    installed(monkeypatch, entry("conf", "fake_plugin_conf"))
    cfg = compose(["system=fake_option"])
    assert cfg.system.name == "reference"
    assert option_file("system", "fake_option") == option
    assert option_file("system", "reference") == \
        ROOT / "memeval" / "conf" / "system" / "reference.yaml"


def _cli(*args: str, cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "MEMEVAL_CACHE_DIR": str(cwd / "cache"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memeval", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.bad_input
def test_an_installed_plugin_that_fails_stops_run_and_list_in_one_line(tmp_path: Path) -> None:
    """A distribution installed as pip leaves it (its dist-info), its module broken."""
    site = tmp_path / "site"
    info = site / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nbroken = broken_plugin_mod\n")
    (site / "broken_plugin_mod.py").write_text("raise ImportError('needs libfoo')\n")
    for args in (("list",), ("run", "+experiment=three_pass", "embedder=hashing",
                             f"hydra.run.dir={tmp_path / 'r'}")):
        done = _cli(*args, cwd=tmp_path, pythonpath=site)
        assert done.returncode == 2, done.stderr
        said = unwrapped(done.stderr)
        assert said.startswith("memeval: configuration error: plugin 'broken' "
                               "(broken_plugin_mod, from broken-plugin 1.0) failed to "
                               "load: ImportError: needs libfoo at ")
        assert "pip uninstall broken-plugin" in said and "Traceback" not in said
    assert not (tmp_path / "r").exists()


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin installed for real into a target folder (built from a copy, so the
    checkout gets no build files)."""
    scratch = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(EXAMPLE, scratch / "source",
                             ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    target = scratch / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(target), str(source)],
                   check=True, capture_output=True, text=True, timeout=600)
    assert (target / "memeval_plugin_example-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


# each example option, the metrics.json section naming it, and its name (the commands in
# docs/systems.md that name these are run here, with the example installed)
EXAMPLE_OPTIONS = [("system=keyword_memory", "system", "keyword_memory"),
                   ("scorer=centroid_margin", "scorer", "centroid_margin")]


@pytest.mark.slow
@pytest.mark.parametrize(("override", "section", "name"), EXAMPLE_OPTIONS)
def test_the_example_plugin_runs_three_pass(example: Path, tmp_path: Path, override: str,
                                            section: str, name: str) -> None:
    out = tmp_path / "run"
    done = _cli("run", "+experiment=three_pass", override, "embedder=hashing", "plots=false",
                "reporting.phoenix.endpoint=null", f"hydra.run.dir={out}", cwd=tmp_path,
                pythonpath=example)
    assert done.returncode == 0, done.stderr
    table = done.stdout.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("pass  recall [95% CI]"))
    assert [line.split()[0] for line in table[header + 1:header + 4]] == ["1", "2", "3"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics[section]["name"] == name
    stages = metrics["passes"][-1]["stage_counts"]
    if section == "system":  # the plugin's rules decided: no embedding score, no judge
        assert metrics["system"]["capabilities"] == ["ingest", "reset_memories", "search"]
        assert stages["length"] > 0 and stages["stored"] > 0
        assert stages["content_score"] == stages["judge"] == 0
    else:  # the reference gate, its content stage scored by the plugin's scorer
        assert metrics["system"]["name"] == "reference"
        assert stages["content_score"] > 0


@pytest.mark.slow
def test_the_example_plugin_is_listed(example: Path, tmp_path: Path) -> None:
    done = _cli("list", "components", "--json", cwd=tmp_path, pythonpath=example)
    assert done.returncode == 0, done.stderr
    groups = json.loads(done.stdout)["components"]
    system = {o["name"]: o for o in groups["system"]["options"]}["keyword_memory"]
    scorer = {o["name"]: o for o in groups["scorer"]["options"]}["centroid_margin"]
    assert system["component"] == "keyword_memory" and system["settings"]["min_chars"] == 40
    assert scorer["component"] == "centroid_margin" and scorer["settings"]["min_learned"] == 10
    assert "memeval-plugin-example" in system["description"]
    helped = _cli("run", "--help", cwd=tmp_path, pythonpath=example)  # loads plugins: one exists
    assert helped.returncode == 0, helped.stderr
    assert "keyword_memory" in helped.stdout and "centroid_margin" in helped.stdout
