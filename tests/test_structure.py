"""The package's shape: imports point down the data flow, never in a circle, never into the CLI.

Every import statement counts, also those inside functions (deferred to keep start-up
light): a deferred import is still a dependency. ``from pkg import name`` is an edge to the
submodule ``pkg.name`` when there is one, else to ``pkg``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "junobench"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "sample" not in p.parts}


def import_graph() -> dict[str, set[str]]:
    """Module → the junobench modules it imports."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    edges.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path ``a → … → a``, or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_inside_the_package():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_nothing_outside_the_cli_imports_it():
    """Only ``python -m junobench`` (``__main__``) starts the CLI."""
    offenders = {m: sorted(e for e in edges if e == "junobench.cli" or e.startswith("junobench.cli."))
                 for m, edges in import_graph().items()
                 if not m.startswith("junobench.cli") and m != "junobench.__main__"}
    assert not {m: e for m, e in offenders.items() if e}


@pytest.mark.parametrize("package", ["data", "hub", "detection"])
def test_lower_layers_do_not_reach_up(package):
    """data is the bottom of the flow; hub and detection build on it, never on each other;
    diagnosis builds on detection, never the other way."""
    above = {"data": ("junobench.hub", "junobench.detection", "junobench.diagnosis",
                      "junobench.verify", "junobench.runtime",
                      "junobench.construct", "junobench.loader", "junobench.browse", "junobench.stats",
                      "junobench.selection"),
             "hub": ("junobench.detection", "junobench.diagnosis", "junobench.verify",
                     "junobench.runtime", "junobench.construct"),
             "detection": ("junobench.hub", "junobench.diagnosis", "junobench.verify",
                           "junobench.construct", "junobench.inspect_tasks")}[package]
    prefix = f"junobench.{package}"
    wrong = {m: sorted(e for e in edges if e.startswith(above))
             for m, edges in import_graph().items() if m == prefix or m.startswith(prefix + ".")}
    assert not {m: e for m, e in wrong.items() if e}


def unit_of(module: str) -> str:
    """The unit a module belongs to: its subpackage (``junobench.data``) or, for a
    top-level module, the module itself (``junobench.loader``)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Subpackage or top-level module → the others it imports (the package itself and
    ``__main__`` left out: they import everything by design)."""
    units: dict[str, set[str]] = {}
    skip = {"junobench", "junobench.__main__"}
    for module, edges in graph.items():
        if unit_of(module) in skip:
            continue
        targets = units.setdefault(unit_of(module), set())
        targets.update(unit_of(e) for e in edges if unit_of(e) not in skip)
    for unit, targets in units.items():
        targets.discard(unit)
    return units


def test_no_two_subpackages_import_each_other():
    """Between subpackages and top-level modules imports go one way: no unit reaches,
    directly or through others (``data`` → ``envs`` → ``loader`` → ``data``), back to itself."""
    units = unit_graph(import_graph())
    mutual = sorted(f"{a} ↔ {b}" for a, targets in units.items() for b in targets
                    if a < b and a in units.get(b, set()))
    assert not mutual, "subpackages importing each other: " + "; ".join(mutual)
    cycle = find_cycle(units)
    assert cycle is None, "import cycle between subpackages: " + " → ".join(cycle or [])


def test_the_unit_graph_sees_a_mutual_import_through_deferred_imports():
    graph = {"junobench.data.cases": {"junobench.envs.environment"},
             "junobench.envs.create": {"junobench.loader"},
             "junobench.loader": {"junobench.data.build"}, "junobench.data.build": set(),
             "junobench.envs.environment": set()}
    units = unit_graph(graph)
    assert units == {"junobench.data": {"junobench.envs"}, "junobench.envs": {"junobench.loader"},
                     "junobench.loader": {"junobench.data"}}
    assert find_cycle(units) == ["junobench.data", "junobench.envs", "junobench.loader",
                                 "junobench.data"]


def test_the_detector_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_every_subpackage_says_what_it_owns():
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 20, f"{init.parent.name}/__init__.py needs a docstring"
