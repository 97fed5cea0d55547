"""No two modules of the package import each other, not even through a function-level import.

A lazy import hides a cycle from start-up but not from a reader: `config_cmd` started the
curses editor while the editor imported `Streams` back from `config_cmd` (issue 17). Imports
under `if TYPE_CHECKING:` are for the type checker only and are left out; so is a module's
import of its own parent package.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.architecture._imports import edges, module_name, package_files


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in ast.walk(node):
                if isinstance(sub, ast.stmt):
                    lines.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return lines


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports at run time, lazily or not."""
    modules = {module_name(path): path for path in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        skip = _type_checking_lines(ast.parse(path.read_text(encoding="utf-8")))
        graph[name] = {
            edge.target
            for edge in edges(path)
            if edge.target in modules
            and edge.target != name
            and not name.startswith(edge.target + ".")
            and edge.line not in skip
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                target = pending.pop()
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, sorted(graph[target])))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert cycles(import_graph(package_files())) == []


def test_the_cycle_finder_can_find_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
