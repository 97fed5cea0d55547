"""DESIGN §7.10: nobody polls with time.sleep; the runner's sleep_ms frame is the exception."""

from __future__ import annotations

import ast

from tests.architecture._imports import package_files

ALLOWED_FILES = {"zeroclaw_ref/conformance/core/runner.py"}


def test_time_sleep_appears_only_in_the_runners_sleep_frame() -> None:
    found = []
    for path in package_files():
        rel = path.as_posix().split("/work/main/")[-1]
        rel = rel[rel.index("zeroclaw_ref/") :]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            is_sleep = (
                isinstance(node, ast.Attribute)
                and node.attr == "sleep"
                and isinstance(node.value, ast.Name)
                and node.value.id == "time"
            ) or (
                isinstance(node, ast.ImportFrom)
                and node.module == "time"
                and any(a.name == "sleep" for a in node.names)
            )
            if is_sleep and rel not in ALLOWED_FILES:
                found.append(f"{rel}:{node.lineno}")
    assert not found, found
