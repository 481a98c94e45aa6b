"""memeval's modules import only downwards: no import circle, and each layer below the next.

The graph is read from the source with `ast`, so an import inside a function counts as much as
one at the top of a module: a lazy import still ties the two layers together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import memeval

PACKAGE = Path(memeval.__file__).parent

# Lowest first: a module may import its own layer and those before it, never one after it.
LAYERS: list[tuple[str, set[str]]] = [
    ("ground floor", {"", "conf", "entry", "paths", "registry", "threads"}),
    ("utilities", {"utils"}),
    ("backends", {"backends"}),  # embedders and judges: the I/O to models
    ("memory quality", {"quality"}),  # a sibling of the write-gate engine: no imports between
    ("write-gate engine", {"engine"}),
    ("data", {"data"}),  # loaders build engine types (records, redaction, judge labels)
    ("metrics", {"metrics"}),
    ("systems", {"systems"}),
    ("results", {"results"}),
    ("reporting", {"reporting"}),
    ("experiments", {"experiments"}),
    ("commands", {"__main__", "api", "bench", "cache_warm_up", "catalogue", "cli", "components",
                  "config", "log_redaction", "plugins", "regression", "run_cost", "runner",
                  "serve", "sweep", "user_errors"}),
]

# (importer, imported) -> why it may point upwards. Keep this as short as possible.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["memeval", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module an import loads: the name itself, or the nearest package above it."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
              modules: dict[str, Path]) -> set[str | None]:
    if isinstance(node, ast.Import):
        return {_resolve(alias.name, modules) for alias in node.names
                if alias.name.split(".")[0] == "memeval"}
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
    if base.split(".")[0] != "memeval":
        return set()
    # `from memeval.utils import redact` loads the submodule memeval.utils.redact
    return {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
            else _resolve(base, modules) for alias in node.names}


def import_graph() -> dict[str, set[str]]:
    """Each memeval module -> the memeval modules it imports, anywhere in its source."""
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                targets |= _imported(node, module, is_package, modules)
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def layer_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for index, (_, members) in enumerate(LAYERS):
        if top in members:
            return index
    raise AssertionError(f"memeval.{top} has no layer: add it to LAYERS in {__file__}")


def upward_edges(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, targets in graph.items() for b in targets if layer_of(b) > layer_of(a)}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path (first module repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_graph_sees_imports_made_inside_functions() -> None:
    graph = import_graph()
    # the run command imports the runner only inside `main`, so its --help starts fast
    assert "memeval.runner" in graph["memeval.cli.run"]
    assert "memeval.engine.gate.threshold" in graph["memeval.engine.gate.content_score"]
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300


def test_cycle_finder_reports_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_module_imports_itself_back_through_others() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_every_module_belongs_to_a_layer() -> None:
    for module in import_graph():
        layer_of(module)


def test_imports_point_down_the_layers() -> None:
    upward = upward_edges(import_graph())
    unexplained = sorted(upward - EXCEPTIONS.keys())
    assert not unexplained, "imports pointing up a layer:\n" + "\n".join(
        f"{a} -> {b} ({LAYERS[layer_of(a)][0]} below {LAYERS[layer_of(b)][0]})"
        for a, b in unexplained)
    stale = sorted(EXCEPTIONS.keys() - upward)
    assert not stale, f"listed in EXCEPTIONS but no longer imported upwards: {stale}"


def test_the_write_gate_and_memory_quality_engines_are_siblings() -> None:
    """Layers let the engine import quality/; siblings must not, so either can be read alone."""
    graph = import_graph()
    crossing = sorted((a, b) for a, targets in graph.items() for b in targets
                      if {a.split(".")[1], b.split(".")[1]} == {"engine", "quality"})
    assert not crossing, f"the write-gate and memory-quality engines import each other: {crossing}"
