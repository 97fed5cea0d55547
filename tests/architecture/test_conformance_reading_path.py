"""The oracle's reading path stays true: every module is in it, and core reads on its own.

conformance/__init__.py lists every module of core/, serve/, peers/ and tools/ with its line
count, in reading order. These tests hold the list to the tree (no module missing, none
invented, each count near the file's: within 40 lines or a quarter, so that ordinary edits
do not trip it but a rewrite does) and hold the subpackages to the boundaries their
docstrings state: core/ imports neither serve/ nor tools/, serve/ never imports tools/, and
peers/ imports neither serve/ nor tools/ (issue 17 item 2).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "zeroclaw_ref" / "conformance"
SUBPACKAGES = ("core", "serve", "peers", "tools")
ENTRY = re.compile(r"^\s+((?:core|serve|peers|tools)/\w+\.py)\s+(\d+)\s+\S", re.M)
# what each subpackage may not import (by the docstrings of conformance/ and its parts)
FORBIDDEN = {"core": {"serve", "tools"}, "serve": {"tools"}, "peers": {"serve", "tools"}}


def reading_path(doc: str) -> list[tuple[str, int]]:
    return [(m.group(1), int(m.group(2))) for m in ENTRY.finditer(doc)]


def path_problems(doc: str, root: Path) -> list[str]:
    """Modules the reading path leaves out, names twice or invents, and stale line counts."""
    listed = reading_path(doc)
    names = [name for name, _ in listed]
    actual = {f"{sub}/{p.name}" for sub in SUBPACKAGES for p in (root / sub).glob("*.py")} - {
        f"{sub}/__init__.py" for sub in SUBPACKAGES
    }
    problems = [f"{n} is not in the reading path" for n in sorted(actual - set(names))]
    problems += [f"{n} does not exist" for n in sorted(set(names) - actual)]
    problems += [f"{n} is listed twice" for n in sorted({n for n in names if names.count(n) > 1})]
    for name, count in listed:
        if name in actual:
            lines = len((root / name).read_text(encoding="utf-8").splitlines())
            if abs(lines - count) > max(40, lines // 4):
                problems.append(f"{name} is said to have {count} lines, has {lines}")
    return problems


def subpackage_imports(module: Path, root: Path) -> set[str]:
    """The conformance subpackages a module imports (relative imports resolved)."""
    parts = module.relative_to(root).with_suffix("").parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = list(parts[: len(parts) - (node.level - 1)]) if node.level > 1 else list(parts)
        target = base + (node.module.split(".") if node.module else [])
        if target and target[0] in SUBPACKAGES:
            found.add(target[0])
        elif not target:  # `from .. import core`
            found |= {a.name for a in node.names if a.name in SUBPACKAGES}
    return found


def test_the_reading_path_names_every_module_with_its_size() -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")))
    assert doc is not None
    assert path_problems(doc, PACKAGE) == []


@pytest.mark.parametrize("sub", sorted(FORBIDDEN))
def test_a_subpackage_imports_only_what_its_docstring_allows(sub: str) -> None:
    crossing = {
        p.name: sorted(subpackage_imports(p, PACKAGE) & FORBIDDEN[sub])
        for p in sorted((PACKAGE / sub).glob("*.py"))
    }
    assert {name: bad for name, bad in crossing.items() if bad} == {}


def test_the_checks_can_fail(tmp_path: Path) -> None:
    for sub in SUBPACKAGES:
        (tmp_path / sub).mkdir()
    (tmp_path / "core" / "runner.py").write_text("from ..tools.lint import x\n" * 60)
    (tmp_path / "core" / "match.py").write_text("from . import y\n")
    doc = "Path::\n\n    core/runner.py   3  the runner\n    core/gone.py  9  nothing\n"
    assert path_problems(doc, tmp_path) == [
        "core/match.py is not in the reading path",
        "core/gone.py does not exist",
        "core/runner.py is said to have 3 lines, has 60",
    ]
    assert subpackage_imports(tmp_path / "core" / "runner.py", tmp_path) == {"tools"}
    assert subpackage_imports(tmp_path / "core" / "match.py", tmp_path) == {"core"}
