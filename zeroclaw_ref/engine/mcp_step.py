"""Step 4 of `assemble()`: MCP tools, capability tools, deferred stubs and the prompt sections
(policy.md POL-ASSEMBLE-08..14, 19; mcp.md §9, §10).

Goals: the MCP client is imported only when a path really connects (the ACP entry point stays
light, DESIGN §5.4), and every name the step registers passed the same `ToolAccessPolicy`,
at assembly and after each between-turn refresh (MCP-DISC-18, POL-ASSEMBLE-02).

Plan: `run_step` connects through `connect_servers` (the seam tests replace with a fake
registry), then `McpState` turns the client's records into tools for the execution's mode.
The state outlives assembly: it owns the connections (closed by `close()`, POL-RESOLVE-15)
and rebuilds the MCP part of the registry when a server's list changed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zeroclaw_ref.config.model import McpServerConfig, ToolFilterGroup
from zeroclaw_ref.core.jsontypes import dumps
from zeroclaw_ref.engine.exposure import always_exposed
from zeroclaw_ref.policy.access import ToolAccessPolicy
from zeroclaw_ref.tools.base import Tool

if TYPE_CHECKING:
    from zeroclaw_ref.mcp.adapters import McpClient, McpToolAdapter, McpToolRecord
    from zeroclaw_ref.mcp.sections import ActivatedToolSet

log = logging.getLogger(__name__)


def connect_servers(servers: tuple[McpServerConfig, ...], workspace: Path | None) -> McpClient:
    """[MCP-API-02] connect the granted servers in grant order; a failed server only logs
    (POL-ASSEMBLE-13). Tests replace this function with one returning a fake registry."""
    from zeroclaw_ref.mcp import McpRegistry

    registry: McpClient = McpRegistry.connect_all(servers, workspace=workspace)
    return registry


@dataclass(frozen=True, slots=True)
class McpStepInput:
    servers: tuple[McpServerConfig, ...]  # granted, in grant order (POL-BUNDLE-02)
    deferred_loading: bool
    listing: bool  # list_deferred_mcp_specs (POL-ASSEMBLE-11)
    groups: tuple[ToolFilterGroup, ...]
    workspace: Path | None


class McpState:
    """The live MCP part of one registry: its client, mode and admitted names."""

    def __init__(
        self,
        client: McpClient,
        access: ToolAccessPolicy,
        step: McpStepInput,
        reserved: frozenset[str],
    ) -> None:
        from zeroclaw_ref.mcp.sections import ActivatedToolSet

        self.client = client
        self.access = access
        self.step = step
        self.reserved = reserved  # names built-ins, peripherals and skills already hold
        deferred = step.deferred_loading and not step.listing
        self.mode = "listing" if step.listing else "deferred" if deferred else "eager"
        self.activated: ActivatedToolSet | None = (
            ActivatedToolSet(_log_activation) if deferred else None
        )
        self._signature: tuple[tuple[str, str | None, str], ...] = ()
        self.admitted: tuple[McpToolAdapter, ...] = ()
        self._closed = False
        self._rebuild()

    def _rebuild(self) -> None:
        """Admit the client's current records: access policy, then first owner wins."""
        from zeroclaw_ref.mcp.adapters import McpToolAdapter

        records: Sequence[McpToolRecord] = self.client.tools()
        self._signature = _signature(records)
        admitted: list[McpToolAdapter] = []
        seen: set[str] = set()
        for record in records:
            name = record.prefixed_name
            if not self.access.is_tool_allowed(name):
                continue  # [POL-ASSEMBLE-12] [MCP-DEFER-05] denied names leave no trace
            if name in self.reserved or name in seen:
                log.warning("MCP tool %s clashes with an existing tool; skipped", name)
                continue  # [POL-ASSEMBLE-14] [MCP-NAME-06] the earlier tool keeps the name
            seen.add(name)
            admitted.append(McpToolAdapter(record, self.client, self.step.workspace))
        self.admitted = tuple(admitted)
        if self.activated is not None:
            self.activated.retain(self.admitted)  # [MCP-DISC-19] [MCP-DEFER-17]

    def refresh(self) -> bool:
        """[MCP-DISC-18] re-list stale servers between turns; True when the tools changed."""
        if self._closed:
            return False
        try:
            self.client.refresh_if_stale()
        except Exception as exc:  # [MCP-DISC-17] a failed refresh keeps the previous list
            log.warning("MCP refresh failed: %s", exc)
            return False
        if _signature(self.client.tools()) == self._signature:
            return False
        self._rebuild()
        return True

    def registered(self) -> tuple[Tool, ...]:
        """What the registry lists in MCP position: wrappers (eager, listing) or
        `tool_search` (deferred, only with at least one admitted stub, MCP-DEFER-06)."""
        if self.activated is None:
            return self.admitted  # [POL-ASSEMBLE-11] [POL-ASSEMBLE-12]
        if not self.admitted:
            return ()
        from zeroclaw_ref.mcp.sections import ToolSearchTool

        return (ToolSearchTool(self._stubs, self.activated),)

    def _stubs(self) -> tuple[McpToolAdapter, ...]:
        return self.admitted

    def deferred_names(self) -> tuple[str, ...]:
        """[MCP-DEFER-04] admitted stubs not activated in advance, in registry order."""
        if self.activated is None:
            return ()
        pre = set(self.activated.names())
        return tuple(t.name for t in self.admitted if t.name not in pre)

    def deferred_text(self) -> str:
        """[MCP-DEFER-04] the deferred section for the stubs still to be searched for."""
        from zeroclaw_ref.mcp.sections import deferred_section

        return deferred_section(self.deferred_names())

    def pre_activate(self) -> None:
        """[MCP-TFG-07] tools an `always` group matches are activated before the first turn."""
        if self.activated is None:
            return
        chosen = set(always_exposed(self.step.groups, (t.name for t in self.admitted)))
        for tool in self.admitted:
            if tool.name in chosen:
                self.activated.activate(tool)

    def connect_failure(self, name: str) -> str | None:
        """Why the server of the admitted-by-policy MCP tool name `name` failed to connect
        (scrubbed), or None: the model is told the reason rather than an unknown tool."""
        server, sep, _ = name.partition("__")
        if not sep or not self.access.is_tool_allowed(name):
            return None  # [POL-ASSEMBLE-12] denied names leave no trace
        probe = getattr(self.client, "connect_failure", None)  # fakes may not have it
        reason = probe(server) if callable(probe) else None
        return reason if isinstance(reason, str) and reason else None

    def pinned(self) -> str:
        from zeroclaw_ref.mcp.sections import pinned_section

        pins = tuple((s.name, s.pinned_resources) for s in self.step.servers if s.pinned_resources)
        return pinned_section(self.client, pins, self.access) if pins else ""

    def close(self) -> None:
        """[POL-RESOLVE-15] idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.client.close()
        except Exception:
            log.exception("closing MCP connections failed")


def _signature(records: Sequence[McpToolRecord]) -> tuple[tuple[str, str | None, str], ...]:
    """What a change of the tool list is judged by: names, descriptions and schemas."""
    return tuple((r.prefixed_name, r.description, dumps(r.input_schema)) for r in records)


def _log_activation(name: str) -> None:
    log.info("deferred MCP tool %s activated", name)  # [MCP-DEFER-15] once per new tool


def capability_tools(client: McpClient, access: ToolAccessPolicy) -> tuple[Tool, ...]:
    """[POL-ASSEMBLE-08] [MCP-RES-01] each helper only when its plain name is admitted."""
    from zeroclaw_ref.mcp.adapters import McpPromptsTool, McpResourcesTool

    tools: list[Tool] = []
    if access.is_tool_allowed("mcp_resources"):
        tools.append(McpResourcesTool(client))
    if access.is_tool_allowed("mcp_prompts"):
        tools.append(McpPromptsTool(client))
    return tuple(tools)
