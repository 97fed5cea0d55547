"""The built-in universe in catalogue order (policy.md §4.1, POL-TOOL-01).

The universe is built per execution and bound to its SecurityPolicy. Tools join this list as
they are implemented; until then the model's calls to them end as `Unknown tool: <name>`
(POL-ENGINE-05).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import Tool

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


@dataclass(frozen=True, slots=True)
class ToolSettings:
    """What built-in tools need besides the SecurityPolicy; filled in by `resolve()`."""

    agent_alias: str
    data_dir: Path
    shell_timeout_secs: int = 60
    has_delegates: bool = False


def build_universe(security: SecurityPolicy, settings: ToolSettings) -> tuple[Tool, ...]:
    """[POL-TOOL-01] every built-in tool of this build, bound to `security`, in catalogue order."""
    tools: list[Tool] = []
    order = {name: i for i, name in enumerate(CATALOGUE_ORDER)}
    return tuple(sorted(tools, key=lambda t: order.get(t.name, len(order))))
