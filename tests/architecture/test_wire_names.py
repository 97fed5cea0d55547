"""DESIGN §2.4: method names, update variants, stop reasons and option ids are written once,
in `wire/acp.py`; a literal copy elsewhere in the package is rejected."""

from __future__ import annotations

import ast

import pytest

from tests.architecture._imports import package_files
from zeroclaw_ref.acp.project import TOOL_KINDS, tool_kind
from zeroclaw_ref.wire import acp as wire

PREFIXES = ("METHOD_", "UPDATE_", "STOP_", "OPTION_")
NAMES = {
    value: name
    for name, value in vars(wire).items()
    if name.startswith(PREFIXES) and isinstance(value, str)
}
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
