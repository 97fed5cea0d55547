"""Deferred loading and the MCP prompt sections (mcp.md §9.1, §9.2, §10.3).

Goals: in deferred mode the model first sees only names; `tool_search` hands out full schemas
and activates tools for the rest of the conversation (MCP-DEFER-02, MCP-DEFER-15). Pinned
resources are read once, at assembly, into a fixed section (MCP-PIN-01).

Plan: `ActivatedToolSet` is the one mutable piece a sealed registry owns (POL-ASSEMBLE-02); it
is guarded by a lock because parallel tool calls may activate at the same time. The stubs that
`tool_search` searches come from a callable, so a refresh between turns is seen from the next
turn on (MCP-DEFER-17).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.mcp.adapters import McpClient, McpToolAdapter, read_wrapped
from zeroclaw_ref.policy.access import ToolAccessPolicy
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult

log = logging.getLogger(__name__)

# [MCP-DEFER-04] the deferred section's fixed text (mandated verbatim).
DEFERRED_HEADER: Final = (
    "## Deferred Tools\n\n"
    "The tools listed below are available but NOT yet loaded. To use any of them you MUST "
    "first call the `tool_search` tool to fetch their full schemas. Use "
    '"select:name1,name2" for exact tools or keywords to search. Once activated, the tools '
    "become callable for the rest of the conversation.\n\n"
    "<available-deferred-tools>\n"
)
DEFERRED_FOOTER: Final = "</available-deferred-tools>\n"
PINNED_HEADER: Final = "## Pinned MCP Resources\n\n"  # [MCP-PIN-04]

TOOL_SEARCH: Final = "tool_search"
TOOL_SEARCH_DESCRIPTION: Final = (
    "Fetch full schema definitions for deferred MCP tools so they can be called. "
    'Use "select:name1,name2" for exact match or keywords to search.'
)
TOOL_SEARCH_SCHEMA: Final[JSONObject] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": 'Either "select:name1,name2" for exact tool names, '
            "or keywords to search for",
        },
        "max_results": {
            "type": "number",
            "default": 5,
            "description": "Maximum number of tools to return in keyword mode",
        },
    },
    "required": ["query"],
}
DEFAULT_MAX_RESULTS: Final = 5  # [MCP-DEFER-10]
NO_MATCH: Final = "No matching deferred tools found."  # [MCP-DEFER-14]


def deferred_section(names: Iterable[str]) -> str:
    """[MCP-DEFER-04] one line per stub name, or the empty string when there is none."""
    lines = "".join(f"{name}\n" for name in names)
    return DEFERRED_HEADER + lines + DEFERRED_FOOTER if lines else ""


def mcp_block(deferred: str, pinned: str) -> str:
    """[MCP-PIN-05] the combined block; the caller appends it only when either part is set
    (POL-RESOLVE-14)."""
    return f"{deferred}\n\n{pinned}" if deferred or pinned else ""


def pinned_section(
    client: McpClient, pins: Sequence[tuple[str, tuple[str, ...]]], access: ToolAccessPolicy
) -> str:
    """[MCP-PIN-01..04] read every admitted pin once; `pins` is (server, uris) in grant order.

    A denied pin, a server that is not connected or has no resources, and a failed read are
    each skipped with a WARNING; the section is empty when nothing was read.
    """
    blocks: list[str] = []
    for server, uris in pins:
        for uri in uris:
            prefixed = f"{server}__{uri}"
            if not access.is_tool_allowed(prefixed):
                log.warning("pinned resource %s denied by the access policy", prefixed)
                continue  # [MCP-PIN-02]
            try:
                blocks.append(read_wrapped(client, prefixed) + "\n")
            except Exception as exc:  # [MCP-PIN-03] any failure only loses this pin
                log.warning("skipping pinned resource %s: %s", prefixed, exc)
    return PINNED_HEADER + "".join(blocks) if blocks else ""


class ActivatedToolSet:
    """[MCP-DEFER-15] deferred tools activated by `tool_search`, per conversation."""

    def __init__(self, on_activate: Callable[[str], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._tools: dict[str, Tool] = {}
        self._on_activate = on_activate

    def activate(self, tool: Tool) -> bool:
        """Add `tool`; True only the first time, when the hook also fires (MCP-DEFER-15)."""
        with self._lock:
            if tool.name in self._tools:
                return False
            self._tools[tool.name] = tool
        if self._on_activate is not None:
            self._on_activate(tool.name)
        return True

    def tools(self) -> tuple[Tool, ...]:
        """The activated tools, in activation order."""
        with self._lock:
            return tuple(self._tools.values())

    def names(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._tools)

    def resolve(self, name: str) -> Tool | None:
        """[MCP-DEFER-16] exact name, else the unique activated `*__<name>`; ambiguity gives
        None."""
        with self._lock:
            exact = self._tools.get(name)
            if exact is not None or "__" in name:
                return exact
            matches = [t for n, t in self._tools.items() if n.endswith(f"__{name}")]
        return matches[0] if len(matches) == 1 else None

    def retain(self, tools: Iterable[Tool]) -> None:
        """[MCP-DISC-19] [MCP-DEFER-17] after a refresh: vanished tools leave the set and
        survivors take their refreshed definition."""
        current = {t.name: t for t in tools}
        with self._lock:
            self._tools = {n: current[n] for n in self._tools if n in current}


def _function_line(tool: Tool) -> str:
    """[MCP-DEFER-13] only `"` is escaped in the description; the schema is verbatim."""
    description = tool.description.replace('"', '\\"')
    return (
        f'<function>{{"name": "{tool.name}", "description": "{description}", '
        f'"parameters": {dumps(tool.parameters)}}}</function>\n'
    )


def _max_results(value: JSON) -> int:
    """[MCP-DEFER-10] a JSON integer >= 0 (never a boolean or float), else 5."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return DEFAULT_MAX_RESULTS


class ToolSearchTool:
    """[MCP-DEFER-09..14] `tool_search` over the admitted stubs (denied ones never reach it)."""

    name = TOOL_SEARCH
    description = TOOL_SEARCH_DESCRIPTION
    parameters = TOOL_SEARCH_SCHEMA
    act = False

    def __init__(
        self, stubs: Callable[[], Sequence[McpToolAdapter]], activated: ActivatedToolSet
    ) -> None:
        self._stubs = stubs  # [MCP-DEFER-05] admitted stubs only, in registry order
        self._activated = activated

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        query = arguments.get("query") if isinstance(arguments, dict) else None
        if not isinstance(query, str) or not query.strip():
            return ToolResult.fail("query parameter is required")  # [MCP-DEFER-09]
        stubs = tuple(self._stubs())
        if query.startswith("select:"):
            return self._select(query[len("select:") :], stubs)
        limit = _max_results(arguments.get("max_results") if isinstance(arguments, dict) else None)
        terms = query.lower().split()
        scored: list[tuple[int, McpToolAdapter]] = []
        for stub in stubs:  # [MCP-DEFER-12]
            haystack = f"{stub.name.lower()} {stub.description.lower()}"
            score = sum(1 for term in terms if term in haystack)
            if score:
                scored.append((score, stub))
        if not scored:
            return ToolResult.ok(NO_MATCH)  # [MCP-DEFER-14]
        scored.sort(key=lambda pair: -pair[0])  # stable: ties stay in registry order
        return ToolResult.ok(self._emit([stub for _, stub in scored[:limit]]))

    def _select(self, rest: str, stubs: tuple[McpToolAdapter, ...]) -> ToolResult:
        by_name = {stub.name: stub for stub in stubs}
        found: list[McpToolAdapter] = []
        missing: list[str] = []
        for part in (p.strip() for p in rest.split(",")):  # [MCP-DEFER-11]
            if not part:
                continue
            stub = by_name.get(part)
            if stub is None:
                missing.append(part)
            else:
                found.append(stub)
        output = self._emit(found)
        if missing:
            output += f"\nNot found: {', '.join(missing)}"  # [MCP-DEFER-14]
        return ToolResult.ok(output)

    def _emit(self, tools: list[McpToolAdapter]) -> str:
        for tool in tools:
            self._activated.activate(tool)
        return "<functions>\n" + "".join(_function_line(t) for t in tools) + "</functions>\n"
