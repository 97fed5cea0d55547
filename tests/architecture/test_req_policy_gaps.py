"""POL-RESOLVE-03 (every surface of a turn is computed inside `resolve()`) and POL-ACCESS-01
(two access predicates, each used for its own kinds of tool and never for the other's)
(policy.md §2.1, §6.1)."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from tests.architecture._imports import module_name, package_files
from tests.helpers.fake_mcp import FakeMcp, FakeServer
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import AutonomyConfig, ConfigSnapshot, McpServerConfig
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine import mcp_step
from zeroclaw_ref.engine import resolve as resolve_module
from zeroclaw_ref.engine.resolve import PathRequest, ResolvedAgentExecution, resolve
from zeroclaw_ref.policy.access import ToolAccessPolicy
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import ToolContext, ToolResult

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


SURFACES = (
    "tools.names",
    "approval.level",
    "approval.always_ask",
    "knobs.max_tool_iterations",
    "mcp.granted_servers",
    "memory.enabled",
    "skills.loaded",
    "assembly.connect_peripherals",
    "model.provider",
    "prompt.system",
)


@pytest.mark.req("POL-RESOLVE-03")
def test_the_same_request_gives_the_same_surfaces_whatever_the_caller_holds(
    tmp_path: Path,
) -> None:
    """Everything that shapes a turn follows from (config, alias, request) alone: the
    configuration change shows up in the surfaces, and nothing else does."""
    cfg = tmp_path / "cfg"
    (cfg / "agents" / "a" / "workspace" / "skills" / "s1").mkdir(parents=True)
    (cfg / "agents" / "a" / "workspace" / "skills" / "s1" / "SKILL.md").write_text("Skill.")
    text = (
        '[providers.demo]\nkind = "demo"\n[risk_profiles.r]\nalways_ask = ["shell"]\n'
        "[runtime_profiles.t]\nmax_tool_iterations = 5\n"
        '[agents.a]\nmodel_provider = "demo"\nrisk_profile = "r"\nruntime_profile = "t"\n'
        'system_prompt = "Be terse."\n'
    )
    (cfg / "config.toml").write_text(text)
    config = load_config(cfg, tmp_path / "data", {})
    first = resolve(config, "a", PathRequest("cli-run")).snapshot()
    second = resolve(config, "a", PathRequest("cli-run")).snapshot()
    assert {k: first[k] for k in SURFACES} == {k: second[k] for k in SURFACES}
    assert first["knobs.max_tool_iterations"] == 5 and first["approval.always_ask"] == ["shell"]
    assert first["skills.loaded"] == ["s1"] and "Be terse." in str(first["prompt.system"])
    (cfg / "config.toml").write_text(text.replace("= 5", "= 6"))
    changed = resolve(load_config(cfg, tmp_path / "data", {}), "a", PathRequest("cli-run"))
    assert changed.snapshot()["knobs.max_tool_iterations"] == 6


# --- POL-ACCESS-01 --------------------------------------------------------------------------


@pytest.mark.req("POL-ACCESS-01")
def test_the_two_predicates_exist_and_disagree_on_double_underscore_names(tmp_path: Path) -> None:
    profile = AutonomyConfig(allowed_tools=("shell",))
    security = SecurityPolicy.build(profile, tmp_path, tmp_path)
    access = ToolAccessPolicy(security.allowed_tools, security.excluded_tools, None)
    assert security.is_tool_allowed("shell") and access.is_tool_allowed("shell")
    assert not security.is_tool_allowed("file_read") and not access.is_tool_allowed("file_read")
    # the one place they differ: a `__` name is admitted only by the access policy
    assert not security.is_tool_allowed("srv__tool")
    assert access.is_tool_allowed("srv__tool")


@dataclasses.dataclass(frozen=True)
class OddBuiltin:
    """A stand-in built-in whose name happens to contain `__`."""

    name: str = "odd__builtin"
    description: str = "a built-in with a double underscore"
    act: bool = False

    @property
    def parameters(self) -> JSONObject:
        return {"type": "object", "properties": {}}

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        return ToolResult.ok("ran")


def _restricted(tmp_path: Path) -> ConfigSnapshot:
    cfg = tmp_path / "cfg"
    skill = cfg / "agents" / "a" / "workspace" / "skills" / "helper"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("A helper.")
    (skill / "SKILL.toml").write_text(
        '[[tools]]\nname = "greet"\ndescription = "Say hi"\ncommand = "echo hi"\n'
    )
    (cfg / "model.json").write_text(json.dumps({"turns": []}))
    (cfg / "config.toml").write_text(
        '[providers.demo]\nkind = "demo"\n'
        '[risk_profiles.r]\nallowed_tools = ["shell", "mcp_resources"]\n'
        "[runtime_profiles.t]\n"
        '[agents.a]\nmodel_provider = "demo"\nrisk_profile = "r"\nruntime_profile = "t"\n'
        'mcp_bundles = ["b"]\n'
        '[[mcp.servers]]\nname = "fs"\ncommand = "fake"\n'
        '[mcp_bundles.b]\nservers = ["fs"]\n'
    )
    return load_config(cfg, tmp_path / "data", {})


@pytest.mark.req("POL-ACCESS-01")
def test_builtins_are_filtered_by_the_security_policy_and_mcp_and_skill_tools_by_the_access_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_universe = resolve_module.build_universe

    def universe_with_odd_builtin(security: SecurityPolicy, settings: object) -> tuple[object, ...]:
        return (*real_universe(security, settings), OddBuiltin())  # type: ignore[arg-type]

    def connect(servers: tuple[McpServerConfig, ...], workspace: Path | None) -> FakeMcp:
        return FakeMcp({"fs": FakeServer(tools=[("read_file", "Read"), ("stat", "Stat")])})

    monkeypatch.setattr(resolve_module, "build_universe", universe_with_odd_builtin)
    monkeypatch.setattr(mcp_step, "connect_servers", connect)
    execution: ResolvedAgentExecution = resolve(_restricted(tmp_path), "a", PathRequest("cli-run"))
    try:
        names = execution.io.tools.names
        origin = execution.io.tools.origin
        # built-ins: exact names only, so the `__` built-in is not let in by the `__` rule
        assert origin.builtin == ("shell",)
        assert "odd__builtin" not in names
        # capability tools: plain names, listed exactly
        assert origin.capability == ("mcp_resources",)
        # MCP and skill tools: `__` names admitted without an entry
        assert set(origin.mcp) == {"fs__read_file", "fs__stat"}
        assert origin.skill == ("helper__greet",)
    finally:
        execution.close()
