"""No import cycle through the report runner's modules (issue #26).

The import graph is read from the source (every ``import``, including those inside
functions, which run as soon as the function does), and its strongly connected
components are computed; a component of more than one module is a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cqsens

PACKAGE = Path(cqsens.__file__).parent

#: The modules of ``cqsens report`` (folders and query logs).
RUNNER_MODULES = ("cqsens.batch", "cqsens.runner", "cqsens.rows", "cqsens.cli.logs",
                  "cqsens.cli.report", "cqsens.cli.rendering")


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:``: annotations only, never run."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def import_graph() -> dict[str, set[str]]:
    """Each module of cqsens and the cqsens modules it imports when it runs (anywhere in its
    body, functions included; not the imports under ``if TYPE_CHECKING:``)."""
    modules = {_module_of(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1],
                                     *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            edges.update(t for t in targets if t in modules and t != name)
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


def test_no_package_cycle_through_the_report_runner() -> None:
    """Modules collapsed to their package (``cqsens.logs.run`` -> ``cqsens.logs``)."""
    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages: dict[str, set[str]] = {}
    for module, edges in import_graph().items():
        packages.setdefault(package(module), set()).update(
            package(e) for e in edges if package(e) != package(module))
    touched = {package(m) for m in RUNNER_MODULES} | {"cqsens.logs"}
    assert [sorted(c) for c in components(packages) if c & touched] == []


def test_no_module_imports_itself_through_others() -> None:
    """No cycle of modules anywhere in cqsens (type-only imports aside)."""
    assert [sorted(c) for c in components(import_graph())] == []
