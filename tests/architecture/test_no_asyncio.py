"""DESIGN §2.1: threads and blocking calls only — no async def, no event-loop libraries."""

from __future__ import annotations

import ast

from tests.architecture._imports import edges, package_files


def test_no_async_def_anywhere_in_the_package() -> None:
    found = []
    for path in package_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncFor | ast.AsyncWith):
                found.append(f"{path}:{node.lineno}")
    assert not found, found


def test_no_event_loop_library_is_imported() -> None:
    found = [
        f"{e.module}:{e.line} {e.target}"
        for path in package_files()
        for e in edges(path)
        if e.target.split(".")[0] in {"asyncio", "anyio", "trio"}
    ]
    assert not found, found
