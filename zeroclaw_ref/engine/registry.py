"""`ScopedToolRegistry.assemble()`: the one place an execution's tools are chosen (policy.md §5).

Goals: the registry cannot be built, extended or copied any other way (POL-ASSEMBLE-01/02), and
every switch of `ScopedAssembly` can only narrow what the policy grants (POL-ASSEMBLE-04).

Plan: the six steps of POL-ASSEMBLE-03 run in order over plain tuples; the decisions come from
`policy/`, this module only applies them. Step 4 lives in `engine/mcp_step.py`; its live state
(connections, activated set) stays with the registry, which is the only thing allowed to change
after minting (POL-ASSEMBLE-02).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from zeroclaw_ref.config.model import ConfigSnapshot, McpServerConfig
from zeroclaw_ref.engine import mcp_step
from zeroclaw_ref.engine.mcp_step import McpState, McpStepInput, capability_tools
from zeroclaw_ref.policy.access import ToolAccessPolicy
from zeroclaw_ref.policy.bundles import mcp_servers_for_agent
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.providers.base import ToolSpec
from zeroclaw_ref.tools.base import Tool, ToolSettings
from zeroclaw_ref.tools.catalogue import MEMORY_TOOLS

if TYPE_CHECKING:
    from zeroclaw_ref.mcp.sections import ActivatedToolSet
    from zeroclaw_ref.tools.skills import LoadedSkill

log = logging.getLogger(__name__)

_TOKEN = object()  # [POL-ASSEMBLE-01] module-private construction token
_SEAL_MESSAGE = "ScopedToolRegistry can only be created by ScopedToolRegistry.assemble()"


@dataclass(frozen=True, slots=True)
class ScopedAssembly:
    """The input of `assemble()`; the switches come from PATH_PROFILES (POL-RESOLVE-05)."""

    agent_alias: str
    path: str
    config: ConfigSnapshot
    security: SecurityPolicy
    universe: tuple[Tool, ...]
    settings: ToolSettings
    skills: tuple[LoadedSkill, ...] = ()
    caller_allowed: frozenset[str] | None = None
    connect_mcp: bool = True
    connect_peripherals: bool = True
    exclude_memory: bool = False
    acp_delivery: bool = True
    list_deferred_mcp_specs: bool = False


@dataclass(frozen=True, slots=True)
class ToolOrigin:
    """Which step contributed a tool (for `snapshot()` and the parity harness)."""

    builtin: tuple[str, ...] = ()
    peripheral: tuple[str, ...] = ()
    capability: tuple[str, ...] = ()
    mcp: tuple[str, ...] = ()
    skill: tuple[str, ...] = ()
    mcp_deferred: tuple[str, ...] = ()  # admitted deferred stubs (snapshot `tools.mcp_deferred`)


class ScopedToolRegistry:
    """An immutable, ordered set of tools (POL-ASSEMBLE-02)."""

    __slots__ = (
        "_by_name",
        "_excluded",
        "_mcp",
        "_mcp_mode",
        "_segments",
        "_specs",
        "_tools",
        "deferred_section",
        "mcp_connected",
        "origin",
        "pinned_section",
    )

    def __init__(
        self,
        token: object,
        segments: tuple[tuple[Tool, ...], tuple[Tool, ...], tuple[Tool, ...]],
        origin: ToolOrigin,
        sections: tuple[str, str],
        mcp: McpState | None = None,
        excluded: frozenset[str] = frozenset(),
        mcp_mode: str = "none",
    ) -> None:
        if token is not _TOKEN:
            raise TypeError(_SEAL_MESSAGE)
        # (before MCP, MCP position, after MCP): only the middle one is ever rebuilt, by a
        # between-turn refresh (POL-ASSEMBLE-02, MCP-DISC-18).
        self._segments = segments
        self._excluded = excluded
        self._mcp = mcp
        self._mcp_mode = mcp_mode
        self.mcp_connected = mcp is not None
        self.origin = origin
        self.deferred_section, self.pinned_section = sections
        self._index()

    def _index(self) -> None:
        head, middle, tail = self._segments
        tools = head + middle + tail
        self._tools = tools
        self._by_name = {t.name: t for t in tools}
        # Design: specs are built once per tool set, not per request.
        self._specs = tuple(ToolSpec(t.name, t.description, t.parameters) for t in tools)

    # [POL-ASSEMBLE-02] no copies: a copy would be a registry nobody assembled.
    def __copy__(self) -> NoReturn:
        raise TypeError(_SEAL_MESSAGE)

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise TypeError(_SEAL_MESSAGE)

    def __reduce__(self) -> NoReturn:
        raise TypeError(_SEAL_MESSAGE)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self._tools)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """[POL-TOOL-05] the model-facing specs, in registry order."""
        return self._specs

    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    # --- the MCP part (POL-ASSEMBLE-19) ------------------------------------------------

    @property
    def activated(self) -> ActivatedToolSet | None:
        """The deferred tools `tool_search` activated (deferred mode only)."""
        return None if self._mcp is None else self._mcp.activated

    @property
    def mcp_mode(self) -> str:
        """none | eager | deferred | listing (policy.md §6.3): the configured mode of a granted
        scope, whether or not this path connected it (the §7.3 matrix keeps it equal)."""
        return self._mcp_mode

    @property
    def mcp_origin(self) -> frozenset[str]:
        """[MCP-NAME-09] registered MCP tool names plus the capability tools."""
        return frozenset(self.origin.mcp + self.origin.capability)

    def is_mcp_tool(self, name: str) -> bool:
        """True for MCP-origin names and activated deferred tools (POL-APPROVE-14)."""
        activated = self.activated
        return name in self.mcp_origin or (activated is not None and name in activated.names())

    def refresh_mcp(self) -> None:
        """[MCP-DISC-18] between turns only: re-list stale servers and rebuild the MCP part
        with the same access policy; the sections in the system prompt stay as minted."""
        state = self._mcp
        if state is None or not state.refresh():
            return
        head, _, tail = self._segments
        middle = tuple(t for t in state.registered() if t.name not in self._excluded)
        self._segments = (head, middle, tail)
        names = tuple(t.name for t in middle if t.name != "tool_search")
        deferred = tuple(t.name for t in state.admitted) if state.activated is not None else ()
        origin = self.origin
        self.origin = ToolOrigin(
            origin.builtin, origin.peripheral, origin.capability, names, origin.skill, deferred
        )
        self._index()

    def mcp_connect_failure(self, name: str) -> str | None:
        """For a call to an unregistered `<server>__<tool>`: why that server is not connected."""
        return None if self._mcp is None else self._mcp.connect_failure(name)

    def close_mcp(self) -> None:
        """[POL-RESOLVE-15] close the connections step 4 opened (idempotent)."""
        if self._mcp is not None:
            self._mcp.close()

    @classmethod
    def assemble(cls, spec: ScopedAssembly) -> ScopedToolRegistry:
        """Apply the six steps of POL-ASSEMBLE-03 in order and mint the registry."""
        security = spec.security
        peripherals = _peripheral_tools(spec)  # step 1
        kept = _builtin_filter(spec, spec.universe + peripherals)  # step 2
        kept = _context_filter(spec, kept)  # step 3
        # Step 4 [POL-ASSEMBLE-08]: MCP. The access policy is built even when the step does
        # not run, because skills pass the same policy (POL-ASSEMBLE-15).
        access = ToolAccessPolicy(
            security.allowed_tools, security.excluded_tools, spec.caller_allowed
        )
        capability: tuple[Tool, ...] = ()
        state: McpState | None = None
        granted = mcp_servers_for_agent(spec.config, spec.agent_alias)  # [POL-BUNDLE-05]
        if spec.connect_mcp and granted and not _admits_nothing(access):
            state, capability = _mcp_step(spec, access, granted, {t.name for t in kept})
        mcp_tools = state.registered() if state is not None else ()
        taken = {t.name for t in kept + capability + mcp_tools}
        skill_tools = _skill_tools(spec, access, taken)  # step 5
        if state is not None:
            state.reserved |= {t.name for t in skill_tools}  # a refresh keeps first owners
        # Step 6 [POL-ASSEMBLE-16]: the final excluded_tools subtraction over everything.
        excluded = security.excluded_tools
        head = _without(kept + capability, excluded)
        middle, tail = _without(mcp_tools, excluded), _without(skill_tools, excluded)
        deferred, pinned, deferred_names = _mcp_sections(state, middle)
        origin = _origin(head, middle, tail, peripherals, capability, deferred_names)
        _log_assembled(spec, origin)
        mode = _mcp_mode(spec, granted)
        segments = (head, middle, tail)
        return cls(_TOKEN, segments, origin, (deferred, pinned), state, excluded, mode)


def _peripheral_tools(spec: ScopedAssembly) -> tuple[Tool, ...]:
    """Step 1 [POL-ASSEMBLE-05]: no serial device is touched unless the path connects them."""
    if not (spec.connect_peripherals and spec.config.peripherals.enabled):
        return ()
    from zeroclaw_ref.tools import peripherals as boards

    return boards.peripheral_tools(spec.config.peripherals)


def _builtin_filter(spec: ScopedAssembly, tools: tuple[Tool, ...]) -> tuple[Tool, ...]:
    """Step 2 [POL-ASSEMBLE-06]: the security policy's filter, then the strict caller list."""
    allowed = spec.caller_allowed
    return tuple(
        t
        for t in tools
        if spec.security.is_tool_allowed(t.name) and (allowed is None or t.name in allowed)
    )


def _context_filter(spec: ScopedAssembly, tools: tuple[Tool, ...]) -> tuple[Tool, ...]:
    """Step 3 [POL-ASSEMBLE-07]: no memory tools where memory is excluded, no `deliver_file`
    where nothing can be delivered."""
    return tuple(
        t
        for t in tools
        if not (spec.exclude_memory and t.name in MEMORY_TOOLS)
        and not (not spec.acp_delivery and t.name == "deliver_file")
    )


def _skill_tools(
    spec: ScopedAssembly, access: ToolAccessPolicy, taken: set[str]
) -> tuple[Tool, ...]:
    """Step 5 [POL-ASSEMBLE-15]: skill tools, admitted by the access policy; a name that is
    already taken keeps its first owner (POL-ASSEMBLE-14). Adds the names it keeps to `taken`."""
    if not spec.skills:
        return ()
    from zeroclaw_ref.tools.skills import skill_tools as build_skill_tools

    found: list[Tool] = []
    for skill in sorted(spec.skills, key=lambda s: s.name):
        for tool in build_skill_tools(skill, spec.security, spec.settings):
            if not access.is_tool_allowed(tool.name):
                continue
            if tool.name in taken:
                log.warning("skill tool %s clashes with an existing tool", tool.name)
                continue
            taken.add(tool.name)
            found.append(tool)
    return tuple(found)


def _without(tools: tuple[Tool, ...], excluded: frozenset[str]) -> tuple[Tool, ...]:
    """Step 6's subtraction for one segment."""
    return tuple(t for t in tools if t.name not in excluded)


def _mcp_sections(
    state: McpState | None, middle: tuple[Tool, ...]
) -> tuple[str, str, tuple[str, ...]]:
    """The deferred and pinned prompt sections and the deferred tool names of step 4."""
    if state is None:
        return "", "", ()
    pinned = state.pinned()  # [POL-ASSEMBLE-09]
    if state.activated is None:
        return "", pinned, ()
    deferred = ""
    if any(t.name == "tool_search" for t in middle):
        # [POL-ASSEMBLE-10] [MCP-DEFER-08] an excluded tool_search empties the section
        deferred = state.deferred_text()
    return deferred, pinned, tuple(t.name for t in state.admitted)


def _origin(
    head: tuple[Tool, ...],
    middle: tuple[Tool, ...],
    tail: tuple[Tool, ...],
    peripherals: tuple[Tool, ...],
    capability: tuple[Tool, ...],
    deferred_names: tuple[str, ...],
) -> ToolOrigin:
    """Which step contributed each kept tool, in registry order."""
    peripheral_names = {t.name for t in peripherals}
    capability_names = {t.name for t in capability}
    not_builtin = peripheral_names | capability_names
    return ToolOrigin(
        builtin=tuple(t.name for t in head if t.name not in not_builtin),
        peripheral=tuple(t.name for t in head if t.name in peripheral_names),
        capability=tuple(t.name for t in head if t.name in capability_names),
        mcp=tuple(t.name for t in middle if t.name != "tool_search"),
        skill=tuple(t.name for t in tail),
        mcp_deferred=deferred_names,
    )


def _log_assembled(spec: ScopedAssembly, origin: ToolOrigin) -> None:
    """[POL-ASSEMBLE-20] one INFO line with the count of each origin."""
    log.info(
        "assembled agent=%s path=%s builtin=%d peripheral=%d mcp=%d capability=%d skill=%d",
        spec.agent_alias,
        spec.path,
        len(origin.builtin),
        len(origin.peripheral),
        len(origin.mcp) + len(origin.mcp_deferred),
        len(origin.capability),
        len(origin.skill),
    )


def _mcp_mode(spec: ScopedAssembly, granted: tuple[McpServerConfig, ...]) -> str:
    """none | eager | deferred | listing: the configured mode of a granted scope."""
    if not granted:
        return "none"
    if spec.list_deferred_mcp_specs:
        return "listing"
    return "deferred" if spec.config.mcp.deferred_loading else "eager"


def _admits_nothing(access: ToolAccessPolicy) -> bool:
    """Design: with deny-all or an empty caller list no MCP name can be admitted
    (POL-ASSEMBLE-17), so no server is contacted for nothing."""
    return access.allowed_tools == () or access.caller_allowed == frozenset()


def _mcp_step(
    spec: ScopedAssembly,
    access: ToolAccessPolicy,
    granted: tuple[McpServerConfig, ...],
    reserved: set[str],
) -> tuple[McpState, tuple[Tool, ...]]:
    """Step 4 proper: connect (failed servers only log, POL-ASSEMBLE-13), then the capability
    tools and the MCP tools of the execution's mode (POL-ASSEMBLE-10..12)."""
    config = spec.config
    agent = config.agents.get(spec.agent_alias)
    runtime = config.runtime_profiles.get(agent.runtime_profile) if agent is not None else None
    workspace = spec.security.workspace_dir
    client = mcp_step.connect_servers(granted, workspace)  # looked up late: a test seam
    try:
        capability = tuple(t for t in capability_tools(client, access) if t.name not in reserved)
        step = McpStepInput(
            servers=granted,
            deferred_loading=config.mcp.deferred_loading,
            listing=spec.list_deferred_mcp_specs,
            groups=runtime.tool_filter_groups if runtime is not None else (),
            workspace=workspace,
        )
        state = McpState(client, access, step, frozenset(reserved | {t.name for t in capability}))
        state.pre_activate()  # [MCP-TFG-07]
    except BaseException:
        client.close()  # [POL-RESOLVE-09] nothing stays open when the step fails
        raise
    return state, capability
