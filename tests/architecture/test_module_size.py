"""DESIGN §4: a module has at most 600 lines."""

from __future__ import annotations

from tests.architecture._imports import package_files

LIMIT = 600


def test_no_module_exceeds_the_line_limit() -> None:
    big = {
        str(p): n
        for p in package_files()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert not big, big
