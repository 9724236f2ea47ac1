"""The architecture as the import graph shows it: no cycle among lbhc's modules (lazy,
in-function imports included, since they tie modules together just the same), nothing below
the command line imports it, and the planner imports no client library."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lbhc"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path) -> set[str]:
    """Every absolute import in the file, top-level or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def product_graph() -> dict[str, set[str]]:
    """Module -> the lbhc modules it imports. A package and its own submodules are not edges
    of each other: importing lbhc.cli.parser runs lbhc/cli/__init__.py by Python's rules, not
    by a choice of ours."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        edges = set()
        for name in imported_names(path):
            while name and name not in files:
                name = name.rpartition(".")[0]
            related = (
                name == module or module.startswith(name + ".") or name.startswith(module + ".")
            )
            if name and not related:
                edges.add(name)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
    ],
)
def test_the_cycle_finder_finds_cycles(
    graph: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert sorted(cycles(graph)) == expected


def test_the_product_modules_import_no_cycle() -> None:
    graph = product_graph()
    assert len(graph) > 100  # the walk saw the package
    assert cycles(graph) == []


def test_nothing_below_the_command_line_imports_it() -> None:
    """The lower layers raise typed errors; wording them for a terminal is lbhc/cli's job."""
    upward = {
        module: sorted(name for name in edges if name == "lbhc.cli" or name.startswith("lbhc.cli."))
        for module, edges in product_graph().items()
        if module != "lbhc.__main__" and not module.startswith("lbhc.cli")
    }
    assert {module: names for module, names in upward.items() if names} == {}


CLIENT_LIBRARIES = ("google", "kubernetes", "requests", "urllib3", "prometheus_client")


def test_the_planner_imports_no_client_library() -> None:
    """Snapshot in, plan out: the planner is testable without a socket or a cloud library."""
    offending = {
        module_name(path): sorted(
            name for name in imported_names(path) if name.split(".")[0] in CLIENT_LIBRARIES
        )
        for path in (PACKAGE / "planner").rglob("*.py")
    }
    assert {module: names for module, names in offending.items() if names} == {}
