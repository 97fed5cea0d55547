"""`ScopedToolRegistry.assemble()`: the one place an execution's tools are chosen (policy.md §5).

Goals: the registry cannot be built, extended or copied any other way (POL-ASSEMBLE-01/02), and
every switch of `ScopedAssembly` can only narrow what the policy grants (POL-ASSEMBLE-04).

Plan: the six steps of POL-ASSEMBLE-03 run in order over plain tuples; the decisions come from
`policy/`, this module only applies them. The MCP step contributes nothing until the MCP
client lands, so adding that surface fills a step instead of adding a path around the seam.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.policy.access import ToolAccessPolicy
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.providers.base import ToolSpec
from zeroclaw_ref.tools.base import Tool, ToolSettings
from zeroclaw_ref.tools.catalogue import MEMORY_TOOLS

if TYPE_CHECKING:
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


class ScopedToolRegistry:
    """An immutable, ordered set of tools (POL-ASSEMBLE-02)."""

    __slots__ = ("_by_name", "_specs", "_tools", "deferred_section", "origin", "pinned_section")

    def __init__(
        self,
        token: object,
        tools: tuple[Tool, ...],
        origin: ToolOrigin,
        deferred_section: str,
        pinned_section: str,
    ) -> None:
        if token is not _TOKEN:
            raise TypeError(_SEAL_MESSAGE)
        self._tools = tools
        self._by_name = {t.name: t for t in tools}
        # Design: specs are built once; the registry never changes (POL-ASSEMBLE-02).
        self._specs = tuple(ToolSpec(t.name, t.description, t.parameters) for t in tools)
        self.origin = origin
        self.deferred_section = deferred_section
        self.pinned_section = pinned_section

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

    @classmethod
    def assemble(cls, spec: ScopedAssembly) -> ScopedToolRegistry:
        """Apply the six steps of POL-ASSEMBLE-03 in order and mint the registry."""
        security = spec.security
        # Step 1 [POL-ASSEMBLE-05]: no serial device is touched unless the path connects them.
        peripherals: tuple[Tool, ...] = ()
        if spec.connect_peripherals and spec.config.peripherals.enabled:
            from zeroclaw_ref.tools import peripherals as boards

            peripherals = boards.peripheral_tools(spec.config.peripherals)
        # Step 2 [POL-ASSEMBLE-06]: the built-in filter, with the strict caller list.
        kept = tuple(
            t
            for t in spec.universe + peripherals
            if security.is_tool_allowed(t.name)
            and (spec.caller_allowed is None or t.name in spec.caller_allowed)
        )
        # Step 3 [POL-ASSEMBLE-07]: the context filter.
        kept = tuple(
            t
            for t in kept
            if not (spec.exclude_memory and t.name in MEMORY_TOOLS)
            and not (not spec.acp_delivery and t.name == "deliver_file")
        )
        # Step 4 [POL-ASSEMBLE-08]: MCP. The access policy is built even when the step does
        # not run, because skills pass the same policy (POL-ASSEMBLE-15). The MCP client
        # lands with the MCP issue: until then no granted server is contacted.
        access = ToolAccessPolicy(
            security.allowed_tools, security.excluded_tools, spec.caller_allowed
        )
        # Step 5 [POL-ASSEMBLE-15]: skill tools, admitted by the access policy; a name that is
        # already taken keeps its first owner (POL-ASSEMBLE-14).
        taken = {t.name for t in kept}
        skill_tools: list[Tool] = []
        if spec.skills:
            from zeroclaw_ref.tools.skills import skill_tools as build_skill_tools

            for skill in sorted(spec.skills, key=lambda s: s.name):
                for tool in build_skill_tools(skill, security, spec.settings):
                    if not access.is_tool_allowed(tool.name):
                        continue
                    if tool.name in taken:
                        log.warning("skill tool %s clashes with an existing tool", tool.name)
                        continue
                    taken.add(tool.name)
                    skill_tools.append(tool)
        everything = kept + tuple(skill_tools)
        # Step 6 [POL-ASSEMBLE-16]: the final excluded_tools subtraction over everything.
        final = tuple(t for t in everything if t.name not in security.excluded_tools)
        peripheral_names = {t.name for t in peripherals}
        skill_names = {t.name for t in skill_tools}
        origin = ToolOrigin(
            builtin=tuple(t.name for t in final if t.name not in peripheral_names | skill_names),
            peripheral=tuple(t.name for t in final if t.name in peripheral_names),
            skill=tuple(t.name for t in final if t.name in skill_names),
        )
        log.info(
            "assembled agent=%s path=%s builtin=%d peripheral=%d mcp=0 capability=0 skill=%d",
            spec.agent_alias,
            spec.path,
            len(origin.builtin),
            len(origin.peripheral),
            len(origin.skill),
        )  # [POL-ASSEMBLE-20]
        return cls(_TOKEN, final, origin, "", "")
