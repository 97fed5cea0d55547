"""The built-in universe in catalogue order (policy.md §4.1, POL-TOOL-01).

The universe is built per execution and bound to its SecurityPolicy. Tools join this list as
they are implemented; until then the model's calls to them end as `Unknown tool: <name>`
(POL-ENGINE-05).
"""

from __future__ import annotations

import importlib

from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import Tool, ToolSettings

__all__ = ["CATALOGUE_ORDER", "MEMORY_TOOLS", "ToolSettings", "build_universe"]

# [POL-ASSEMBLE-18] catalogue order, the order specs are offered to the model.
CATALOGUE_ORDER: tuple[str, ...] = (
    "shell", "file_read", "file_write", "file_edit", "glob_search", "content_search",
    "deliver_file", "ask_user", "escalate_to_human", "memory_store", "memory_recall",
    "memory_forget", "memory_export", "memory_purge", "cron_add", "cron_list", "cron_remove",
    "todo_write", "delegate",
)  # fmt: skip

MEMORY_TOOLS: frozenset[str] = frozenset(
    {"memory_store", "memory_recall", "memory_forget", "memory_export", "memory_purge"}
)


# The modules that contribute built-in tools, each through `tools(security, settings)`.
# Imported when a universe is first built, so answering `initialize` loads none of them.
TOOL_MODULES: tuple[str, ...] = (
    "shell", "files", "search", "deliver_file", "operator", "memory", "cron", "todo", "delegate",
)  # fmt: skip


def build_universe(security: SecurityPolicy, settings: ToolSettings) -> tuple[Tool, ...]:
    """[POL-TOOL-01] every built-in tool of this build, bound to `security`, in catalogue order."""
    tools: list[Tool] = []
    for module in TOOL_MODULES:
        tools.extend(
            importlib.import_module(f"zeroclaw_ref.tools.{module}").tools(security, settings)
        )
    order = {name: i for i, name in enumerate(CATALOGUE_ORDER)}
    return tuple(sorted(tools, key=lambda t: order.get(t.name, len(order))))
