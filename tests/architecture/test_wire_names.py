"""DESIGN §2.4: wire names are written once, ACP's in `wire/acp.py` (methods, update variants,
stop reasons, option ids) and MCP's in `wire/mcp.py` (methods, notifications, headers, `_meta`
members); a literal copy elsewhere in the package is rejected, and so is a JSON-RPC error code
written as a number outside `wire/`."""

from __future__ import annotations

import ast

import pytest

from tests.architecture._imports import edges, package_files
from zeroclaw_ref.acp.project import TOOL_KINDS, tool_kind
from zeroclaw_ref.wire import acp as wire
from zeroclaw_ref.wire import mcp as mcp_wire
from zeroclaw_ref.wire.errors import ErrorCode

PREFIXES = ("METHOD_", "UPDATE_", "STOP_", "OPTION_")
NAMES = {
    value: name
    for name, value in vars(wire).items()
    if name.startswith(PREFIXES) and isinstance(value, str)
}
# MCP's names; its SSE event types (EVENT_) and the bare `_meta` key are left out because the
# same words are also ordinary JSON members (`endpoint`) or shared with ACP (`_meta`).
MCP_PREFIXES = ("METHOD_", "NOTIFY_", "HEADER_", "META_", "SCHEMA_")
MCP_NAMES = {
    value: name
    for name, value in vars(mcp_wire).items()
    if name.startswith(MCP_PREFIXES) and isinstance(value, str)
}
# JSON-RPC reserves −32768..−32000 for protocol errors; every such code has a name in
# `wire.errors.ErrorCode` or `wire.mcp.ModernErrorCode`.
RESERVED_CODES = range(-32768, -31999)
# The oracle is a separate program that must not import the package (TX-RUN-10).
EXEMPT_DIRS = ("zeroclaw_ref/wire/", "zeroclaw_ref/conformance/")


def test_the_constant_table_is_not_empty() -> None:
    assert "session/prompt" in NAMES and "end_turn" in NAMES


def test_wire_names_are_not_repeated_as_literals_outside_wire() -> None:
    found = []
    for path in package_files():
        posix = path.as_posix()
        if any(d in posix for d in EXEMPT_DIRS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and value in NAMES:
                found.append(f"{posix}:{node.lineno} {value!r} -> wire.{NAMES[value]}")
    assert not found, "\n".join(found)


def _outside_wire() -> list[tuple[str, ast.AST]]:
    files = []
    for path in package_files():
        posix = path.as_posix()
        if not any(d in posix for d in EXEMPT_DIRS):
            files.append((posix, ast.parse(path.read_text(encoding="utf-8"))))
    return files


def test_the_mcp_table_is_not_empty() -> None:
    assert MCP_NAMES["tools/call"] == "METHOD_TOOLS_CALL"
    assert MCP_NAMES["notifications/cancelled"] == "NOTIFY_CANCELLED"
    assert MCP_NAMES["Mcp-Session-Id"] == "HEADER_SESSION_ID"


def test_mcp_wire_names_are_not_repeated_as_literals_outside_wire() -> None:
    found = []
    for posix, tree in _outside_wire():
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and value in MCP_NAMES:
                found.append(f"{posix}:{node.lineno} {value!r} -> wire.mcp.{MCP_NAMES[value]}")
    assert not found, "\n".join(found)


def _negative_int(node: ast.AST) -> int | None:
    """The value of a literal `-<int>`, else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = node.operand
        if isinstance(operand, ast.Constant) and type(operand.value) is int:
            return -operand.value
    return None


def test_error_codes_are_not_written_as_numbers_outside_wire() -> None:
    found = []
    for posix, tree in _outside_wire():
        for node in ast.walk(tree):
            code = _negative_int(node)
            if code is not None and code in RESERVED_CODES:
                found.append(f"{posix}:{node.lineno} {code}")
    assert not found, "\n".join(found)
    named = {int(c) for c in ErrorCode} | {int(c) for c in mcp_wire.ModernErrorCode}
    assert all(code in RESERVED_CODES for code in named)


def test_mcp_does_not_import_the_acp_vocabulary() -> None:
    """MCP shares the word `initialize` with ACP, not ACP's constant for it."""
    found = [
        f"{edge.module}:{edge.line}"
        for path in package_files()
        if "zeroclaw_ref/mcp/" in path.as_posix()
        for edge in edges(path)
        if edge.target.startswith("zeroclaw_ref.wire.acp")
    ]
    assert not found, "\n".join(found)


@pytest.mark.req("ACP-UPD-02")
def test_the_update_vocabulary_is_exactly_table_5_1_plus_history_trimmed() -> None:
    updates = {v for k, v in vars(wire).items() if k.startswith("UPDATE_")}
    assert updates == {
        "agent_message_chunk",
        "agent_thought_chunk",
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
    methods = {v for k, v in vars(wire).items() if k.startswith("METHOD_") and v.startswith("_")}
    assert methods == {"_zeroclaw/history_trimmed"}
    kinds = {"read", "edit", "delete", "search", "execute", "think", "fetch", "other"}
    assert {v for k, v in vars(wire).items() if k.startswith("KIND_")} == kinds
    assert set(TOOL_KINDS.values()) <= kinds and tool_kind("no-such-tool") == "other"
    statuses = {v for k, v in vars(wire).items() if k.startswith("STATUS_")}
    assert statuses == {"pending", "completed", "failed"}
