"""`todo_write`: the model's plan as a whole-list replacement (policy.md §4.6, acp.md §5.6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import (
    PLAN_KEY,
    Tool,
    ToolContext,
    ToolResult,
    ToolSettings,
    argument,
    missing,
)

STATUSES = ("pending", "in_progress", "completed")
PRIORITIES = ("high", "medium", "low")


def parse_entries(todos: JSON) -> list[JSON] | ToolResult:
    """[POL-TODO-02] [POL-TODO-03] validated plan entries, or the failure for the first bad one."""
    if not isinstance(todos, list):
        return ToolResult.fail("`todos` must be an array")
    entries: list[JSON] = []
    for index, item in enumerate(todos):
        if not isinstance(item, dict):
            return ToolResult.fail(f"todos[{index}] must be an object")
        content = item.get("content")
        if not isinstance(content, str) or not content:
            return ToolResult.fail(f"todos[{index}].content is required")
        status = item.get("status")
        if status not in STATUSES:
            shown = "null" if "status" not in item else dumps(status)
            return ToolResult.fail(
                f"todos[{index}].status must be pending|in_progress|completed, got {shown}"
            )
        priority = item.get("priority")
        entry: JSONObject = {
            "content": content,
            "priority": priority if priority in PRIORITIES else "medium",
            "status": status,
        }
        active = item.get("activeForm")
        if isinstance(active, str) and active:
            entry["activeForm"] = active  # [ACP-UPD-14] only when supplied
        entries.append(entry)
    return entries


@dataclass(frozen=True, slots=True)
class TodoWriteTool:
    """Replace the plan; the engine turns `data[PLAN_KEY]` into one plan event (POL-TODO-04)."""

    name: ClassVar[str] = "todo_write"
    description: ClassVar[str] = (
        "Write the current task plan as a complete list of todos, each with content, status "
        "(pending, in_progress or completed) and optional priority and activeForm."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": list(STATUSES)},
                        "priority": {"type": "string", "enum": list(PRIORITIES)},
                        "activeForm": {"type": "string"},
                    },
                    "required": ["content", "status"],
                },
            }
        },
        "required": ["todos"],
    }
    act: ClassVar[bool] = False  # a read tool by class (policy.md §4.1)

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        todos = argument(arguments, "todos")
        if todos is None:
            return missing("todos")
        entries = parse_entries(todos)
        if isinstance(entries, ToolResult):
            return entries
        done = sum(1 for e in entries if isinstance(e, dict) and e["status"] == "completed")
        return ToolResult.ok(f"{len(entries)} todos tracked ({done} done)", {PLAN_KEY: entries})


def tools(security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    del security, settings
    return [TodoWriteTool()]
