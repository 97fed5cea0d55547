"""What the model sees and may call in one turn: activated deferred tools and
`tool_filter_groups` (policy.md POL-ENGINE-03, POL-ENGINE-05; mcp.md §9.2, §9.3).

Goals: exposure never widens capability (MCP-POL-06, MCP-TFG-06). The registry decides what
exists; this module only adds the tools `tool_search` activated and hides the MCP tools that no
filter group exposes for the turn's message.

Caveat: the MCP client is never imported here (the ACP entry point must stay light, DESIGN
§5.4); the activated set is reached through the registry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from zeroclaw_ref.config.model import ToolFilterGroup
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.providers.base import ToolSpec
from zeroclaw_ref.tools.base import Tool

if TYPE_CHECKING:
    from zeroclaw_ref.engine.registry import ScopedToolRegistry

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    """[MCP-TFG-03] `*` is any run (even empty); everything else is literal."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def pattern_matches(pattern: str, name: str) -> bool:
    """[MCP-TFG-03] whole-name, case-sensitive glob match."""
    return _compiled(pattern).fullmatch(name) is not None


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


def exposed_by_groups(
    groups: Iterable[ToolFilterGroup], names: Iterable[str], user_message: str
) -> frozenset[str]:
    """[MCP-TFG-02] the names some active group matches: `always` groups are active every
    turn, `dynamic` ones when a keyword occurs (ASCII case-insensitively) in the message."""
    message = _ascii_lower(user_message)
    active = [
        g
        for g in groups
        if g.mode == "always"
        or (g.mode == "dynamic" and any(_ascii_lower(k) in message for k in g.keywords))
    ]
    return frozenset(
        name for name in names if any(pattern_matches(p, name) for g in active for p in g.tools)
    )


def always_exposed(groups: Iterable[ToolFilterGroup], names: Iterable[str]) -> tuple[str, ...]:
    """[MCP-TFG-07] the names matched by an `always` group, in the given order."""
    always = [g for g in groups if g.mode == "always"]
    return tuple(n for n in names if any(pattern_matches(p, n) for g in always for p in g.tools))


@dataclass(frozen=True, slots=True)
class TurnExposure:
    """The tool view of one turn: registry plus activated tools, minus hidden MCP tools."""

    registry: ScopedToolRegistry
    excluded: frozenset[str]
    hidden: frozenset[str]

    @classmethod
    def for_turn(
        cls,
        registry: ScopedToolRegistry,
        excluded: frozenset[str],
        groups: tuple[ToolFilterGroup, ...],
        user_message: str,
    ) -> TurnExposure:
        """[MCP-TFG-01] no groups, no effect; [MCP-TFG-07] in deferred mode groups never hide
        (`tool_search` is the exposure mechanism there)."""
        hidden: frozenset[str] = frozenset()
        if groups and registry.mcp_mode == "eager":
            origin = registry.mcp_origin  # [MCP-NAME-09] [MCP-TFG-04] only MCP-origin names
            hidden = origin - exposed_by_groups(groups, origin, user_message)
        return cls(registry, excluded, hidden)

    def specs(self) -> tuple[ToolSpec, ...]:
        """[POL-ENGINE-03] [MCP-DEFER-15] registry specs, then activated tools, minus
        `excluded_tools` and the tools hidden this turn."""
        specs = self.registry.specs
        activated = self.registry.activated
        if activated is not None:
            taken = set(self.registry.names)
            extra = [t for t in activated.tools() if t.name not in taken]
            specs = specs + tuple(ToolSpec(t.name, t.description, t.parameters) for t in extra)
        drop = self.excluded | self.hidden
        return tuple(s for s in specs if s.name not in drop) if drop else specs

    def is_hidden(self, name: str) -> bool:
        """[MCP-TFG-05] a hidden tool is refused for this turn only."""
        return name in self.hidden

    def lookup(self, name: str) -> Tool | None:
        """[POL-ENGINE-05] [MCP-DEFER-16] the registry first, then the activated set."""
        tool = self.registry.get(name)
        if tool is None and self.registry.activated is not None:
            tool = self.registry.activated.resolve(name)
        if tool is not None and tool.name in self.excluded:
            return None  # an activated tool stays subject to the engine lock (MCP-DEFER-15)
        return tool

    def forward(self, tool: Tool, arguments: JSON) -> JSON:
        """[POL-APPROVE-14] `approved` never reaches an MCP or capability tool."""
        if isinstance(arguments, dict) and self.registry.is_mcp_tool(tool.name):
            return {k: v for k, v in arguments.items() if k != "approved"}
        return arguments
