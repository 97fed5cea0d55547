"""Requirement IDs cited outside the scenarios: tests and code tags of the repository.

``coverage`` holds every cited ID to the manifest, ``fixtures/requirements.json``. Scenario
headers are read by coverage itself; this module finds the other two kinds of citation in the
repository that holds the corpus (the parent of ``fixtures/``):

* ``pytest.mark.req("ID", ...)`` (any ``….req(...)`` call with string arguments) in the
  Python files of ``tests/`` and ``bench/``;
* ``[ID]`` tags in the Python files of ``zeroclaw_ref/``, ``tests/``, ``bench/`` and ``tools/``.

An ID is ``<PREFIX>-<AREA>-<NN>`` whose prefix is one the corpus knows: those of
``spec-index.json``, ``TX`` (this contract) and the prefixes of the manifest's own IDs (the
project's ``ZC``). Directories that do not exist are skipped, so an installed corpus, which
ships without tests or sources, is judged on its scenarios alone.

The numbered error texts of mcp.md §16 (``MCP-ERR-02`` onwards) are a catalogue, not
requirements ([TX-COVER-02]): citing one names the text a test pins. They are returned apart
so that coverage can check them against the catalogue instead of the manifest.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

MARK_DIRS = ("tests", "bench")
TAG_DIRS = ("zeroclaw_ref", "tests", "bench", "tools")
CATALOGUE = re.compile(r"MCP-ERR-(?!01$)\d{2,3}")


@dataclass(slots=True)
class Cited:
    """Where each ID is cited: ID → sorted places (``path:line (how)``)."""

    requirements: dict[str, list[str]] = field(default_factory=dict)
    catalogue: dict[str, list[str]] = field(default_factory=dict)

    def add(self, rid: str, place: str) -> None:
        table = self.catalogue if CATALOGUE.fullmatch(rid) else self.requirements
        table.setdefault(rid, []).append(place)


def id_pattern(prefixes: Iterable[str]) -> re.Pattern[str]:
    """The form of a requirement ID with one of these prefixes."""
    names = "|".join(sorted({re.escape(p) for p in prefixes}, key=len, reverse=True))
    return re.compile(rf"(?:{names})-[A-Z0-9]+-\d{{2,3}}")


def scan(root: Path, prefixes: Iterable[str]) -> Cited:
    """Every ID cited by a test mark or a code tag under ``root``."""
    form = id_pattern(prefixes)
    tag = re.compile(rf"\[({form.pattern})\]")
    cited = Cited()
    for folder in TAG_DIRS:
        for path in _python_files(root / folder):
            text = _read(path)
            rel = path.relative_to(root).as_posix()
            for match in tag.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                cited.add(match.group(1), f"{rel}:{line} (tag)")
            if folder in MARK_DIRS and ".req(" in text:
                for rid, line in _marks(text, form):
                    cited.add(rid, f"{rel}:{line} (mark)")
    for table in (cited.requirements, cited.catalogue):
        for places in table.values():
            places.sort()
    return cited


def _python_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _marks(text: str, form: re.Pattern[str]) -> list[tuple[str, int]]:
    """String arguments of ``….req(...)`` calls that have the form of an ID."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "req"
        ):
            continue
        found += [
            (arg.value, arg.lineno)
            for arg in node.args
            if isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
            and form.fullmatch(arg.value)
        ]
    return found
