"""Every process the package spawns escapes the stdio server's CPU pin (core/affinity.py).

A spawn is any call of `subprocess.Popen/run/call/check_call/check_output`, `os.fork*`,
`os.spawn*`, `os.exec*` or `os.posix_spawn*`; each must sit lexically inside a
`with unpinned():` block. So that no spawn hides behind another spelling, the package may not
import names out of `subprocess` (`from subprocess import Popen`) and may not use `pty` or
`multiprocessing` at all. The conformance runner is exempt: it never imports the package
(transcripts.md), runs in its own process and is never pinned.
"""

from __future__ import annotations

import ast

from tests.architecture._imports import PACKAGE, package_files

SUBPROCESS_SPAWNS = {"Popen", "run", "call", "check_call", "check_output"}
OS_SPAWN_PREFIXES = ("fork", "spawn", "exec", "posix_spawn")
EXEMPT = PACKAGE / "conformance"
# The sandbox's exec wrapper is its own program (never imported by the server), started
# unpinned by the fork server's spawn; its forks and exec happen in that single-threaded process.
CONFINE = PACKAGE / "sandbox" / "confine.py"


def _is_spawn(call: ast.Call) -> bool:
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False
    if func.value.id == "subprocess":
        return func.attr in SUBPROCESS_SPAWNS
    return func.value.id == "os" and func.attr.startswith(OS_SPAWN_PREFIXES)


def _is_unpinned_block(node: ast.AST) -> bool:
    return isinstance(node, ast.With) and any(
        isinstance(item.context_expr, ast.Call)
        and isinstance(item.context_expr.func, ast.Name)
        and item.context_expr.func.id == "unpinned"
        for item in node.items
    )


FORBIDDEN_MODULES = {"pty", "multiprocessing"}


def _hidden_spawner(node: ast.AST) -> bool:
    """An import through which a spawn would escape the check above."""
    if isinstance(node, ast.ImportFrom):
        root = (node.module or "").split(".")[0]
        return root == "subprocess" or root in FORBIDDEN_MODULES
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] in FORBIDDEN_MODULES for alias in node.names)
    return False


def _spawns_outside(tree: ast.AST) -> list[int]:
    found: list[int] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        guarded = guarded or _is_unpinned_block(node)
        if (isinstance(node, ast.Call) and _is_spawn(node) and not guarded) or _hidden_spawner(
            node
        ):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def test_every_spawn_in_the_package_is_inside_unpinned() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in package_files()
        if EXEMPT not in path.parents and path != CONFINE
        for line in _spawns_outside(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not offenders, f"spawn outside `with unpinned():` {offenders}"


def test_the_check_sees_a_bare_spawn_and_accepts_a_guarded_one() -> None:
    bare = "import subprocess\nsubprocess.Popen(['x'])\n"
    guarded = "import subprocess\nwith unpinned():\n    subprocess.run(['x'])\n"
    forked = "import os\nos.fork()\n"
    assert _spawns_outside(ast.parse(bare)) == [2]
    assert _spawns_outside(ast.parse(guarded)) == []
    assert _spawns_outside(ast.parse(forked)) == [2]
    assert _spawns_outside(ast.parse("from subprocess import Popen\n")) == [1]
    assert _spawns_outside(ast.parse("import pty\n")) == [1]
    assert _spawns_outside(ast.parse("from multiprocessing import Process\n")) == [1]
