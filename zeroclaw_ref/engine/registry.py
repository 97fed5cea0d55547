"""`ScopedToolRegistry.assemble()`: the one place an execution's tools are chosen (policy.md §5).

Goals: the registry cannot be built, extended or copied any other way (POL-ASSEMBLE-01/02), and
every switch of `ScopedAssembly` can only narrow what the policy grants (POL-ASSEMBLE-04).

Plan: the six steps of POL-ASSEMBLE-03 run in order over plain tuples; the decisions come from
`policy/`, this module only applies them. Steps whose surfaces are not built yet (peripherals,
MCP, skills) are present as steps that contribute nothing, so adding a surface fills a step
instead of adding a path around the seam.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import Tool
from zeroclaw_ref.tools.catalogue import MEMORY_TOOLS

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
    skills: tuple[str, ...] = ()
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

    __slots__ = ("_by_name", "_tools", "deferred_section", "origin", "pinned_section")

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

    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    @classmethod
    def assemble(cls, spec: ScopedAssembly) -> ScopedToolRegistry:
        """Apply the six steps of POL-ASSEMBLE-03 in order and mint the registry."""
        security = spec.security
        # Step 1 [POL-ASSEMBLE-05]: peripherals (no board support in this build yet).
        peripherals: tuple[Tool, ...] = ()
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
        # Step 4 [POL-ASSEMBLE-08]: MCP (the client lands with the MCP issue; nothing granted
        # can be connected yet, so the step contributes no tools, pins or stubs).
        # Step 5 [POL-ASSEMBLE-15]: skills (none loaded in this build).
        # Step 6 [POL-ASSEMBLE-16]: the final excluded_tools subtraction over everything.
        kept = tuple(t for t in kept if t.name not in security.excluded_tools)
        builtin = tuple(t.name for t in kept)
        log.info(
            "assembled agent=%s path=%s builtin=%d peripheral=0 mcp=0 capability=0 skill=0",
            spec.agent_alias,
            spec.path,
            len(builtin),
        )  # [POL-ASSEMBLE-20]
        return cls(_TOKEN, kept, ToolOrigin(builtin=builtin), "", "")
