"""`ResolvedAgentExecution`: the sealed, frozen result of `resolve()` (policy.md §6.1, §6.3).

Only `engine/resolve.py` mints one, inside `_minting()`; a construction anywhere else, including
`dataclasses.replace`, `copy` and `pickle`, raises TypeError (POL-RESOLVE-01). Every minted
instance is remembered in a weak set the engine checks (POL-RESOLVE-02).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from zeroclaw_ref.config.model import ToolFilterGroup
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine.registry import ScopedAssembly, ScopedToolRegistry
from zeroclaw_ref.policy.approvals import ApprovalManager
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.providers.base import ModelProvider

if TYPE_CHECKING:
    from zeroclaw_ref.mcp.sections import ActivatedToolSet
    from zeroclaw_ref.tools.skills import LoadedSkill

_SEAL_MESSAGE = "ResolvedAgentExecution can only be created by resolve()"
_state = threading.local()
_minted: weakref.WeakSet[ResolvedAgentExecution] = weakref.WeakSet()
_minted_lock = threading.Lock()


@contextmanager
def _minting() -> Iterator[None]:
    """Open the construction window on this thread; used only by `resolve()`."""
    _state.open = True
    try:
        yield
    finally:
        _state.open = False


def _sorted(values: Iterable[str]) -> list[JSON]:
    return [v for v in sorted(values)]


def _listed(values: Iterable[str]) -> list[JSON]:
    return [v for v in values]


def _sorted_or_none(values: Iterable[str] | None) -> JSON:
    return None if values is None else _sorted(values)


def is_minted(value: object) -> bool:
    """[POL-RESOLVE-02] True only for executions `resolve()` created."""
    with _minted_lock:
        return isinstance(value, ResolvedAgentExecution) and value in _minted


@dataclass(frozen=True, slots=True)
class ResolvedModelAccess:
    provider_name: str
    provider_kind: str
    model: str
    temperature: float
    provider: ModelProvider = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ResolvedIo:
    tools: ScopedToolRegistry
    approval: ApprovalManager
    interaction: str
    system_prompt: str
    deferred_section: str = ""
    pinned_section: str = ""
    activated: ActivatedToolSet | None = None  # deferred mode only (POL-ASSEMBLE-19)


@dataclass(frozen=True, slots=True)
class ResolvedRuntimeKnobs:
    max_tool_iterations: int
    max_history_messages: int
    max_tool_result_chars: int
    parallel_tools: bool
    shell_timeout_secs: int
    max_delegation_depth: int
    excluded_tools: frozenset[str]
    tool_filter_groups: tuple[ToolFilterGroup, ...]
    auto_memory: bool = True


@dataclass(frozen=True, slots=True)
class ResolvedMcpScope:
    connected: bool
    granted_servers: tuple[str, ...]
    mode: str  # none | eager | deferred | listing


@dataclass(frozen=True, slots=True)
class ResolvedMemory:
    enabled: bool
    store_path: Path | None


@dataclass(frozen=True, slots=True)
class ResolvedLineage:
    executing_agent: str
    parent_agent: str | None
    parent_run_id: str | None
    depth: int
    surface: str
    run_id: str = ""  # this execution's own run id (POL-MEM-09, POL-DELEG-08)


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class ResolvedAgentExecution:
    """Everything one agent turn may use, resolved once (policy.md §6.3)."""

    agent_alias: str
    path: str
    assembly: ScopedAssembly
    model: ResolvedModelAccess
    io: ResolvedIo
    knobs: ResolvedRuntimeKnobs
    security: SecurityPolicy
    mcp: ResolvedMcpScope
    skills: tuple[LoadedSkill, ...]
    memory: ResolvedMemory
    lineage: ResolvedLineage

    def __post_init__(self) -> None:
        if not getattr(_state, "open", False):
            raise TypeError(_SEAL_MESSAGE)
        with _minted_lock:
            _minted.add(self)

    def __copy__(self) -> NoReturn:
        raise TypeError(_SEAL_MESSAGE)

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise TypeError(_SEAL_MESSAGE)

    def __reduce__(self) -> NoReturn:
        raise TypeError(_SEAL_MESSAGE)

    def snapshot(self) -> JSONObject:
        """[POL-RESOLVE-16] every resolved setting as flat JSON keys, lists sorted unless their
        order is the point (registry order, grant order); one helper per key group."""
        return {
            **_tool_keys(self.io),
            **_prompt_keys(self.io),
            **_access_keys(self.security, self.assembly),
            **_mcp_keys(self.mcp),
            **_approval_keys(self.io),
            **_security_keys(self.security),
            **_knob_keys(self.knobs),
            **_model_keys(self.model),
            **_memory_keys(self.memory),
            "skills.loaded": _sorted(s.name for s in self.skills),
            **_lineage_keys(self.lineage),
            **_assembly_keys(self.assembly),
        }

    def close(self) -> None:
        """[POL-RESOLVE-15] close MCP connections opened for this execution (idempotent);
        process-wide peripheral ports stay open."""
        self.io.tools.close_mcp()


# --- the key groups of `snapshot()`, in its order -----------------------------------------


def _tool_keys(io: ResolvedIo) -> JSONObject:
    origin = io.tools.origin
    return {
        "tools.names": _listed(io.tools.names),
        "tools.builtin": _sorted(origin.builtin),
        "tools.peripheral": _sorted(origin.peripheral),
        "tools.capability": _sorted(origin.capability),
        "tools.mcp": _sorted(origin.mcp),
        "tools.skill": _sorted(origin.skill),
        "tools.mcp_deferred": _sorted(origin.mcp_deferred),
        "tools.tool_search": "tool_search" in io.tools.names,
    }


def _prompt_keys(io: ResolvedIo) -> JSONObject:
    return {
        "prompt.system": io.system_prompt,
        "prompt.deferred_section": io.deferred_section,
        "prompt.pinned_section": io.pinned_section,
    }


def _access_keys(sec: SecurityPolicy, assembly: ScopedAssembly) -> JSONObject:
    return {
        "access.allowed_tools": _sorted_or_none(sec.allowed_tools),
        "access.excluded_tools": _sorted(sec.excluded_tools),
        "access.caller_allowed": _sorted_or_none(assembly.caller_allowed),
    }


def _mcp_keys(mcp: ResolvedMcpScope) -> JSONObject:
    return {
        "mcp.connected": mcp.connected,
        "mcp.granted_servers": _listed(mcp.granted_servers),
        "mcp.mode": mcp.mode,
    }


def _approval_keys(io: ResolvedIo) -> JSONObject:
    return {
        "approval.level": io.approval.level,
        "approval.auto_approve": _sorted(io.approval.auto_approve),
        "approval.always_ask": _sorted(io.approval.always_ask),
        "approval.interaction": io.interaction,
        "approval.session_allowlist": _listed(io.approval.session_allowlist),
    }


def _security_keys(sec: SecurityPolicy) -> JSONObject:
    return {
        "security.workspace_dir": str(sec.workspace_dir),
        # [POL-FS-07] the roots besides the workspace itself: the profile's, plus the agent's
        # own workspace when it is not the workspace (the dual root of acp)
        "security.allowed_roots": _sorted(
            str(r) for r in sec.allowed_roots if r != sec.workspace_dir
        ),
        "security.workspace_only": sec.workspace_only,
        "security.forbidden_paths": _sorted(sec.forbidden_paths),
        "security.allowed_commands": _sorted(sec.allowed_commands),
        "security.require_approval_for_medium_risk": sec.require_approval_for_medium_risk,
        "security.block_high_risk_commands": sec.block_high_risk_commands,
        "security.shell_env_passthrough": _sorted(sec.shell_env_passthrough),
    }


def _knob_keys(knobs: ResolvedRuntimeKnobs) -> JSONObject:
    return {
        "knobs.max_tool_iterations": knobs.max_tool_iterations,
        "knobs.max_history_messages": knobs.max_history_messages,
        "knobs.max_tool_result_chars": knobs.max_tool_result_chars,
        "knobs.parallel_tools": knobs.parallel_tools,
        "knobs.shell_timeout_secs": knobs.shell_timeout_secs,
        "knobs.max_delegation_depth": knobs.max_delegation_depth,
        "knobs.tool_filter_groups": [
            {"mode": g.mode, "tools": _listed(g.tools), "keywords": _listed(g.keywords)}
            for g in knobs.tool_filter_groups
        ],
    }


def _model_keys(model: ResolvedModelAccess) -> JSONObject:
    return {
        "model.provider": model.provider_name,
        "model.kind": model.provider_kind,
        "model.model": model.model,
        "model.temperature": model.temperature,
    }


def _memory_keys(memory: ResolvedMemory) -> JSONObject:
    store = None if memory.store_path is None else str(memory.store_path)
    return {"memory.enabled": memory.enabled, "memory.store": store}


def _lineage_keys(lineage: ResolvedLineage) -> JSONObject:
    return {
        "lineage.executing_agent": lineage.executing_agent,
        "lineage.parent_agent": lineage.parent_agent,
        "lineage.depth": lineage.depth,
        "lineage.surface": lineage.surface,
    }


def _assembly_keys(assembly: ScopedAssembly) -> JSONObject:
    return {
        "assembly.caller_allowed": _sorted_or_none(assembly.caller_allowed),
        "assembly.connect_mcp": assembly.connect_mcp,
        "assembly.connect_peripherals": assembly.connect_peripherals,
        "assembly.exclude_memory": assembly.exclude_memory,
        "assembly.acp_delivery": assembly.acp_delivery,
        "assembly.list_deferred_mcp_specs": assembly.list_deferred_mcp_specs,
    }
