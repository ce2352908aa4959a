"""No import cycle between modules, nor between packages (issue #26).

The import graph is read from the source (every ``import``, including those inside
functions, which run as soon as the function does), and its strongly connected
components are computed; a component of more than one module is a cycle.  The package
graph collapses each module to its package (a top-level module such as ``analysis.py``
is its own node) and counts the imports that run when a module is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import cqsens

PACKAGE = Path(cqsens.__file__).parent

#: The modules of ``cqsens report`` (folders and query logs).
RUNNER_MODULES = ("cqsens.batch", "cqsens.runner", "cqsens.rows", "cqsens.cli.logs",
                  "cqsens.cli.report", "cqsens.cli.rendering")


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each import node of ``tree`` and whether it lies inside a function (it runs when the
    function does, not when the module is imported); not the imports under ``if
    TYPE_CHECKING:`` (annotations only, never run).  One walk of the tree."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, in_function
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef
                                          | ast.Lambda)
        type_only = isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
            and node.test.id == "TYPE_CHECKING"
        stack.extend((child, inner) for child in ast.iter_child_nodes(node)
                     if not (type_only and child in node.body))


def import_graph(*, module_level: bool = False) -> dict[str, set[str]]:
    """Each module of cqsens and the cqsens modules it imports when it runs (anywhere in its
    body, functions included; not the imports under ``if TYPE_CHECKING:``); with
    ``module_level``, only the imports that run when the module is imported.

    The source is parsed once per test process (:func:`_edges`); each call returns a
    fresh graph, which the caller may change."""
    return {name: {target for target, in_function in edges
                   if not (module_level and in_function)}
            for name, edges in _edges().items()}


@cache
def _edges() -> dict[str, set[tuple[str, bool]]]:
    """Each module of cqsens: the cqsens modules it imports, each with whether the import
    lies inside a function."""
    modules = {_module_of(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[tuple[str, bool]]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[tuple[str, bool]] = set()
        for node, in_function in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1],
                                     *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            edges.update((t, in_function) for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def components(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of ``graph`` with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part: set[str] = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.add(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(part)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_a_known_edge() -> None:
    graph = import_graph()
    assert "cqsens.cli.logs" in graph["cqsens.cli.report"]
    assert "cqsens.cli.rendering" in graph["cqsens.cli.logs"]
    assert components({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]


def test_no_cycle_through_the_report_runner() -> None:
    graph = import_graph()
    touched = {m for m in RUNNER_MODULES if m in graph} | {m for m in graph
                                                           if m.startswith("cqsens.logs")}
    cycles = [sorted(c) for c in components(graph) if c & touched]
    assert cycles == []


def _package(module: str) -> str:
    """The node of ``module`` in the package graph: its package under cqsens
    (``cqsens.logs.run`` -> ``cqsens.logs``); a top-level module is its own node."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` with its modules collapsed to their packages (:func:`_package`)."""
    packages: dict[str, set[str]] = {}
    for module, edges in graph.items():
        packages.setdefault(_package(module), set()).update(
            _package(e) for e in edges if _package(e) != _package(module))
    return packages


def test_no_package_cycle_through_the_report_runner() -> None:
    """Modules collapsed to their package (``cqsens.logs.run`` -> ``cqsens.logs``)."""
    packages = package_graph(import_graph())
    touched = {_package(m) for m in RUNNER_MODULES} | {"cqsens.logs"}
    assert [sorted(c) for c in components(packages) if c & touched] == []


def test_the_module_level_graph_leaves_out_function_imports() -> None:
    """``cqsens analyze --db`` imports ``observed_advice`` when it runs, not on import."""
    assert "cqsens.observed_advice" in import_graph()["cqsens.cli.analyze"]
    assert "cqsens.observed_advice" not in import_graph(module_level=True)["cqsens.cli.analyze"]
    assert "cqsens.releasing.run" in import_graph(module_level=True)["cqsens.releasing"]


def test_no_package_cycle() -> None:
    """No cycle of packages through the imports that run on import (issue #26): ``release/``
    holds the mechanisms and imports neither ``analysis`` nor ``report`` (the orchestration of
    ``cqsens release`` is ``releasing/``), and ``analysis.py`` never imports ``report``, not
    even inside a method: ``report`` registers its renderers with it."""
    packages = package_graph(import_graph(module_level=True))
    assert [sorted(c) for c in components(packages)] == []
    assert not packages["cqsens.release"] & {"cqsens.analysis", "cqsens.report",
                                             "cqsens.releasing", "cqsens.pipeline"}
    assert "cqsens.report" not in packages["cqsens.analysis"]
    assert "cqsens.report" not in package_graph(import_graph())["cqsens.analysis"]


def test_no_module_imports_itself_through_others() -> None:
    """No cycle of modules anywhere in cqsens (type-only imports aside)."""
    assert [sorted(c) for c in components(import_graph())] == []
