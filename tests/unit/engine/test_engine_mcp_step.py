"""Step 4 of `assemble()` and the MCP parts of `resolve()` (policy.md §5.2, §6.3; mcp.md §9,
§10.3), driven through `resolve()` with a fake registry in place of real connections."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigSnapshot, McpServerConfig
from zeroclaw_ref.engine import mcp_step
from zeroclaw_ref.engine import resolve as resolve_module
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.tools.catalogue import CATALOGUE_ORDER

BUILTINS = tuple(n for n in CATALOGUE_ORDER if n not in ("deliver_file", "delegate"))
CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
{profile}
[runtime_profiles.r]
{runtime}
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["b"]
[mcp]
deferred_loading = {deferred}
[[mcp.servers]]
name = "fs"
command = "fake"
pinned_resources = ["file:///hand.md", "file:///missing.md"]
[[mcp.servers]]
name = "web"
command = "fake"
[mcp_bundles.b]
servers = ["fs", "web"]
"""


class Connector:
    """Stands in for `connect_servers`: records what was asked and hands out FakeMcp."""

    def __init__(self) -> None:
        self.opened: list[FakeMcp] = []
        self.asked: list[tuple[str, ...]] = []

    def __call__(self, servers: tuple[McpServerConfig, ...], workspace: Path | None) -> FakeMcp:
        self.asked.append(tuple(s.name for s in servers))
        fake = FakeMcp(
            {
                "fs": FakeServer(
                    tools=[("read_file", "Read a file"), ("write_file", "Write"),
                           ("file_read", "clashes with nothing")],
                    resources=[],
                    contents={"file:///hand.md": {"contents": [
                        {"uri": "file:///hand.md", "mimeType": "text/markdown", "text": "# Hand"}
                    ]}},
                ),
                "web": FakeServer(tools=[("search", "Search the web")]),
            }
        )  # fmt: skip
        self.opened.append(fake)
        return fake


@pytest.fixture
def connector(monkeypatch: pytest.MonkeyPatch) -> Iterator[Connector]:
    fake = Connector()
    monkeypatch.setattr(mcp_step, "connect_servers", fake)
    yield fake


def _config(
    root: Path, profile: str = "", deferred: bool = False, runtime: str = ""
) -> ConfigSnapshot:
    cfg = root / "cfg"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "model.json").write_text(json.dumps({"turns": [{"chunks": ["ok"]}]}))
    text = CONFIG.format(profile=profile, deferred=str(deferred).lower(), runtime=runtime)
    (cfg / "config.toml").write_text(text)
    return load_config(cfg, root / "data", {})


def _cli(config: ConfigSnapshot) -> ResolvedAgentExecution:
    return resolve(config, "a", PathRequest("cli-run"))


@pytest.mark.req("POL-ASSEMBLE-12", "POL-ASSEMBLE-18", "POL-ASSEMBLE-08", "MCP-NAME-08")
@pytest.mark.req("MCP-DEFER-01", "MCP-RES-01", "POL-RESOLVE-16")
def test_eager_mode_registers_capability_tools_then_mcp_tools_in_grant_order(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["fs__write_file"]'))
    assert execution.io.tools.names == (
        *BUILTINS, "mcp_resources", "mcp_prompts", "fs__read_file", "fs__file_read", "web__search",
    )  # fmt: skip
    snap = execution.snapshot()
    assert snap["tools.capability"] == ["mcp_prompts", "mcp_resources"]
    assert snap["tools.mcp"] == ["fs__file_read", "fs__read_file", "web__search"]
    assert snap["tools.mcp_deferred"] == [] and snap["tools.tool_search"] is False
    assert (snap["mcp.connected"], snap["mcp.mode"]) == (True, "eager")
    assert snap["mcp.granted_servers"] == ["fs", "web"]
    assert connector.asked == [("fs", "web")]


@pytest.mark.req("POL-ACCESS-04", "MCP-POL-01", "MCP-POL-02")
def test_a_non_empty_allowlist_admits_mcp_names_but_not_the_plain_capability_names(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'allowed_tools = ["file_read", "mcp_prompts"]'))
    assert execution.io.tools.names == (
        "file_read", "mcp_prompts", "fs__read_file", "fs__write_file", "fs__file_read",
        "web__search",
    )  # fmt: skip


@pytest.mark.req("POL-ASSEMBLE-17", "POL-ASSEMBLE-08")
def test_deny_all_mints_an_empty_registry_and_contacts_no_server(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, "deny_all_tools = true"))
    assert execution.io.tools.names == ()
    assert (execution.io.deferred_section, execution.io.pinned_section) == ("", "")
    assert connector.asked == []


@pytest.mark.req("POL-PATH-04", "POL-BUNDLE-05", "POL-ASSEMBLE-08")
def test_an_acp_session_without_opt_in_never_connects(tmp_path: Path, connector: Connector) -> None:
    class Approver:
        def approve(self, tool: str, arguments: object, cancel: object) -> object:
            raise AssertionError

    ws = tmp_path / "session"
    ws.mkdir()
    execution = resolve(
        _config(tmp_path),
        "a",
        PathRequest("acp", approver=Approver(), session_workspace=ws),  # type: ignore[arg-type]
    )
    assert connector.asked == []
    snap = execution.snapshot()
    # the mode stays the configured one on every path (policy.md §7.3); only the connection differs
    assert (snap["mcp.connected"], snap["mcp.mode"], snap["tools.capability"]) == (
        False, "eager", [],
    )  # fmt: skip


@pytest.mark.req("POL-ASSEMBLE-10", "MCP-DEFER-02", "MCP-DEFER-03", "MCP-DEFER-06")
@pytest.mark.req("POL-RESOLVE-14", "MCP-PIN-04", "MCP-PIN-05")
def test_deferred_mode_registers_tool_search_and_puts_names_in_the_prompt(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["fs__write_file"]', deferred=True))
    names = execution.io.tools.names
    assert names[-3:] == ("mcp_resources", "mcp_prompts", "tool_search")
    snap = execution.snapshot()
    assert snap["tools.mcp"] == [] and snap["tools.tool_search"] is True
    assert snap["tools.mcp_deferred"] == ["fs__file_read", "fs__read_file", "web__search"]
    assert snap["mcp.mode"] == "deferred"
    deferred = execution.io.deferred_section
    assert deferred.endswith(
        "<available-deferred-tools>\nfs__read_file\nfs__file_read\nweb__search\n"
        "</available-deferred-tools>\n"
    )
    pinned = execution.io.pinned_section
    assert pinned == (
        "## Pinned MCP Resources\n\n"
        '<mcp-resource server="fs" uri="fs__file:///hand.md" mime="text/markdown" '
        'trust="untrusted-external">\n# Hand\n</mcp-resource>\n'
    )
    assert execution.io.system_prompt.endswith(f"\n\n{deferred}\n\n{pinned}")
    assert execution.io.activated is not None and execution.io.activated.names() == ()


@pytest.mark.req("POL-ASSEMBLE-16", "MCP-DEFER-08")
def test_excluding_tool_search_clears_the_deferred_section_but_keeps_the_pins(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["tool_search"]', deferred=True))
    assert "tool_search" not in execution.io.tools.names
    assert execution.io.deferred_section == ""
    assert execution.io.pinned_section.startswith("## Pinned MCP Resources")
    assert execution.io.system_prompt.endswith("\n\n\n\n" + execution.io.pinned_section)


@pytest.mark.req("POL-ASSEMBLE-11", "MCP-DEFER-07", "POL-PATH-11")
def test_listing_mode_presents_admitted_stubs_as_ordinary_tools(
    tmp_path: Path, connector: Connector
) -> None:
    execution = resolve(_config(tmp_path, deferred=True), "a", PathRequest("gateway-tools"))
    names = execution.io.tools.names
    assert "tool_search" not in names
    assert names[-4:] == ("fs__read_file", "fs__write_file", "fs__file_read", "web__search")
    assert execution.io.deferred_section == ""
    assert execution.snapshot()["mcp.mode"] == "listing"


@pytest.mark.req("MCP-TFG-07")
def test_always_groups_pre_activate_in_deferred_mode_and_leave_the_section(
    tmp_path: Path, connector: Connector
) -> None:
    runtime = (
        '[[runtime_profiles.r.tool_filter_groups]]\nmode = "always"\ntools = ["web__*"]\n'
        '[[runtime_profiles.r.tool_filter_groups]]\nmode = "dynamic"\ntools = ["fs__*"]\n'
        'keywords = ["file"]\n'
    )
    execution = _cli(_config(tmp_path, deferred=True, runtime=runtime))
    assert execution.io.activated is not None
    assert execution.io.activated.names() == ("web__search",)
    assert "web__search" not in execution.io.deferred_section
    assert "fs__read_file\n" in execution.io.deferred_section


@pytest.mark.req("MCP-PIN-01", "MCP-PIN-02", "MCP-PIN-03")
def test_pins_are_read_once_and_denied_or_failed_pins_are_skipped(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["fs__file:///hand.md"]'))
    assert execution.io.pinned_section == ""
    reads = [c for c in connector.opened[0].calls if c[0] == "resources/read"]
    assert reads == [("resources/read", "fs__file:///missing.md")]  # the denied pin is not read


@pytest.mark.req("POL-RESOLVE-15", "POL-ASSEMBLE-19")
def test_close_releases_the_connections_once(tmp_path: Path, connector: Connector) -> None:
    execution = _cli(_config(tmp_path))
    execution.close()
    execution.close()
    assert connector.opened[0].closed == 1


@pytest.mark.req("POL-RESOLVE-09")
def test_a_failure_after_assembly_releases_the_connections(
    tmp_path: Path, connector: Connector, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("prompt failed")

    monkeypatch.setattr(resolve_module, "build_system_prompt", broken)
    with pytest.raises(RuntimeError):
        _cli(_config(tmp_path))
    assert connector.opened[0].closed == 1


@pytest.mark.req("MCP-DISC-18", "POL-ASSEMBLE-02", "MCP-DISC-19")
def test_a_refresh_between_turns_rebuilds_the_mcp_part_under_the_same_policy(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["web__new_denied"]'))
    fake = connector.opened[0]
    fake.servers["web"].tools = [("new_denied", ""), ("fetch", "Fetch")]
    execution.io.tools.refresh_mcp()
    assert execution.io.tools.names[-4:] == (
        "fs__read_file", "fs__write_file", "fs__file_read", "web__fetch",
    )  # fmt: skip
    assert "web__fetch" in execution.snapshot()["tools.mcp"]
    assert execution.io.tools.get("web__search") is None


@pytest.mark.req("CFG-RUNTIME-02")
def test_an_always_group_never_admits_a_denied_tool(tmp_path: Path, connector: Connector) -> None:
    runtime = '[[runtime_profiles.r.tool_filter_groups]]\nmode = "always"\ntools = ["fs__*"]\n'
    config = _config(
        tmp_path, 'excluded_tools = ["fs__write_file"]', deferred=True, runtime=runtime
    )
    execution = _cli(config)
    assert execution.io.activated is not None
    activated = execution.io.activated.names()
    assert "fs__read_file" in activated and "fs__write_file" not in activated
    assert "fs__write_file" not in execution.io.tools.names
