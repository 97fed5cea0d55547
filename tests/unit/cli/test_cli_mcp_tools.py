"""`zeroclaw_ref mcp tools --agent ALIAS` (the gateway-tools listing, policy.md POL-PATH-11)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from zeroclaw_ref.cli.mcp_cmd import run_mcp_tools
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.engine import mcp_step

CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
allowed_tools = ["file_read"]
[runtime_profiles.r]
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["b"]
[mcp]
deferred_loading = true
[[mcp.servers]]
name = "fs"
command = "fake"
[mcp_bundles.b]
servers = ["fs"]
"""


@pytest.mark.req("POL-PATH-11", "MCP-DEFER-07")
def test_the_listing_shows_deferred_stubs_as_tools_and_closes_its_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeMcp({"fs": FakeServer(tools=[("read_file", "Read a file\nmore")])})

    def connect(servers: tuple[McpServerConfig, ...], workspace: Path | None) -> FakeMcp:
        return fake

    monkeypatch.setattr(mcp_step, "connect_servers", connect)
    (tmp_path / "model.json").write_text('{"turns": []}')
    (tmp_path / "config.toml").write_text(CONFIG)
    config = load_config(tmp_path, tmp_path / "data", {})
    out, err = io.StringIO(), io.StringIO()
    assert run_mcp_tools(config, "a", False, out, err) == 0
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["file_read", "fs__read_file"]
    assert lines[1] == "fs__read_file  Read a file"
    assert fake.closed == 1
    out = io.StringIO()
    assert run_mcp_tools(config, None, True, out, err) == 0
    body = json.loads(out.getvalue())
    assert body["agent"] == "a" and body["tools"][1]["name"] == "fs__read_file"


@pytest.mark.req("POL-PATH-10", "POL-RESOLVE-07")
def test_an_unknown_agent_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text('{"turns": []}')
    (tmp_path / "config.toml").write_text(CONFIG)
    config = load_config(tmp_path, tmp_path / "data", {})
    out, err = io.StringIO(), io.StringIO()
    assert run_mcp_tools(config, "ghost", False, out, err) == 1
    assert err.getvalue().startswith("ERROR: Unknown agent `ghost`")
    assert out.getvalue() == ""


ERA_CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
allowed_tools = ["file_read"]
[runtime_profiles.r]
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["b"]
[[mcp.servers]]
name = "m"
command = {python}
args = [{modern}]
[[mcp.servers]]
name = "l"
command = {python}
args = [{legacy}]
[[mcp.servers]]
name = "f"
command = {python}
args = [{legacy}]
era = "legacy"
[mcp_bundles.b]
servers = ["m", "l", "f"]
"""


@pytest.mark.req("MCP-MOD-03", "MCP-MOD-01")
def test_the_json_listing_names_the_era_of_each_granted_server(tmp_path: Path) -> None:
    import sys

    from zeroclaw_ref.mcp import era

    helpers = Path(__file__).resolve().parents[2] / "helpers"
    text = ERA_CONFIG.format(
        python=json.dumps(sys.executable),
        modern=json.dumps(str(helpers / "fake_mcp_modern.py")),
        legacy=json.dumps(str(helpers / "mcp_server.py")),
    )
    (tmp_path / "model.json").write_text('{"turns": []}')
    (tmp_path / "config.toml").write_text(text)
    config = load_config(tmp_path, tmp_path / "data", {})
    era.clear()
    out, err = io.StringIO(), io.StringIO()
    try:
        assert run_mcp_tools(config, "a", True, out, err) == 0, err.getvalue()
    finally:
        era.clear()
    servers = json.loads(out.getvalue())["servers"]
    assert servers == [
        {"name": "m", "era": "modern", "protocolVersion": "2026-07-28", "detected": True},
        {"name": "l", "era": "legacy", "protocolVersion": "2025-11-25", "detected": True},
        {"name": "f", "era": "legacy", "protocolVersion": "2025-11-25", "detected": False},
    ]
