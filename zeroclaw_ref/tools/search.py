"""The search tools `glob_search` and `content_search` (policy.md §4.1, §4.2, POL-FILE-06..08).

Goals: neither tool lists or reads anything outside the allowed roots, whatever the pattern.
Plan: directories are walked by descriptor from the canonical start without following links
(`fsio.open_listing`), so `**` never crosses a link; a link met on the way is reported only
when its own path passes `SecurityPolicy.check_path` and it names a regular file, and every
candidate is decided again with `SecurityPolicy.decide` (a `forbidden_paths` entry below the
start at level `full` stays hidden).
Design: linked directories are never descended, inside the roots or not; that also makes the
walk loop-free.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, ClassVar

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.policy.security import NUL_REFUSAL, PathRefusal, SecurityPolicy, is_within
from zeroclaw_ref.tools import fsio
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, argument, missing
from zeroclaw_ref.tools.files import MAX_FILE_BYTES, split_lines

if TYPE_CHECKING:  # catalogue imports this module to build the universe
    from zeroclaw_ref.tools.catalogue import ToolSettings

MAX_GLOB_RESULTS = 1000  # [POL-FILE-06]
MAX_RESULT_LINES = 1000  # [POL-FILE-08]
MAX_OUTPUT_BYTES = 1_048_576  # [POL-FILE-08]
BINARY_PROBE_BYTES = 8192  # [POL-FILE-07]
# Design: a bound on nesting keeps the recursive walk (one descriptor per level) finite.
MAX_DEPTH = 128
OUTPUT_MODES = ("content", "files_with_matches", "count")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file found by a walk: its display path and the canonical path to read it through."""

    shown: str
    canonical: Path


@dataclass(frozen=True, slots=True)
class _Walker:
    """Collects regular files below a canonical directory without following links."""

    security: SecurityPolicy
    roots: tuple[Path, ...]

    def allowed(self, canonical: Path) -> bool:
        if any(is_within(canonical, root) for root in self.roots):
            return True
        return not isinstance(self.security.decide(canonical, str(canonical)), PathRefusal)

    def holds_root(self, directory: Path) -> bool:
        return any(is_within(root, directory) for root in self.roots)

    def entries(self, dir_fd: int) -> list[os.DirEntry[str]]:
        listing = fsio.reopen_for_listing(dir_fd)
        try:
            with os.scandir(listing) as found:
                return sorted(found, key=lambda entry: entry.name)
        finally:
            os.close(listing)

    def linked_file(self, lexical: Path) -> Path | None:
        """[ACP-SEC-09] a link is used only when its own path passes the check."""
        canonical = self.security.check_path(str(lexical))
        if isinstance(canonical, PathRefusal) or not self.allowed(canonical):
            return None
        return canonical if canonical.is_file() else None

    def child(self, dir_fd: int, entry: os.DirEntry[str], canonical: Path) -> int | None:
        """A descriptor for a real subdirectory worth entering, else None."""
        if not entry.is_dir(follow_symlinks=False) or len(canonical.parts) > MAX_DEPTH:
            return None
        if not self.allowed(canonical) and not self.holds_root(canonical):
            return None
        try:
            return fsio.open_listing(dir_fd, entry.name)
        except fsio.FsError:
            return None


def _regular(entry: os.DirEntry[str], walker: _Walker, canonical: Path) -> Path | None:
    if entry.is_symlink():
        return walker.linked_file(canonical)
    if entry.is_file(follow_symlinks=False) and walker.allowed(canonical):
        return canonical
    return None


# ---------------------------------------------------------------------------------- glob_search


def _hidden_ok(name: str, part: str) -> bool:
    # Python glob: wildcards never match a leading dot unless the pattern spells it.
    return not name.startswith(".") or part.startswith(".")


def _glob(
    walker: _Walker, dir_fd: int, here: Path, rel: PurePosixPath, parts: tuple[str, ...]
) -> Iterator[Candidate]:
    """[POL-FILE-06] Python glob semantics over a no-follow walk; `**` spans directories."""
    head, rest = parts[0], parts[1:]
    recursive = head == "**"
    if recursive and rest:
        yield from _glob(walker, dir_fd, here, rel, rest)  # `**` matching no directory
    for entry in walker.entries(dir_fd):
        name = entry.name
        if recursive and name.startswith("."):
            continue
        if not recursive and not (fnmatch.fnmatchcase(name, head) and _hidden_ok(name, head)):
            continue
        path, shown = here / name, rel / name
        if not rest:
            found = _regular(entry, walker, path)
            if found is not None:
                yield Candidate(shown.as_posix(), found)
            if not recursive:
                continue
        sub = walker.child(dir_fd, entry, path)
        if sub is None:
            continue
        try:
            yield from _glob(walker, sub, path, shown, parts if recursive else rest)
        finally:
            os.close(sub)


def _pattern_parts(pattern: str) -> tuple[str, ...]:
    return tuple(p for p in pattern.split("/") if p not in ("", "."))


@dataclass(frozen=True, slots=True)
class GlobSearch:
    """`glob_search`: a read tool listing workspace files by glob (POL-FILE-06)."""

    security: SecurityPolicy

    name: ClassVar[str] = "glob_search"
    description: ClassVar[str] = (
        "List workspace files matching a glob pattern relative to the workspace "
        "(for example src/**/*.py). Returns workspace-relative paths, sorted."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {"pattern": {"type": "string", "description": "Relative glob."}},
        "required": ["pattern"],
    }
    act: ClassVar[bool] = False

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        pattern = argument(arguments, "pattern")
        if not isinstance(pattern, str):
            return missing("pattern")
        if "\x00" in pattern:
            return ToolResult.fail(NUL_REFUSAL)
        if pattern.startswith(("/", "\\")) or Path(pattern).is_absolute():
            return ToolResult.fail("Absolute paths are not allowed. Use a relative glob pattern.")
        if ".." in re.split(r"[/\\]", pattern):
            return ToolResult.fail(f"Path not allowed by security policy: {pattern}")
        found = sorted({c.shown for c in self._matches(pattern)})
        if not found:
            return ToolResult.ok(f"No files matching pattern '{pattern}' found in workspace.")
        text = "\n".join(found[:MAX_GLOB_RESULTS])
        if len(found) > MAX_GLOB_RESULTS:
            text += (
                f"\n[Results truncated: showing first {MAX_GLOB_RESULTS} of {len(found)} matches]"
            )
        return ToolResult.ok(text)

    def _matches(self, pattern: str) -> list[Candidate]:
        parts = _pattern_parts(pattern)
        workspace = self.security.check_path(".")
        # A trailing `/` matches directories only, as in Python glob: never a regular file.
        if not parts or pattern.endswith("/") or isinstance(workspace, PathRefusal):
            return []
        walker = _Walker(self.security, self.security.canonical_roots())
        try:
            with fsio.walk_dir(workspace) as dir_fd:
                return list(_glob(walker, dir_fd, workspace, PurePosixPath(), parts))
        except fsio.FsError:
            return []


# ------------------------------------------------------------------------------- content_search


def _collect(walker: _Walker, dir_fd: int, here: Path) -> Iterator[Path]:
    """Every readable regular file below `here` (lexical path), links only when allowed."""
    for entry in walker.entries(dir_fd):
        path = here / entry.name
        if _regular(entry, walker, path) is not None:
            yield path
        sub = walker.child(dir_fd, entry, path)
        if sub is None:
            continue
        try:
            yield from _collect(walker, sub, path)
        finally:
            os.close(sub)


@dataclass
class _Sink:
    """[POL-FILE-08] the bounded result: at most 1000 lines and 1 MiB of text."""

    lines: list[str]
    size: int = 0
    full: bool = False

    def add(self, line: str) -> bool:
        cost = len(line.encode("utf-8", errors="replace")) + (1 if self.lines else 0)
        if self.full or len(self.lines) >= MAX_RESULT_LINES or self.size + cost > MAX_OUTPUT_BYTES:
            self.full = True
            return False
        self.lines.append(line)
        self.size += cost
        return True


@dataclass(frozen=True, slots=True)
class _Query:
    regex: re.Pattern[str]
    mode: str
    before: int
    after: int

    def render(self, shown: str, lines: list[str], sink: _Sink) -> None:
        hits = [i for i, line in enumerate(lines) if self.regex.search(line)]
        if not hits:
            return
        if self.mode == "files_with_matches":
            sink.add(shown)
            return
        if self.mode == "count":
            sink.add(f"{shown}:{len(hits)}")
            return
        matched = set(hits)
        shown_lines: set[int] = set()
        for i in hits:
            shown_lines.update(range(max(0, i - self.before), min(len(lines), i + self.after + 1)))
        for i in sorted(shown_lines):
            mark = ":" if i in matched else "-"
            if not sink.add(f"{shown}{mark}{i + 1}{mark}{lines[i]}"):
                return


def _non_negative(value: JSON) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(value, 0)


def _query(arguments: JSON, pattern: str) -> _Query | ToolResult:
    mode = argument(arguments, "output_mode")
    mode = "content" if mode is None else mode
    if not isinstance(mode, str) or mode not in OUTPUT_MODES:
        # Design: the spec gives no text for an unknown mode; this one names the choices.
        return ToolResult.fail(
            f"Invalid output_mode '{mode}' (expected 'content', 'files_with_matches' or 'count')"
        )
    sensitive = argument(arguments, "case_sensitive")
    flags = re.IGNORECASE if sensitive is False else 0
    try:
        regex = re.compile(pattern, flags)
    except re.error as exc:
        return ToolResult.fail(f"Invalid regex pattern: {exc}")
    before = _non_negative(argument(arguments, "context_before"))
    after = _non_negative(argument(arguments, "context_after"))
    return _Query(regex, mode, before, after)


def _readable_text(canonical: Path) -> list[str] | None:
    """[POL-FILE-07] the file's lines, or None for a file skipped as large, binary or gone."""
    try:
        data = fsio.read_regular(canonical, MAX_FILE_BYTES)
    except fsio.FsError:
        return None
    if b"\x00" in data[:BINARY_PROBE_BYTES]:
        return None
    return split_lines(data.decode("utf-8", errors="replace"))


@dataclass(frozen=True, slots=True)
class ContentSearch:
    """`content_search`: a read tool searching file contents by regex (POL-FILE-07/08)."""

    security: SecurityPolicy

    name: ClassVar[str] = "content_search"
    description: ClassVar[str] = (
        "Search file contents with a Python regular expression under a path (default the "
        "workspace). output_mode is content, files_with_matches or count."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Python regular expression."},
            "path": {"type": "string", "description": "File or directory to search."},
            "output_mode": {"type": "string", "enum": list(OUTPUT_MODES)},
            "include": {"type": "string", "description": "Glob filtering file names."},
            "case_sensitive": {"type": "boolean"},
            "context_before": {"type": "integer", "minimum": 0},
            "context_after": {"type": "integer", "minimum": 0},
        },
        "required": ["pattern"],
    }
    act: ClassVar[bool] = False

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        pattern = argument(arguments, "pattern")
        if not isinstance(pattern, str):
            return missing("pattern")
        query = _query(arguments, pattern)
        if isinstance(query, ToolResult):
            return query
        raw = argument(arguments, "path")
        canonical = self.security.check_path(raw if isinstance(raw, str) else ".")
        if isinstance(canonical, PathRefusal):
            return ToolResult.fail(canonical.reason)
        include = argument(arguments, "include")
        sink = _Sink([])
        for shown, path in self._files(canonical, include if isinstance(include, str) else None):
            lines = _readable_text(path)
            if lines is not None:
                query.render(shown, lines, sink)
            if sink.full:
                break
        return ToolResult.ok("\n".join(sink.lines) if sink.lines else "No matches found.")

    def _files(self, start: Path, include: str | None) -> list[tuple[str, Path]]:
        """The files to search in sorted display order, each read again by canonical path."""
        walker = _Walker(self.security, self.security.canonical_roots())
        try:
            with fsio.walk_dir(start) as dir_fd:
                found = [(self._shown(p), p) for p in _collect(walker, dir_fd, start)]
        except fsio.FsError:
            # Not a directory: the checked path itself is the one file to search.
            found = [(self._shown(start), start)]
        picked = sorted((shown, path) for shown, path in found if _included(shown, include))
        # A linked file is read through its own checked target, never through the link.
        resolved = [(shown, self.security.check_path(str(path))) for shown, path in picked]
        return [(shown, path) for shown, path in resolved if isinstance(path, Path)]

    def _shown(self, path: Path) -> str:
        """Workspace-relative POSIX text inside the workspace, the absolute path elsewhere."""
        workspace = self.security.check_path(".")
        if isinstance(workspace, Path) and is_within(path, workspace) and path != workspace:
            return path.relative_to(workspace).as_posix()
        return path.as_posix()


def _included(shown: str, include: str | None) -> bool:
    if include is None:
        return True
    base = shown.rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(base, include) or fnmatch.fnmatchcase(shown, include)


def tools(security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    """The search tools bound to `security`, in catalogue order (POL-TOOL-01)."""
    return [GlobSearch(security), ContentSearch(security)]
