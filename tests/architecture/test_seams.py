"""POL-RESOLVE-04: only the resolver mints executions, only the registry module mints
registries, and no front door builds tools, approval managers or security policies.
POL-RESOLVE-03: every surface of a turn is computed inside `resolve()` (policy.md §6.1)."""

from __future__ import annotations

import ast
import copy
import dataclasses
import pickle

import pytest

from tests.architecture._imports import PACKAGE as PACKAGE_DIR
from tests.architecture._imports import module_name, package_files
from zeroclaw_ref.engine.resolve import PathRequest, resolve

MINTERS = {
    "ResolvedAgentExecution": {"zeroclaw_ref.engine.resolve"},
    "ScopedToolRegistry": {"zeroclaw_ref.engine.registry"},
    "ApprovalManager": {"zeroclaw_ref.engine.resolve"},
    "ScopedAssembly": {"zeroclaw_ref.engine.resolve"},
}
FRONT_DOOR_FORBIDDEN = (
    "SecurityPolicy",
    "SecurityPolicy.build",
    "build_universe",
    "ApprovalManager",
    "ScopedToolRegistry.assemble",
)
FRONT_DOORS = ("zeroclaw_ref.acp", "zeroclaw_ref.cli", "zeroclaw_ref.gateway", "zeroclaw_ref.cron")


def _calls() -> list[tuple[str, str, int]]:
    """Every call as (module, callee, line); `Owner.method` calls are named with their owner."""
    found = []
    for path in package_files():
        mod = module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                    found.append((mod, f"{func.value.id}.{func.attr}", node.lineno))
                found.append((mod, name, node.lineno))
    return found


@pytest.mark.req("POL-RESOLVE-04")
def test_sealed_values_are_constructed_only_in_their_seam_module() -> None:
    bad = [
        f"{mod}:{line} constructs {name}"
        for mod, name, line in _calls()
        if name in MINTERS and mod not in MINTERS[name]
    ]
    assert not bad, bad


@pytest.mark.req("POL-RESOLVE-04", "POL-PATH-01")
def test_front_doors_build_no_tools_or_policies() -> None:
    bad = [
        f"{mod}:{line} calls {name}"
        for mod, name, line in _calls()
        if mod.startswith(FRONT_DOORS) and name in FRONT_DOOR_FORBIDDEN
    ]
    assert not bad, bad


@pytest.mark.req("POL-ASSEMBLE-01", "POL-ASSEMBLE-02")
def test_registry_refuses_construction_copy_and_pickle(execution: object) -> None:
    from zeroclaw_ref.engine.registry import ScopedToolRegistry

    message = "ScopedToolRegistry can only be created by ScopedToolRegistry.assemble()"
    with pytest.raises(TypeError, match=message):
        ScopedToolRegistry(object(), (), None, "", "")  # type: ignore[arg-type]
    registry = execution.io.tools  # type: ignore[attr-defined]
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match=message):
            attempt(registry)


@pytest.mark.req("POL-RESOLVE-01", "POL-RESOLVE-02", "POL-ENGINE-01")
def test_execution_refuses_every_other_way_of_being_made(execution: object) -> None:
    from zeroclaw_ref.core.cancel import CancelToken
    from zeroclaw_ref.core.ids import RandomIds
    from zeroclaw_ref.engine.execution import ResolvedAgentExecution, is_minted
    from zeroclaw_ref.engine.turn import TurnEngine

    message = "ResolvedAgentExecution can only be created by resolve()"
    assert is_minted(execution)
    with pytest.raises(TypeError, match=message):
        dataclasses.replace(execution)  # type: ignore[type-var]
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match=message):
            attempt(execution)
    fields = {f.name: getattr(execution, f.name) for f in dataclasses.fields(execution)}  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=message):
        ResolvedAgentExecution(**fields)
    with pytest.raises(TypeError, match="minted by resolve"):
        TurnEngine(RandomIds()).run_turn(object(), [], "hi", lambda e: None, CancelToken())  # type: ignore[arg-type]


@pytest.fixture
def execution(tmp_path):  # type: ignore[no-untyped-def]
    from zeroclaw_ref.config.load import load_config
    from zeroclaw_ref.engine.resolve import PathRequest

    config = load_config(tmp_path / "cfg", tmp_path / "data", {})
    return resolve(config, "default", PathRequest("cli-run"))


@pytest.mark.req("ACP-REAP-04")
def test_the_gateway_never_reaps_idle_sessions() -> None:
    reaper_names = {"reap_idle", "_reap_loop"}
    found = []
    for path in package_files():
        if "zeroclaw_ref/gateway/" not in path.as_posix():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = getattr(node, "attr", None) or getattr(node, "id", None)
            if name in reaper_names:
                found.append(f"{path.name}:{node.lineno} {name}")
    assert not found, found
    server = ast.parse((PACKAGE_DIR / "acp" / "server.py").read_text(encoding="utf-8"))
    # the names above must still be the reaper's, or this test would pass vacuously
    assert "reap_idle" in {n.name for n in ast.walk(server) if isinstance(n, ast.FunctionDef)}


RESOLVER = "zeroclaw_ref.engine.resolve"
REGISTRY = "zeroclaw_ref.engine.registry"


# Each builder of a turn surface, and the only modules allowed to call it: the resolver, the
# registry's assemble() (which only resolve() calls, POL-RESOLVE-04), and the component that
# owns the builder. Configuration validation may compute the effective profile to check it.
SURFACE_BUILDERS: dict[str, set[str]] = {
    "effective_profile": {RESOLVER, "zeroclaw_ref.config.validate"},  # approvals, security
    "SecurityPolicy.build": {RESOLVER},
    "build_universe": {RESOLVER},  # tools
    "ScopedToolRegistry.assemble": {RESOLVER},
    "ApprovalManager": {RESOLVER},  # approvals
    "ResolvedRuntimeKnobs": {RESOLVER},  # runtime knobs
    "create_provider": {RESOLVER},  # model access
    "ResolvedModelAccess": {RESOLVER},
    "mcp_servers_for_agent": {RESOLVER, REGISTRY},  # MCP scope
    "ResolvedMcpScope": {RESOLVER},
    "connect_servers": {REGISTRY},
    "memory_path": {RESOLVER, "zeroclaw_ref.tools.memory"},  # memory
    "ResolvedMemory": {RESOLVER},
    "load_skills": {RESOLVER},  # skills
    "skill_tools": {REGISTRY},
    "build_skill_tools": {REGISTRY},
    "peripheral_tools": {REGISTRY},  # peripherals
    "build_system_prompt": {RESOLVER},  # the system prompt
    "ResolvedIo": {RESOLVER},
}


def _callees() -> list[tuple[str, str, int]]:
    """Every call as (module, callee, line), both `name` and `Owner.attr` forms."""
    found = []
    for path in package_files():
        mod = module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name):
                found.append((mod, func.id, node.lineno))
            elif isinstance(func, ast.Attribute):
                found.append((mod, func.attr, node.lineno))
                if isinstance(func.value, ast.Name):
                    found.append((mod, f"{func.value.id}.{func.attr}", node.lineno))
    return found


@pytest.mark.req("POL-RESOLVE-03")
def test_no_construction_path_computes_a_turn_surface_itself() -> None:
    calls = _callees()
    bad = [
        f"{mod}:{line} calls {name}"
        for mod, name, line in calls
        if name in SURFACE_BUILDERS and mod not in SURFACE_BUILDERS[name]
    ]
    assert not bad, bad
    # and the resolver really does compute each of them itself (the list is not stale)
    in_resolver = {name for mod, name, _ in calls if mod == RESOLVER}
    owned = {n for n, mods in SURFACE_BUILDERS.items() if RESOLVER in mods}
    assert owned <= in_resolver, owned - in_resolver


@pytest.mark.req("POL-RESOLVE-03")
def test_construction_paths_get_their_execution_from_resolve_and_can_say_only_their_own_part() -> (
    None
):
    # What a path may tell resolve(): its name and what only it knows; no field can carry a
    # tool list, an approval manager, knobs, MCP servers, memory, skills, a model or a prompt.
    fields = {f.name for f in dataclasses.fields(PathRequest)}
    assert fields == {
        "path",
        "approver",
        "caller_allowed",
        "session_workspace",
        "parent",
        "interactive",
    }
    callers = {mod for mod, name, _ in _callees() if name == "resolve" and mod != RESOLVER}
    paths = {
        "zeroclaw_ref.acp.server",
        "zeroclaw_ref.cli.agent",
        "zeroclaw_ref.cli.mcp_cmd",
        "zeroclaw_ref.gateway.api",
        "zeroclaw_ref.cron.scheduler",
        "zeroclaw_ref.engine.delegation",
    }
    assert paths <= callers, paths - callers
