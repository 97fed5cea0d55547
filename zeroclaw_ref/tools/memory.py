"""The five memory tools over one agent's long-term memory (policy.md §4.1, §11).

Implements POL-MEM-04 to POL-MEM-08 and the lazy opening behind POL-MEM-02: the tools of one
execution share a `LazyMemory`, so the SQLite file is created by the first memory call, never
by building the universe. On the ACP surface the assembly removes these tools before any call,
so the store is never opened there.
"""

from __future__ import annotations

import json
from typing import ClassVar

from zeroclaw_ref.core.clock import Clock, SystemClock, rfc3339
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.store.memory import LazyMemory, MemoryEntry, MemoryStore, memory_path
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, ToolSettings, argument, missing

DEFAULT_CATEGORY = "core"  # [POL-MEM-04]
DEFAULT_LIMIT, MAX_LIMIT = 5, 100  # [POL-MEM-05]
PURGE_FILTER_TEXT = "Must provide either 'category' or 'session_id' parameter"  # [POL-MEM-08]


def _optional_text(arguments: JSON, key: str) -> str | None:
    """A non-empty string argument, or None when absent, empty or of another type."""
    # Design: the spec gives no text for a wrongly typed optional argument; treating it as
    # absent keeps the defaults of POL-MEM-04/05 and the purge guard of POL-MEM-08 in force.
    value = argument(arguments, key)
    return value if isinstance(value, str) and value else None


def _limit(arguments: JSON) -> int:
    """[POL-MEM-05] `limit`, default 5, brought into 1–100."""
    value = argument(arguments, "limit")
    # Design: out-of-range values are clamped rather than refused; bool is not a count.
    if not isinstance(value, int) or isinstance(value, bool):
        return DEFAULT_LIMIT
    return min(max(value, 1), MAX_LIMIT)


def _entry_object(entry: MemoryEntry) -> JSONObject:
    """[POL-MEM-07] the six columns in table order."""
    return {
        "key": entry.key,
        "content": entry.content,
        "category": entry.category,
        "session_id": entry.session_id,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
    }


def recall_text(entries: list[MemoryEntry]) -> str:
    """[POL-MEM-05] the model-facing text of a recall."""
    if not entries:
        return "No memories found."
    lines = [f"- [{e.category}] {e.key}: {e.content}" for e in entries]
    return "\n".join([f"Found {len(entries)} memories:", *lines])


class _MemoryTool:
    """Shared plumbing: the lazily opened store, the conversation id and the clock.

    A `StoreError` (the file cannot be opened or written) is not caught: the engine reports
    it as `Error executing <tool>: <detail>` (POL-TOOL-03), and the next call retries.
    """

    # each subclass states its spec (tools/base.py `Tool`)
    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[JSONObject]
    act: ClassVar[bool]

    def __init__(self, memory: LazyMemory, settings: ToolSettings, clock: Clock) -> None:
        self.memory = memory
        self.settings = settings
        self.clock = clock

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        """Run the call against the store, which is opened now if this is the first use."""
        return self._call(arguments)

    def _call(self, arguments: JSON) -> ToolResult:
        raise NotImplementedError

    def _store(self) -> MemoryStore:
        return self.memory.get()


class MemoryStoreTool(_MemoryTool):
    """`memory_store`: insert or replace one entry by key."""

    name: ClassVar[str] = "memory_store"
    description: ClassVar[str] = (
        "Save a fact or note to long-term memory under a key; storing an existing key "
        "replaces its entry. category defaults to core."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "description": "A unique key for the entry."},
            "content": {"type": "string", "description": "The text to remember."},
            "category": {"type": "string", "description": "A category (default core)."},
        },
        "required": ["key", "content"],
    }
    act: ClassVar[bool] = True

    def _call(self, arguments: JSON) -> ToolResult:
        key, content = argument(arguments, "key"), argument(arguments, "content")
        if not isinstance(key, str):
            return missing("key")  # [POL-TOOL-04]
        if not isinstance(content, str):
            return missing("content")
        category = _optional_text(arguments, "category") or DEFAULT_CATEGORY
        # [POL-MEM-09] the conversation id; Design: none known (empty) is stored as NULL.
        session = self.settings.conversation_id or None
        now = rfc3339(self.clock.now())
        self._store().store(key, content, category, session, now)
        return ToolResult.ok(f"Stored memory: {key}")  # [POL-MEM-04]


class MemoryRecallTool(_MemoryTool):
    """`memory_recall`: keyword recall, or the newest entries without a query."""

    name: ClassVar[str] = "memory_recall"
    description: ClassVar[str] = (
        "Search long-term memory by keywords (each word matched in keys and contents); "
        "omit query or pass * for the most recently updated entries."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Keywords to look for."},
            "limit": {
                "type": "integer",
                "description": "At most this many entries (default 5).",
                "minimum": 1,
                "maximum": MAX_LIMIT,
            },
        },
    }
    act: ClassVar[bool] = False

    def _call(self, arguments: JSON) -> ToolResult:
        query = _optional_text(arguments, "query")
        return ToolResult.ok(recall_text(self._store().recall(query, _limit(arguments))))


class MemoryForgetTool(_MemoryTool):
    """`memory_forget`: delete one entry by key."""

    name: ClassVar[str] = "memory_forget"
    description: ClassVar[str] = "Delete the long-term memory entry with the given key."
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {"key": {"type": "string", "description": "The key to delete."}},
        "required": ["key"],
    }
    act: ClassVar[bool] = True

    def _call(self, arguments: JSON) -> ToolResult:
        key = argument(arguments, "key")
        if not isinstance(key, str):
            return missing("key")  # [POL-TOOL-04]
        if self._store().forget(key):
            return ToolResult.ok(f"Forgot memory: {key}")  # [POL-MEM-06]
        return ToolResult.ok(f"No memory found with key: {key}")


class MemoryExportTool(_MemoryTool):
    """`memory_export`: every entry (or one category's) as a JSON array."""

    name: ClassVar[str] = "memory_export"
    description: ClassVar[str] = (
        "Export long-term memory as a JSON array, optionally only one category."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "category": {"type": "string", "description": "Only entries of this category."}
        },
    }
    act: ClassVar[bool] = False

    def _call(self, arguments: JSON) -> ToolResult:
        entries = self._store().export(_optional_text(arguments, "category"))
        # [POL-MEM-07] two-space indentation; non-ASCII kept as written.
        text = json.dumps([_entry_object(e) for e in entries], indent=2, ensure_ascii=False)
        return ToolResult.ok(text)


class MemoryPurgeTool(_MemoryTool):
    """`memory_purge`: delete every entry matching the given filters."""

    name: ClassVar[str] = "memory_purge"
    description: ClassVar[str] = (
        "Delete every long-term memory entry of a category and/or a conversation "
        "(session_id); at least one filter is required."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "category": {"type": "string", "description": "Delete entries of this category."},
            "session_id": {
                "type": "string",
                "description": "Delete entries stored by this conversation.",
            },
        },
    }
    act: ClassVar[bool] = True

    def _call(self, arguments: JSON) -> ToolResult:
        category = _optional_text(arguments, "category")
        session = _optional_text(arguments, "session_id")
        if category is None and session is None:
            # [POL-MEM-08] checked before the store is opened: no accidental wipe, no file.
            return ToolResult.fail(PURGE_FILTER_TEXT)
        count = self._store().purge(category, session)
        return ToolResult.ok(f"Purged {count} memories")


def memory_tools(
    memory: LazyMemory, settings: ToolSettings, clock: Clock | None = None
) -> list[Tool]:
    """The five memory tools in catalogue order, sharing `memory` (opened on first use)."""
    used = clock or SystemClock()
    kinds: tuple[type[_MemoryTool], ...] = (
        MemoryStoreTool,
        MemoryRecallTool,
        MemoryForgetTool,
        MemoryExportTool,
        MemoryPurgeTool,
    )
    return [kind(memory, settings, used) for kind in kinds]


def tools(security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    """The tools this module contributes to the built-in universe; nothing is opened here."""
    memory = LazyMemory(memory_path(settings.data_dir, settings.agent_alias))
    return memory_tools(memory, settings)
