"""The five memory tools: texts, laziness, defaults and the export format (policy.md §11)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.clock import FixedClock
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.store.memory import LazyMemory, memory_path
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, ToolSettings
from zeroclaw_ref.tools.memory import memory_tools, tools

NOW = datetime(2026, 3, 2, 10, 0, 0, 123456, tzinfo=UTC)
STAMP = "2026-03-02T10:00:00Z"


def _policy(ws: Path) -> SecurityPolicy:
    return SecurityPolicy(
        level="supervised",
        workspace_dir=ws,
        allowed_roots=(ws,),
        workspace_only=True,
        forbidden_paths=(),
        allowed_commands=(),
        require_approval_for_medium_risk=True,
        block_high_risk_commands=True,
        shell_env_passthrough=(),
        allowed_tools=None,
        excluded_tools=frozenset(),
    )


class Memory:
    """The five tools over a lazily opened store in a temporary data dir."""

    def __init__(self, data_dir: Path, conversation: str = "run-1") -> None:
        self.path = memory_path(data_dir, "main")
        self.lazy = LazyMemory(self.path)
        settings = ToolSettings("main", data_dir, conversation_id=conversation)
        self.tools = {t.name: t for t in memory_tools(self.lazy, settings, FixedClock(NOW))}

    def call(self, name: str, arguments: JSON) -> ToolResult:
        return self.tools[name].execute(arguments, ToolContext(cancel=CancelToken()))

    def text(self, name: str, arguments: JSON) -> str:
        result = self.call(name, arguments)
        assert result.success, result.error
        return result.output


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return Memory(tmp_path / "data")


@pytest.mark.req("POL-MEM-02", "POL-TOOL-01")
def test_building_the_tools_opens_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    built: list[Tool] = tools(_policy(tmp_path), ToolSettings("main", data))
    assert [t.name for t in built] == [
        "memory_store", "memory_recall", "memory_forget", "memory_export", "memory_purge",
    ]  # fmt: skip
    assert not data.exists()
    store = built[0].execute({"key": "k", "content": "v"}, ToolContext(cancel=CancelToken()))
    assert store.output == "Stored memory: k"
    assert (data / "memory" / "main.sqlite3").is_file()


@pytest.mark.req("POL-MEM-02", "POL-MEM-08")
def test_refused_calls_do_not_create_the_store(memory: Memory) -> None:
    memory.call("memory_purge", {})
    memory.call("memory_store", {"content": "v"})
    memory.call("memory_forget", {})
    assert not memory.lazy.opened and not memory.path.exists()


def test_the_classes_and_schemas_follow_the_catalogue(memory: Memory) -> None:
    acts = {name: t.act for name, t in memory.tools.items()}
    assert acts == {
        "memory_store": True, "memory_recall": False, "memory_forget": True,
        "memory_export": False, "memory_purge": True,
    }  # fmt: skip
    required = {name: t.parameters.get("required", []) for name, t in memory.tools.items()}
    assert required == {
        "memory_store": ["key", "content"], "memory_recall": [], "memory_forget": ["key"],
        "memory_export": [], "memory_purge": [],
    }  # fmt: skip
    for tool in memory.tools.values():
        assert tool.parameters["type"] == "object" and tool.description


@pytest.mark.req("POL-TOOL-04")
@pytest.mark.parametrize(
    ("name", "arguments", "text"),
    [
        ("memory_store", {"content": "v"}, "Missing 'key' parameter"),
        ("memory_store", {"key": 3, "content": "v"}, "Missing 'key' parameter"),
        ("memory_store", {"key": "k"}, "Missing 'content' parameter"),
        ("memory_store", None, "Missing 'key' parameter"),
        ("memory_forget", {}, "Missing 'key' parameter"),
        ("memory_forget", [], "Missing 'key' parameter"),
    ],
)
def test_missing_required_arguments(memory: Memory, name: str, arguments: JSON, text: str) -> None:
    assert memory.call(name, arguments) == ToolResult.fail(text)


@pytest.mark.req("POL-MEM-04", "POL-MEM-09", "POL-MEM-01")
def test_store_upserts_with_the_conversation_id_and_utc_timestamps(memory: Memory) -> None:
    assert memory.text("memory_store", {"key": "k", "content": "one"}) == "Stored memory: k"
    assert memory.text("memory_store", {"key": "k", "content": "two", "category": "prefs"}) == (
        "Stored memory: k"
    )
    exported = json.loads(memory.text("memory_export", {}))
    assert exported == [
        {
            "key": "k",
            "content": "two",
            "category": "prefs",
            "session_id": "run-1",
            "created_at": STAMP,
            "updated_at": STAMP,
        }
    ]


@pytest.mark.req("POL-MEM-04")
@pytest.mark.parametrize("category", [None, "", 7])
def test_the_category_defaults_to_core(memory: Memory, category: JSON) -> None:
    memory.text("memory_store", {"key": "k", "content": "v", "category": category})
    assert memory.text("memory_recall", {}) == "Found 1 memories:\n- [core] k: v"


def test_an_unknown_conversation_is_stored_as_null(tmp_path: Path) -> None:
    memory = Memory(tmp_path, conversation="")
    memory.text("memory_store", {"key": "k", "content": "v"})
    assert json.loads(memory.text("memory_export", {}))[0]["session_id"] is None


@pytest.mark.req("POL-MEM-05")
def test_recall_texts_scoring_and_order(memory: Memory) -> None:
    assert memory.text("memory_recall", {"query": "tea"}) == "No memories found."
    memory.text("memory_store", {"key": "drink", "content": "Green tea", "category": "prefs"})
    memory.text("memory_store", {"key": "snack", "content": "tea biscuits"})
    memory.text("memory_store", {"key": "colour", "content": "green"})
    assert memory.text("memory_recall", {"query": "GREEN tea"}) == (
        "Found 3 memories:\n"
        "- [prefs] drink: Green tea\n"
        "- [core] colour: green\n"
        "- [core] snack: tea biscuits"
    )
    assert memory.text("memory_recall", {"query": "coffee"}) == "No memories found."


@pytest.mark.req("POL-MEM-05")
@pytest.mark.parametrize(
    ("arguments", "count"),
    [
        ({}, 5), ({"query": "*"}, 5), ({"query": ""}, 5), ({"limit": 2}, 2), ({"limit": 0}, 1),
        ({"limit": 500}, 7), ({"limit": "3"}, 5), ({"limit": True}, 5),
        ({"query": "*", "limit": 7}, 7),
    ],
)  # fmt: skip
def test_recall_limit_defaults_to_five_within_one_to_a_hundred(
    memory: Memory, arguments: JSON, count: int
) -> None:
    for i in range(7):
        memory.text("memory_store", {"key": f"k{i}", "content": "x"})
    text = memory.text("memory_recall", arguments)
    assert text.startswith(f"Found {count} memories:\n")
    assert len(text.splitlines()) == count + 1


@pytest.mark.req("POL-MEM-06")
def test_forget_texts(memory: Memory) -> None:
    memory.text("memory_store", {"key": "k", "content": "v"})
    assert memory.text("memory_forget", {"key": "k"}) == "Forgot memory: k"
    assert memory.text("memory_forget", {"key": "k"}) == "No memory found with key: k"


@pytest.mark.req("POL-MEM-07")
def test_export_is_an_indented_json_array_in_key_order(memory: Memory) -> None:
    assert memory.text("memory_export", {}) == "[]"
    memory.text("memory_store", {"key": "b", "content": "é", "category": "prefs"})
    memory.text("memory_store", {"key": "a", "content": "1"})
    expected = (
        "[\n"
        "  {\n"
        '    "key": "a",\n'
        '    "content": "1",\n'
        '    "category": "core",\n'
        '    "session_id": "run-1",\n'
        f'    "created_at": "{STAMP}",\n'
        f'    "updated_at": "{STAMP}"\n'
        "  },\n"
        "  {\n"
        '    "key": "b",\n'
        '    "content": "é",\n'
        '    "category": "prefs",\n'
        '    "session_id": "run-1",\n'
        f'    "created_at": "{STAMP}",\n'
        f'    "updated_at": "{STAMP}"\n'
        "  }\n"
        "]"
    )
    assert memory.text("memory_export", {}) == expected
    only = json.loads(memory.text("memory_export", {"category": "prefs"}))
    assert [entry["key"] for entry in only] == ["b"]


@pytest.mark.req("POL-MEM-08")
@pytest.mark.parametrize("arguments", [{}, None, {"category": ""}, {"session_id": 4}])
def test_purge_requires_a_filter(memory: Memory, arguments: JSON) -> None:
    assert memory.call("memory_purge", arguments) == ToolResult.fail(
        "Must provide either 'category' or 'session_id' parameter"
    )


@pytest.mark.req("POL-MEM-08")
def test_purge_deletes_what_matches_every_filter(tmp_path: Path) -> None:
    first, second = Memory(tmp_path, "run-1"), Memory(tmp_path, "run-2")
    first.text("memory_store", {"key": "a", "content": "1"})
    first.text("memory_store", {"key": "b", "content": "2", "category": "prefs"})
    second.text("memory_store", {"key": "c", "content": "3"})
    assert first.text("memory_purge", {"category": "core", "session_id": "run-1"}) == (
        "Purged 1 memories"
    )
    assert first.text("memory_purge", {"session_id": "run-2"}) == "Purged 1 memories"
    assert first.text("memory_purge", {"category": "core"}) == "Purged 0 memories"
    assert first.text("memory_recall", {}) == "Found 1 memories:\n- [prefs] b: 2"
