"""The two access predicates and the bundle grant (policy.md §2); POL-ACCESS-01: each predicate
filters its own kinds of tool and never the other's (§2.1)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import (
    DEFAULT_AUTO_APPROVE,
    AutonomyConfig,
    ConfigSnapshot,
    McpServerConfig,
)
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine import mcp_step
from zeroclaw_ref.engine import resolve as resolve_module
from zeroclaw_ref.engine.resolve import PathRequest, ResolvedAgentExecution, resolve
from zeroclaw_ref.policy.access import ToolAccessPolicy
from zeroclaw_ref.policy.approvals import ApprovalManager, Requirement
from zeroclaw_ref.policy.bundles import mcp_servers_for_agent
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import ToolContext, ToolResult

PROFILE = ToolAccessPolicy(("file_read",), frozenset({"filesystem__write_file"}), None)


@pytest.mark.req("POL-ACCESS-04", "POL-ACCESS-05", "POL-ACCESS-08", "POL-ACCESS-10")
@pytest.mark.parametrize(
    ("policy", "name", "admitted"),
    [
        (PROFILE, "file_read", True),
        (PROFILE, "shell", False),
        (PROFILE, "filesystem__read_file", True),
        (PROFILE, "filesystem__write_file", False),
        (PROFILE, "mcp_resources", False),
        (PROFILE, "git__status", True),
        (PROFILE, "File_Read", False),
        (
            ToolAccessPolicy(("file_read",), frozenset(), frozenset({"cron_add"})),
            "filesystem__read_file",
            False,
        ),
        (ToolAccessPolicy(None, frozenset(), frozenset()), "file_read", False),
        (ToolAccessPolicy((), frozenset(), None), "a__b", False),
        (ToolAccessPolicy(None, frozenset(), None), "anything", True),
    ],
)
def test_the_access_table_of_section_2_1(
    policy: ToolAccessPolicy, name: str, admitted: bool
) -> None:
    assert policy.is_tool_allowed(name) is admitted


@pytest.mark.req("POL-ACCESS-11")
def test_only_a_policy_with_no_restriction_admits_everything() -> None:
    assert ToolAccessPolicy(None, frozenset(), None).admits_everything
    assert not ToolAccessPolicy(None, frozenset(), frozenset()).admits_everything
    assert not PROFILE.admits_everything


@pytest.mark.req(
    "POL-BUNDLE-01", "POL-BUNDLE-02", "POL-BUNDLE-03", "POL-BUNDLE-04", "POL-BUNDLE-05"
)
def test_bundles_grant_in_first_seen_order_and_deny_wins(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text(
        """
[[mcp.servers]]
name = "filesystem"
command = "x"
[[mcp.servers]]
name = "parallel"
transport = "http"
url = "https://example.invalid/mcp"
[[mcp.servers]]
name = "Other"
command = "y"
[mcp_bundles.files]
servers = ["filesystem", "ghost"]
[mcp_bundles.web]
servers = ["parallel", "filesystem", "other"]
exclude = ["filesystem"]
[providers.d]
kind = "demo"
[risk_profiles.r]
[runtime_profiles.r]
[agents.assistant]
model_provider = "d"
risk_profile = "r"
runtime_profile = "r"
mcp_bundles = ["files", "web", "missing"]
[agents.none]
model_provider = "d"
risk_profile = "r"
runtime_profile = "r"
"""
    )
    config = load_config(cfg, tmp_path / "data", {})
    assert [s.name for s in mcp_servers_for_agent(config, "assistant")] == ["parallel"]
    assert mcp_servers_for_agent(config, "none") == ()
    assert mcp_servers_for_agent(config, "ghost") == ()
    off = load_config(cfg, tmp_path / "data", {"ZEROCLAW_mcp__enabled": "false"})
    assert mcp_servers_for_agent(off, "assistant") == ()


@pytest.mark.req("POL-APPROVE-02", "POL-APPROVE-03", "POL-MCPT-02")
@pytest.mark.parametrize(
    ("auto_approve", "always_ask", "name", "expected"),
    [
        (("*",), (), "fs__write_file", Requirement.APPROVED),
        (("file_*",), (), "file_read", Requirement.PROMPT),
        (("fs__*",), (), "fs__read_file", Requirement.PROMPT),
        (("file_read",), ("*",), "file_read", Requirement.PROMPT),
        (("shell",), ("shell?",), "shell", Requirement.APPROVED),
        (("fs__read_file",), (), "fs__read_file", Requirement.APPROVED),
        (("read_file",), (), "fs__read_file", Requirement.PROMPT),
        (("fs__read_file",), (), "read_file", Requirement.PROMPT),
        (("notes__lookup",), (), "notes__lookup", Requirement.APPROVED),
        (DEFAULT_AUTO_APPROVE, (), "tool_search", Requirement.APPROVED),
        (DEFAULT_AUTO_APPROVE, (), "fs__read_file", Requirement.PROMPT),
    ],
)
def test_approval_lists_match_exact_names_and_only_the_star_wildcard(
    auto_approve: tuple[str, ...], always_ask: tuple[str, ...], name: str, expected: Requirement
) -> None:
    manager = ApprovalManager("supervised", auto_approve, always_ask, "none", None)
    assert manager.requirement(name) is expected


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
