"""Which MCP servers an agent's execution connects, and when (mcp.md §1.1), and what of a
server's handshake reaches the agent's prompt (§1.3): `resolve()` with the connector replaced,
except where a real scripted server is needed."""

from __future__ import annotations

import json
import logging
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from tests.unit.mcp.conftest import SERVER, Connect, stdio_config
from zeroclaw_ref.config import write
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigSnapshot, McpServerConfig
from zeroclaw_ref.config.store import ConfigStore
from zeroclaw_ref.engine import mcp_step
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import PathRequest, resolve

# --- §1.1 which servers, when ------------------------------------------------------------

AGENTS = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
[runtime_profiles.r]
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["b"]
[agents.n]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
[mcp]
enabled = {enabled}
[[mcp.servers]]
name = "fs"
command = "fake"
[[mcp.servers]]
name = "web"
command = "fake"
tool_timeout_secs = {timeout}
[mcp_bundles.b]
servers = {granted}
"""


def _agents(cfg: Path, enabled: bool = True, granted: str = '["web"]', timeout: int = 10) -> None:
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "model.json").write_text(json.dumps({"turns": [{"chunks": ["ok"]}]}))
    text = AGENTS.format(enabled=str(enabled).lower(), granted=granted, timeout=timeout)
    (cfg / "config.toml").write_text(text)


class Connector:
    """Stands in for `connect_servers` and records what each build asked for."""

    def __init__(self) -> None:
        self.asked: list[tuple[McpServerConfig, ...]] = []

    def __call__(self, servers: tuple[McpServerConfig, ...], workspace: Path | None) -> FakeMcp:
        self.asked.append(servers)
        return FakeMcp({s.name: FakeServer(tools=[(f"{s.name}_tool", "t")]) for s in servers})

    def names(self) -> list[tuple[str, ...]]:
        return [tuple(s.name for s in servers) for servers in self.asked]


@pytest.fixture
def connector(monkeypatch: pytest.MonkeyPatch) -> Connector:
    fake = Connector()
    monkeypatch.setattr(mcp_step, "connect_servers", fake)
    return fake


def _build(config: ConfigSnapshot, alias: str = "a") -> ResolvedAgentExecution:
    return resolve(config, alias, PathRequest("cli-run"))


def _mcp_names(execution: ResolvedAgentExecution) -> list[str]:
    return [n for n in execution.io.tools.names if "__" in n]


@pytest.mark.req("MCP-LIFE-01")
def test_disabled_mcp_loads_no_server_and_keeps_the_definitions(
    tmp_path: Path, connector: Connector
) -> None:
    cfg = tmp_path / "cfg"
    _agents(cfg, granted='["fs", "web"]')
    before = tomllib.loads((cfg / "config.toml").read_text())["mcp"]["servers"]
    write.set_text(cfg, "mcp.enabled", "false")
    after = tomllib.loads((cfg / "config.toml").read_text())["mcp"]
    assert after["enabled"] is False and after["servers"] == before  # definitions untouched
    snapshot = load_config(cfg, tmp_path / "data", {})
    assert [s.name for s in snapshot.mcp.servers] == ["fs", "web"]
    execution = _build(snapshot)
    try:
        assert connector.asked == [] and _mcp_names(execution) == []
        assert execution.snapshot()["mcp.connected"] is False
    finally:
        execution.close()
    write.set_text(cfg, "mcp.enabled", "true")  # switching back brings the same servers
    execution = _build(load_config(cfg, tmp_path / "data", {}))
    execution.close()
    assert connector.names() == [("fs", "web")]


@pytest.mark.req("MCP-LIFE-02")
def test_an_agent_connects_only_the_servers_its_bundles_grant(
    tmp_path: Path, connector: Connector
) -> None:
    _agents(tmp_path / "cfg")
    snapshot = load_config(tmp_path / "cfg", tmp_path / "data", {})
    granted = _build(snapshot, "a")
    bare = _build(snapshot, "n")
    try:
        assert connector.names() == [("web",)]  # agent n, without bundles, asked for nothing
        assert _mcp_names(granted) == ["web__web_tool"]
        assert _mcp_names(bare) == [] and bare.snapshot()["mcp.connected"] is False
    finally:
        granted.close()
        bare.close()


@pytest.mark.req("MCP-LIFE-05", "MCP-CFG-12")
def test_edits_reach_only_executions_built_after_them(tmp_path: Path, connector: Connector) -> None:
    cfg = tmp_path / "cfg"
    _agents(cfg, granted='["web"]', timeout=10)
    store = ConfigStore(cfg, tmp_path / "data", {})
    running = _build(store.snapshot())
    try:
        _agents(cfg, granted='["fs", "web"]', timeout=20)  # edited while `running` is active
        running.io.tools.refresh_mcp()  # a between-turn refresh does not re-read the file
        assert _mcp_names(running) == ["web__web_tool"]
        assert connector.names() == [("web",)]  # nothing reconnected for the running one
        assert running.assembly.config.mcp.servers[1].tool_timeout_secs == 10
        restarted = _build(store.snapshot())
        try:
            assert connector.names() == [("web",), ("fs", "web")]
            assert connector.asked[0][0].tool_timeout_secs == 10
            assert connector.asked[1][1].tool_timeout_secs == 20
            assert _mcp_names(restarted) == ["fs__fs_tool", "web__web_tool"]
        finally:
            restarted.close()
        assert _mcp_names(running) == ["web__web_tool"]
    finally:
        running.close()


@pytest.mark.req("MCP-INIT-09")
def test_server_info_is_logged_and_instructions_kept_but_not_prompted(
    connect: Connect, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="zeroclaw_ref.mcp"):
        reg = connect(stdio_config())
    info = [
        r for r in caplog.records if r.levelno == logging.INFO and "serverInfo" in r.getMessage()
    ]
    assert [r.getMessage() for r in info] == [
        'MCP server `peer` serverInfo {"name":"scripted","version":"1"}'
    ]
    assert reg.connection("peer").instructions == "be nice"
    # a whole execution with the same server: its prompt has MCP sections but no instructions
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "model.json").write_text(json.dumps({"turns": [{"chunks": ["ok"]}]}))
    (cfg / "config.toml").write_text(
        AGENTS.split("[mcp]")[0]
        + '[mcp]\ndeferred_loading = true\n[[mcp.servers]]\nname = "peer"\n'
        f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVER))}]\n"
        'pinned_resources = ["test://doc/0"]\n[mcp_bundles.b]\nservers = ["peer"]\n'
    )
    execution = _build(load_config(cfg, tmp_path / "data", {}))
    try:
        prompt = execution.io.system_prompt
        assert execution.io.deferred_section and execution.io.deferred_section in prompt
        assert "body of test://doc/0" in prompt  # the pinned section made it in
        assert "be nice" not in prompt
    finally:
        execution.close()
