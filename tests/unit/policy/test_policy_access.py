"""The two access predicates and the bundle grant (policy.md §2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import DEFAULT_AUTO_APPROVE
from zeroclaw_ref.policy.access import ToolAccessPolicy
from zeroclaw_ref.policy.approvals import ApprovalManager, Requirement
from zeroclaw_ref.policy.bundles import mcp_servers_for_agent

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
