"""Parse every module of the package and list its imports (absolute, relative, local)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "zeroclaw_ref"


@dataclass(frozen=True)
class Edge:
    module: str  # importing module, dotted
    target: str  # imported module, dotted (absolute)
    line: int


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def edges(path: Path) -> list[Edge]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: list[Edge] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(Edge(name, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append(Edge(name, target, node.lineno))
            # `from zeroclaw_ref import core` names a subpackage.
            for alias in node.names:
                found.append(Edge(name, f"{target}.{alias.name}", node.lineno))
    return found
