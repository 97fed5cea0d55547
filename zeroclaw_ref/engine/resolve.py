"""`resolve()`: the one seam every construction path builds its engine input through
(policy.md §6, §7).

Goals: a path names itself and what only it knows (its approver, its session workspace, its
caller list); every other surface — tools, approvals, knobs, model, MCP scope, memory, skills,
peripherals, the system prompt — is computed here, in the fixed order of POL-RESOLVE-08, with
per-path differences read only from the data table `PATH_PROFILES` (POL-PATH-22).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from zeroclaw_ref.config.model import (
    AgentConfig,
    AutonomyConfig,
    ConfigSnapshot,
    RuntimeProfileConfig,
    effective_profile,
)
from zeroclaw_ref.core.ids import IdFactory, RandomIds
from zeroclaw_ref.engine.execution import (
    ResolvedAgentExecution,
    ResolvedIo,
    ResolvedLineage,
    ResolvedMcpScope,
    ResolvedMemory,
    ResolvedModelAccess,
    ResolvedRuntimeKnobs,
    _minting,
)
from zeroclaw_ref.engine.registry import ScopedAssembly, ScopedToolRegistry
from zeroclaw_ref.engine.sysprompt import build_system_prompt
from zeroclaw_ref.policy.approvals import ApprovalManager, Approver
from zeroclaw_ref.policy.bundles import mcp_servers_for_agent
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.providers.factory import create_provider
from zeroclaw_ref.tools.base import ToolSettings
from zeroclaw_ref.tools.catalogue import build_universe

if TYPE_CHECKING:  # skills load lazily (start-up imports)
    from zeroclaw_ref.tools.skills import LoadedSkill

log = logging.getLogger(__name__)

PATHS: Final = ("acp", "gateway-chat", "gateway-tools", "cli-run", "cron", "delegate")


@dataclass(frozen=True, slots=True)
class PathProfile:
    """One row of PATH_PROFILES; None means "decided from the agent or the parent"."""

    connect_mcp: bool | None
    connect_peripherals: bool
    exclude_memory: bool | None
    acp_delivery: bool
    list_deferred_mcp_specs: bool
    interaction: str | None


# [POL-PATH-22] the only place per-path differences live. `None` cells are computed by rule:
# acp connects MCP only when the agent opts in (POL-PATH-04); delegate rows follow the parent
# (POL-PATH-13); cli-run's interaction is terminal or none (POL-PATH-15).
PATH_PROFILES: Final[dict[str, PathProfile]] = {
    "acp": PathProfile(None, True, True, True, False, "acp_backchannel"),
    "gateway-chat": PathProfile(True, True, False, False, False, "none"),
    "gateway-tools": PathProfile(True, False, False, False, True, "listing"),
    "cli-run": PathProfile(True, True, False, False, False, None),
    "cron": PathProfile(True, True, False, False, False, "none"),
    "delegate": PathProfile(None, False, None, False, False, None),
}


class ResolveError(Exception):
    """`resolve()` refused; the message is the text the front door reports."""


@dataclass(frozen=True, slots=True)
class PathRequest:
    """What a front door may say about itself (policy.md §6.2)."""

    path: str
    approver: Approver | None = None
    caller_allowed: frozenset[str] | None = None
    session_workspace: Path | None = None
    parent: ResolvedAgentExecution | None = None
    interactive: bool = False


_observers: list[Callable[[ResolvedAgentExecution], None]] = []
_observers_lock = threading.Lock()


def add_resolve_observer(callback: Callable[[ResolvedAgentExecution], None]) -> None:
    """[POL-RESOLVE-17] call `callback` with every execution minted from now on."""
    with _observers_lock:
        _observers.append(callback)


def remove_resolve_observer(callback: Callable[[ResolvedAgentExecution], None]) -> None:
    with _observers_lock:
        _observers.remove(callback)


def unknown_agent_text(alias: str) -> str:
    """[POL-RESOLVE-07] [ACP-NEW-05] the dash is U+2014."""
    return f"Unknown agent `{alias}` — no [agents.{alias}] entry configured"


def not_dispatchable_text(alias: str) -> str:
    """[POL-RESOLVE-07] [ACP-NEW-05]"""
    return f"Agent `{alias}` is not enabled for dispatch"


def _check_request(request: PathRequest) -> PathProfile:
    """[POL-RESOLVE-06] a path cannot carry a field it is not allowed to set."""
    profile = PATH_PROFILES.get(request.path)
    if profile is None:
        raise ResolveError(f"unknown construction path: {request.path}")
    if request.caller_allowed is not None and request.path != "cron":
        raise ResolveError(f"path {request.path} cannot carry a caller allow-list")
    if request.session_workspace is not None and request.path != "acp":
        raise ResolveError(f"path {request.path} cannot carry a session workspace")
    if (request.parent is not None) != (request.path == "delegate"):
        raise ResolveError(f"path {request.path} must carry a parent exactly when delegating")
    needs_approver = request.path == "acp" or (request.path == "cli-run" and request.interactive)
    if request.path != "delegate" and needs_approver != (request.approver is not None):
        raise ResolveError(f"path {request.path} got an approver that does not fit its mode")
    if request.path == "delegate" and request.approver is not None:
        raise ResolveError("a delegate child takes its parent's operator, not its own")
    return profile


@dataclass(frozen=True, slots=True)
class _Switches:
    caller_allowed: frozenset[str] | None
    connect_mcp: bool
    connect_peripherals: bool
    exclude_memory: bool
    acp_delivery: bool
    list_deferred_mcp_specs: bool
    interaction: str
    approver: Approver | None
    surface: str
    depth: int


def _switches(profile: PathProfile, request: PathRequest, acp_enable_mcp: bool) -> _Switches:
    """[POL-RESOLVE-05] every switch from PATH_PROFILES; the `None` cells by their rule."""
    parent = request.parent
    if parent is not None:  # [POL-PATH-13] the child keeps the surface's promises
        surface = parent.lineage.surface
        return _Switches(
            caller_allowed=parent.assembly.caller_allowed,  # [POL-DELEG-11]
            connect_mcp=acp_enable_mcp if surface == "acp" else True,
            connect_peripherals=profile.connect_peripherals,
            exclude_memory=surface == "acp",
            acp_delivery=profile.acp_delivery,
            list_deferred_mcp_specs=profile.list_deferred_mcp_specs,
            interaction=parent.io.interaction,
            approver=parent.io.approval.approver,  # [POL-DELEG-09] the parent's operator
            surface=surface,
            depth=parent.lineage.depth + 1,
        )
    connect_mcp = acp_enable_mcp if profile.connect_mcp is None else profile.connect_mcp
    return _Switches(
        caller_allowed=request.caller_allowed,
        connect_mcp=connect_mcp,  # [POL-PATH-04]
        connect_peripherals=profile.connect_peripherals,
        exclude_memory=bool(profile.exclude_memory),
        acp_delivery=profile.acp_delivery,
        list_deferred_mcp_specs=profile.list_deferred_mcp_specs,
        interaction=profile.interaction or ("terminal" if request.interactive else "none"),
        approver=request.approver,
        surface=request.path,
        depth=0,
    )


def resolve(
    config: ConfigSnapshot,
    agent_alias: str,
    request: PathRequest,
    ids: IdFactory | None = None,
) -> ResolvedAgentExecution:
    """Build the sealed execution for `agent_alias` on `request.path`, one helper per step of
    POL-RESOLVE-08 and in its order.

    `ids` mints the execution's run id (kind `run`, DESIGN §8); without one it is a random
    UUID, as every id is in production.

    Raises:
        ResolveError: unknown or non-dispatchable agent, a request its path forbids, or a
            failure to build the model provider or workspace; nothing is left open
            (POL-RESOLVE-09).
    """
    profile = _check_request(request)
    agent = _dispatchable_agent(config, agent_alias)
    switches = _switches(profile, request, agent.acp_enable_mcp)
    run_id = (ids or RandomIds()).new("run")
    # 1. effective risk profile [POL-AUTO-03]
    risk = effective_profile(config.autonomy, config.risk_profiles.get(agent.risk_profile))
    # 2. security policy
    agent_ws, workspace = _workspaces(config, agent_alias, request)
    security = _security_policy(config, risk, workspace, agent_ws)
    # 3. runtime knobs
    runtime = config.runtime_profiles[agent.runtime_profile]
    knobs = _runtime_knobs(runtime, risk)
    # 4. model access
    model = _model_access(config, agent, runtime)
    # 5. MCP grant [POL-BUNDLE-06]: computed once, here
    granted = tuple(s.name for s in mcp_servers_for_agent(config, agent_alias))
    # 6. skills
    skills = _skills(agent_ws, agent, agent_alias)
    # 7. memory
    memory = _memory(config, agent_alias, switches)
    # 8. assemble(): the only step that opens connections (MCP); any later failure releases
    # them, so no partial execution is left behind [POL-RESOLVE-09]
    settings = _tool_settings(config, agent, agent_alias, runtime, run_id)
    assembly = _assembly(config, agent_alias, request, security, settings, skills, switches)
    registry = ScopedToolRegistry.assemble(assembly)
    try:
        # 9. approval manager, 10. system prompt and I/O, 11. minting
        approval = _approval_manager(risk, switches)
        io = _io(registry, approval, switches, agent, agent_alias, workspace, skills)
        with _minting():  # [POL-RESOLVE-02] the only place an execution is constructed
            execution = ResolvedAgentExecution(
                agent_alias=agent_alias,
                path=request.path,
                assembly=assembly,
                model=model,
                io=io,
                knobs=knobs,
                security=security,
                mcp=ResolvedMcpScope(registry.mcp_connected, granted, registry.mcp_mode),
                skills=skills,
                memory=memory,
                lineage=_lineage(agent_alias, request.parent, switches, run_id),
            )
    except BaseException:
        registry.close_mcp()
        raise
    _tell_observers(execution)
    return execution


def _dispatchable_agent(config: ConfigSnapshot, agent_alias: str) -> AgentConfig:
    """[POL-RESOLVE-07] the agent's entry, which must exist and be enabled for dispatch."""
    agent = config.agents.get(agent_alias)
    if agent is None:
        raise ResolveError(unknown_agent_text(agent_alias))
    if not agent.dispatchable:
        raise ResolveError(not_dispatchable_text(agent_alias))
    return agent


def _workspaces(
    config: ConfigSnapshot, agent_alias: str, request: PathRequest
) -> tuple[Path, Path]:
    """The agent's own workspace (created, canonical) and the one commands run in: the
    session's on acp, the agent's own elsewhere."""
    agent_ws = _canonical_dir(config.agent_workspace(agent_alias))
    return agent_ws, request.session_workspace or agent_ws


def _security_policy(
    config: ConfigSnapshot, risk: AutonomyConfig, workspace: Path, agent_ws: Path
) -> SecurityPolicy:
    """Step 2: the policy over `workspace`; the configuration and data folders are never
    visible to a command [ZC-SBX-03]."""
    hidden = (config.config_dir, config.data_dir)
    return SecurityPolicy.build(risk, workspace, agent_ws, config.sandbox, hidden)


def _runtime_knobs(runtime: RuntimeProfileConfig, risk: AutonomyConfig) -> ResolvedRuntimeKnobs:
    """Step 3: the runtime profile's knobs, with the risk profile's exclusions."""
    return ResolvedRuntimeKnobs(
        max_tool_iterations=runtime.max_tool_iterations or 10,  # 0 means the default
        max_history_messages=runtime.max_history_messages,
        max_tool_result_chars=runtime.max_tool_result_chars,
        parallel_tools=runtime.parallel_tools,
        shell_timeout_secs=runtime.shell_timeout_secs,
        max_delegation_depth=runtime.max_delegation_depth,
        excluded_tools=frozenset(risk.excluded_tools),  # [POL-RESOLVE-13] every path and level
        tool_filter_groups=runtime.tool_filter_groups,
        auto_memory=runtime.auto_memory,
    )


def _model_access(
    config: ConfigSnapshot, agent: AgentConfig, runtime: RuntimeProfileConfig
) -> ResolvedModelAccess:
    """Step 4 [POL-RESOLVE-11] [POL-RESOLVE-12]: a fresh provider per execution; the runtime
    profile's temperature wins over the provider's, and 0.7 applies when neither sets one."""
    provider_cfg = config.providers[agent.model_provider]
    try:
        provider = create_provider(provider_cfg, config.config_dir)
    except Exception as exc:
        raise ResolveError(str(exc)) from exc
    temperature = runtime.temperature
    if temperature is None:
        temperature = provider_cfg.temperature if provider_cfg.temperature is not None else 0.7
    return ResolvedModelAccess(
        provider_cfg.name, provider_cfg.kind, provider_cfg.model, temperature, provider
    )


def _skills(agent_ws: Path, agent: AgentConfig, agent_alias: str) -> tuple[LoadedSkill, ...]:
    """Step 6 [POL-SKILL-01] [POL-SKILL-10]: from the agent's own workspace, once."""
    from zeroclaw_ref.tools.skills import load_skills

    return load_skills(agent_ws, agent.skills, agent_alias)


def _memory(config: ConfigSnapshot, agent_alias: str, switches: _Switches) -> ResolvedMemory:
    """Step 7 [POL-MEM-02]: no store on the acp surface (the path is only named here)."""
    from zeroclaw_ref.store.memory import memory_path

    excluded = switches.exclude_memory
    return ResolvedMemory(
        enabled=not excluded,
        store_path=None if excluded else memory_path(config.data_dir, agent_alias),
    )


def _tool_settings(
    config: ConfigSnapshot,
    agent: AgentConfig,
    agent_alias: str,
    runtime: RuntimeProfileConfig,
    run_id: str,
) -> ToolSettings:
    """What the built-in tools need besides the security policy."""
    return ToolSettings(
        agent_alias=agent_alias,
        data_dir=config.data_dir,
        shell_timeout_secs=runtime.shell_timeout_secs,
        has_delegates=bool(agent.delegates),
        delegates=agent.delegates,
        scheduler_enabled=config.scheduler.enabled,
        conversation_id=run_id,
    )


def _assembly(
    config: ConfigSnapshot,
    agent_alias: str,
    request: PathRequest,
    security: SecurityPolicy,
    settings: ToolSettings,
    skills: tuple[LoadedSkill, ...],
    switches: _Switches,
) -> ScopedAssembly:
    """The input of step 8: the tool universe and the path's switches."""
    return ScopedAssembly(
        agent_alias=agent_alias,
        path=request.path,
        config=config,
        security=security,
        universe=build_universe(security, settings),
        settings=settings,
        skills=skills,
        caller_allowed=switches.caller_allowed,
        connect_mcp=switches.connect_mcp,
        connect_peripherals=switches.connect_peripherals,
        exclude_memory=switches.exclude_memory,
        acp_delivery=switches.acp_delivery,
        list_deferred_mcp_specs=switches.list_deferred_mcp_specs,
    )


def _approval_manager(risk: AutonomyConfig, switches: _Switches) -> ApprovalManager:
    """Step 9: a fresh, empty session allow-list [POL-APPROVE-11]."""
    return ApprovalManager(
        risk.level, risk.auto_approve, risk.always_ask, switches.interaction, switches.approver
    )


def _io(
    registry: ScopedToolRegistry,
    approval: ApprovalManager,
    switches: _Switches,
    agent: AgentConfig,
    agent_alias: str,
    workspace: Path,
    skills: tuple[LoadedSkill, ...],
) -> ResolvedIo:
    """Step 10 [POL-RESOLVE-14]: the system prompt, with the combined MCP block of MCP-PIN-05
    appended when either of its sections is non-empty."""
    instructions = tuple((s.name, s.instructions) for s in skills)
    deferred, pinned = registry.deferred_section, registry.pinned_section
    block = f"{deferred}\n\n{pinned}" if deferred or pinned else ""
    prompt = build_system_prompt(
        agent_alias, agent.system_prompt, workspace, instructions, mcp_block=block
    )
    return ResolvedIo(
        registry, approval, switches.interaction, prompt, deferred, pinned, registry.activated
    )


def _lineage(
    agent_alias: str,
    parent: ResolvedAgentExecution | None,
    switches: _Switches,
    run_id: str,
) -> ResolvedLineage:
    """Who runs, on whose behalf, how deep, on which surface (POL-DELEG-08)."""
    return ResolvedLineage(
        executing_agent=agent_alias,
        parent_agent=parent.agent_alias if parent else None,
        parent_run_id=parent.lineage.run_id if parent else None,
        depth=switches.depth,
        surface=switches.surface,
        run_id=run_id,
    )


def _tell_observers(execution: ResolvedAgentExecution) -> None:
    """[POL-RESOLVE-17] every registered observer sees the new execution."""
    with _observers_lock:
        observers = list(_observers)
    for callback in observers:
        callback(execution)


def _canonical_dir(path: Path) -> Path:
    """[ACP-NEW-14] create the agent workspace with its parents, then canonicalise it."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ResolveError(f"cannot create agent workspace {path}: {exc.strerror or exc}") from exc
    return path.resolve()
