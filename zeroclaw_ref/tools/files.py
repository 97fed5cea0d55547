"""The file tools `file_read`, `file_write` and `file_edit` (policy.md §4.1, §4.2, §4.4).

Every path goes through the one check of `SecurityPolicy.check_path` and is then used only
through `fsio`, which reaches the canonical path without following links, so a link swapped in
after the check fails the call instead of escaping (ACP-SEC-09).
Design: success texts quote the `path` argument as the model gave it, like the refusal texts
do, so the model recognises its own call; the canonical path never leaks into the output.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.core.limits import MAX_BLOB_BYTES
from zeroclaw_ref.policy.security import PathRefusal, SecurityPolicy
from zeroclaw_ref.tools import fsio
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, argument, missing

if TYPE_CHECKING:  # catalogue imports this module to build the universe
    from zeroclaw_ref.tools.catalogue import ToolSettings

# [POL-FS-08] the read/edit size limit, the same 10 MiB as a delivered file.
MAX_FILE_BYTES = MAX_BLOB_BYTES
NOT_UTF8 = 'Failed to read file: file is not valid UTF-8; use encoding "base64"'  # [POL-FILE-03]
# Design: file_edit has no encoding argument, so its text omits the base64 hint.
EDIT_NOT_UTF8 = "Failed to read file: file is not valid UTF-8"


def too_large(size: int) -> str:
    """[POL-FS-08] [ACP-DELIV-03]"""
    return f"File too large: {size} bytes (limit: {MAX_FILE_BYTES} bytes)"


def unsupported_encoding(value: JSON) -> ToolResult:
    """[POL-FILE-02] any encoding other than utf8/base64 (a non-string is shown as text)."""
    return ToolResult.fail(f"Unsupported encoding '{value}' (expected 'utf8' or 'base64')")


def split_lines(text: str) -> list[str]:
    """Lines as Rust's `str::lines` yields them: split on `\\n`, one trailing `\\r` dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_checked(canonical: Path) -> bytes | ToolResult:
    """Read a checked path up to the limit, or the failed result of POL-FS-08 / the OS."""
    try:
        return fsio.read_regular(canonical, MAX_FILE_BYTES)
    except fsio.TooLarge as exc:
        return ToolResult.fail(too_large(exc.size))
    except fsio.FsError as exc:
        return ToolResult.fail(f"Failed to read file: {exc.detail}")


def _count(value: JSON) -> int | None:
    """A non-negative integer argument, else None (ignored like an absent one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def format_lines(text: str, offset: JSON, limit: JSON) -> str:
    """[POL-FILE-01] [POL-FILE-02] numbered lines of the selected range with the trailer."""
    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return ""
    first = _count(offset)
    start = min(max(first, 1) - 1, total) if first is not None else 0
    count = _count(limit)
    end = total if count is None else min(start + count, total)
    if start >= end:
        return f"[No lines in range, file has {total} lines]"
    body = "\n".join(f"{start + i + 1}: {line}" for i, line in enumerate(lines[start:end]))
    if start == 0 and end == total:
        return f"{body}\n[{total} lines total]"
    return f"{body}\n[Lines {start + 1}-{end} of {total}]"


def _string_schema(description: str) -> JSONObject:
    return {"type": "string", "description": description}


@dataclass(frozen=True, slots=True)
class FileRead:
    """`file_read`: a read tool (POL-FILE-01..03, POL-FS-08)."""

    security: SecurityPolicy

    name: ClassVar[str] = "file_read"
    description: ClassVar[str] = (
        "Read a file inside the workspace. Returns numbered lines (use offset and limit "
        'for a range) or, with encoding "base64", the raw bytes in base64.'
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "path": _string_schema("File path, relative to the workspace or absolute."),
            "offset": {"type": "integer", "description": "First line to return (1-based)."},
            "limit": {"type": "integer", "description": "Number of lines to return."},
            "encoding": {"type": "string", "enum": ["utf8", "base64"]},
        },
        "required": ["path"],
    }
    act: ClassVar[bool] = False

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        raw = argument(arguments, "path")
        if not isinstance(raw, str):
            return missing("path")
        encoding = argument(arguments, "encoding")
        if encoding is None:
            encoding = "utf8"
        if encoding not in ("utf8", "base64"):
            return unsupported_encoding(encoding)
        canonical = self.security.check_path(raw)
        if isinstance(canonical, PathRefusal):
            return ToolResult.fail(canonical.reason)
        data = read_checked(canonical)
        if isinstance(data, ToolResult):
            return data
        if encoding == "base64":
            return ToolResult.ok(base64.b64encode(data).decode("ascii"))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult.fail(NOT_UTF8)
        offset = argument(arguments, "offset")
        return ToolResult.ok(format_lines(text, offset, argument(arguments, "limit")))


@dataclass(frozen=True, slots=True)
class FileWrite:
    """`file_write`: an act tool (POL-FILE-04)."""

    security: SecurityPolicy

    name: ClassVar[str] = "file_write"
    description: ClassVar[str] = (
        "Write a file inside the workspace, creating missing parent directories and "
        'replacing any existing file. With encoding "base64" the content is base64.'
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "path": _string_schema("File path, relative to the workspace or absolute."),
            "content": _string_schema("The new content of the file."),
            "encoding": {"type": "string", "enum": ["utf8", "base64"]},
        },
        "required": ["path", "content"],
    }
    act: ClassVar[bool] = True

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        raw = argument(arguments, "path")
        if not isinstance(raw, str):
            return missing("path")
        content = argument(arguments, "content")
        if not isinstance(content, str):
            return missing("content")
        data = _decode_content(content, argument(arguments, "encoding"))
        if isinstance(data, ToolResult):
            return data
        canonical = self.security.check_path(raw)
        if isinstance(canonical, PathRefusal):
            return ToolResult.fail(canonical.reason)
        try:
            # [POL-FILE-04] parents are created only along the checked canonical path.
            fsio.write_regular(canonical, data, create_parents=True)
        except fsio.FsError as exc:
            return ToolResult.fail(f"Failed to write file: {exc.detail}")
        return ToolResult.ok(f"Written {len(data)} bytes to {raw}")


def _decode_content(content: str, encoding: JSON) -> bytes | ToolResult:
    if encoding is None or encoding == "utf8":
        return content.encode("utf-8", errors="replace")
    if encoding != "base64":
        return unsupported_encoding(encoding)
    try:
        return base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError) as exc:
        return ToolResult.fail(f"Invalid base64 content: {exc}")


@dataclass(frozen=True, slots=True)
class FileEdit:
    """`file_edit`: an act tool replacing exactly one occurrence (POL-FILE-05, POL-FS-08)."""

    security: SecurityPolicy

    name: ClassVar[str] = "file_edit"
    description: ClassVar[str] = (
        "Edit a file inside the workspace by replacing the single occurrence of old_string "
        "with new_string. Fails when old_string is absent or occurs more than once."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "path": _string_schema("File path, relative to the workspace or absolute."),
            "old_string": _string_schema("Exact text to replace; must occur once."),
            "new_string": _string_schema("Replacement text."),
        },
        "required": ["path", "old_string", "new_string"],
    }
    act: ClassVar[bool] = True

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        raw = argument(arguments, "path")
        old = argument(arguments, "old_string")
        new = argument(arguments, "new_string")
        for key, value in (("path", raw), ("old_string", old), ("new_string", new)):
            if not isinstance(value, str):
                return missing(key)
        assert isinstance(raw, str) and isinstance(old, str) and isinstance(new, str)
        if old == "":
            return ToolResult.fail("old_string must not be empty")
        canonical = self.security.check_path(raw)
        if isinstance(canonical, PathRefusal):
            return ToolResult.fail(canonical.reason)
        if canonical == fsio.DEV_NULL:
            return ToolResult.fail("old_string not found in file")
        try:
            # One parent descriptor for the read and the replace: the edit lands in the
            # directory that was read, whatever happens to the path meanwhile.
            with fsio.locate(canonical) as where:
                return _edit_at(where, raw, old, new)
        except fsio.FsError as exc:
            return ToolResult.fail(f"Failed to read file: {exc.detail}")


def _edit_at(where: fsio.Located, raw: str, old: str, new: str) -> ToolResult:
    try:
        data = fsio.read_at(where, MAX_FILE_BYTES)
    except fsio.TooLarge as exc:
        return ToolResult.fail(too_large(exc.size))
    except fsio.FsError as exc:
        return ToolResult.fail(f"Failed to read file: {exc.detail}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return ToolResult.fail(EDIT_NOT_UTF8)
    matches = text.count(old)
    if matches == 0:
        return ToolResult.fail("old_string not found in file")
    if matches > 1:
        return ToolResult.fail(f"old_string matches {matches} times; must match exactly once")
    updated = text.replace(old, new, 1).encode("utf-8", errors="replace")
    try:
        fsio.replace_at(where, updated)
    except fsio.FsError as exc:
        return ToolResult.fail(f"Failed to write file: {exc.detail}")
    return ToolResult.ok(f"Edited {raw}: replaced 1 occurrence ({len(updated)} bytes)")


def tools(security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    """The file tools bound to `security`, in catalogue order (POL-TOOL-01)."""
    return [FileRead(security), FileWrite(security), FileEdit(security)]
