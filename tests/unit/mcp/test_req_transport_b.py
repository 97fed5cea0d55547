"""Configuration, lifecycle, handshake, timeout and version rules of mcp.md (§1, §6.1, §7.1,
§12): validation texts, secrets at rest, which servers an agent connects and when, what the
handshake keeps, and how deadlines bound every step."""

from __future__ import annotations

import json
import logging
import sys
import threading
import tomllib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp import FakeMcp, FakeServer
from tests.helpers.fake_mcp_http import (
    FakeMcpHttp,
    Handler,
    Script,
    https_fake,
    message_event,
    script_for,
    text_result,
)
from tests.helpers.mcp_calls import call, text_of
from tests.unit.mcp.conftest import FAST, SERVER, Connect, stdio_config
from zeroclaw_ref.config import write
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import MASK, ConfigError, ConfigSnapshot, McpServerConfig
from zeroclaw_ref.config.store import ConfigStore
from zeroclaw_ref.config.view import get_leaf, read_view, render_json, render_text
from zeroclaw_ref.engine import mcp_step
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpError,
    McpOptions,
    McpTimeoutError,
    accept_with_defaults,
    format_result_for_model,
)
from zeroclaw_ref.mcp.lifecycle import State

OPTS = McpOptions(init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5, close_grace_s=1)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp()
    yield server
    script_for(server).release.set()
    server.close()


def http_config(fake: FakeMcpHttp, **fields: Any) -> McpServerConfig:
    return McpServerConfig(name="h", transport="http", url=fake.url, **fields)


def recorded(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- §12 validation of [[mcp.servers]] ---------------------------------------------------

GOOD = "[[mcp.servers]]\nname = 'ok'\ncommand = 'x'\n"  # index 0, so the bad entry is [1]
BUNDLE = "[mcp_bundles.b]\nservers = []\n"

VALIDATION = [
    ("MCP-CFG-01", "name = '   '\ncommand = 'x'", ["mcp.servers[1].name must not be empty"]),
    ("MCP-CFG-02", "name = 'OK'\ncommand = 'y'", ["mcp.servers contains duplicate name: OK"]),
    (
        "MCP-CFG-04",
        "name = 'a'\ncommand = ' \t'",
        ["mcp.servers[1] with transport=stdio requires non-empty command"],
    ),
    (
        "MCP-CFG-05",
        "name = 'a'\ntransport = 'http'",
        ["mcp.servers[1] with transport=http requires url"],
    ),
    (
        "MCP-CFG-05",
        "name = 'a'\ntransport = 'sse'\nurl = '  '",
        ["mcp.servers[1] with transport=sse requires url"],
    ),
    (
        "MCP-CFG-06",
        "name = 'a'\ntransport = 'http'\nurl = 'https://'",
        ["mcp.servers[1].url is not a valid URL"],
    ),
    (
        "MCP-CFG-06",
        "name = 'a'\ntransport = 'sse'\nurl = 'no scheme here'",
        ["mcp.servers[1].url is not a valid URL"],
    ),
    (
        "MCP-CFG-06",
        "name = 'a'\ntransport = 'http'\nurl = 'ws://h/mcp'",
        ["mcp.servers[1].url must use http/https"],
    ),
    (
        "MCP-CFG-07",
        "name = 'a'\ntransport = 'http'\nurl = 'https://h'\n"
        "headers = { 'X(y)' = 'v', Ok = 'fine', Cr = \"tok-AAA\\r\", Lf = \"tok-BBB\\n\", "
        'Nul = "tok-CCC\\u0000" }',
        [
            "mcp.servers[1].headers contains an invalid header `Cr`",
            "mcp.servers[1].headers contains an invalid header `Lf`",
            "mcp.servers[1].headers contains an invalid header `Nul`",
            "mcp.servers[1].headers contains an invalid header `X(y)`",
        ],
    ),
    (
        "MCP-CFG-08",
        "name = 'a'\ncommand = 'x'\ntool_timeout_secs = 0",
        ["mcp.servers[1].tool_timeout_secs must be greater than 0"],
    ),
    (
        "MCP-CFG-08",
        "name = 'a'\ncommand = 'x'\ntool_timeout_secs = -3",
        ["mcp.servers[1].tool_timeout_secs must be greater than 0"],
    ),
    (
        "MCP-CFG-08",
        "name = 'a'\ncommand = 'x'\ntool_timeout_secs = 601",
        ["mcp.servers[1].tool_timeout_secs exceeds max 600"],
    ),
    (
        "MCP-CFG-09",
        "name = 'a'\ntransport = 'http'\nurl = 'https://h'\ntls_ca_cert_path = '  '",
        ["mcp.servers[1].tls_ca_cert_path must not be empty"],
    ),
    (
        "MCP-CFG-09",
        "name = 'a'\ntransport = 'sse'\nurl = 'https://h'\ntls_ca_cert_path = 'certs/ca.pem'",
        ["mcp.servers[1].tls_ca_cert_path must be an absolute path"],
    ),
    (
        "MCP-CFG-10",
        "name = 'a'\ntransport = 'http'\nurl = 'http://h/mcp'\ntls_ca_cert_path = '/etc/ca.pem'",
        ["mcp.servers[1].url must use https when tls_ca_cert_path is set"],
    ),
    (
        "MCP-CFG-10",
        "name = 'a'\ntransport = 'sse'\nurl = 'http://h/sse'\ntls_ca_cert_path = '/etc/ca.pem'",
        ["mcp.servers[1].url must use https when tls_ca_cert_path is set"],
    ),
]


def _load(root: Path, text: str) -> ConfigSnapshot:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.toml").write_text(text, encoding="utf-8")
    return load_config(root, root / "data", {})


# Constant citations of the per-row IDs above, for tools/req_coverage.py.
@pytest.mark.req(
    "MCP-CFG-01", "MCP-CFG-02", "MCP-CFG-04", "MCP-CFG-05", "MCP-CFG-06", "MCP-CFG-07",
    "MCP-CFG-08", "MCP-CFG-09", "MCP-CFG-10",
)  # fmt: skip
@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param(t, e, marks=pytest.mark.req(r), id=f"{r}-{i}")
        for i, (r, t, e) in enumerate(VALIDATION)
    ],
)
def test_server_entries_are_validated_with_exact_texts(
    tmp_path: Path, entry: str, expected: list[str]
) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, f"{GOOD}[[mcp.servers]]\n{entry}\n{BUNDLE}")
    assert list(info.value.lines) == expected
    assert not any("tok-" in line for line in info.value.lines)  # values are never printed


@pytest.mark.req("MCP-CFG-08", "MCP-CFG-09", "MCP-CFG-10", "MCP-CFG-07")
def test_boundary_values_are_accepted(tmp_path: Path) -> None:
    snapshot = _load(
        tmp_path,
        f"{GOOD}[[mcp.servers]]\nname = 'a'\ntransport = 'sse'\nurl = 'https://h/sse'\n"
        "tls_ca_cert_path = '/etc/ca.pem'\ntool_timeout_secs = 600\n"
        "headers = { 'X-Token_1.v' = 'tab\tand spaces ok' }\n"
        f"[[mcp.servers]]\nname = 'b'\ncommand = 'x'\ntool_timeout_secs = 1\n{BUNDLE}",
    )
    assert [s.name for s in snapshot.mcp.servers] == ["ok", "a", "b"]
    assert snapshot.mcp.servers[1].tool_timeout_secs == 600


@pytest.mark.req("MCP-CFG-11")
def test_env_and_header_values_are_encrypted_at_rest_and_never_shown(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[[mcp.servers]]\nname = 'gh'\ntransport = 'http'\nurl = 'https://h/mcp'\n"
        "[[mcp.servers]]\nname = 'local'\ncommand = 'x'\n" + BUNDLE
    )
    write.set_text(tmp_path, "mcp.servers.gh.headers.Authorization", "Bearer hdr-secret-1")
    write.set_text(tmp_path, "mcp.servers.local.env.API_TOKEN", "env-secret-2")
    text = (tmp_path / "config.toml").read_text()
    assert "hdr-secret-1" not in text and "env-secret-2" not in text
    servers = tomllib.loads(text)["mcp"]["servers"]
    assert servers[0]["headers"]["Authorization"].startswith("enc2:")
    assert servers[1]["env"]["API_TOKEN"].startswith("enc2:")
    snapshot = load_config(tmp_path, tmp_path / "data", {})  # the runtime gets the plain values
    assert snapshot.mcp.servers[0].headers["Authorization"] == "Bearer hdr-secret-1"
    assert snapshot.mcp.servers[1].env["API_TOKEN"] == "env-secret-2"
    leaves = read_view(tmp_path, {})
    shown = {leaf.path: leaf for leaf in leaves if leaf.path.startswith("mcp.servers.")}
    header = shown["mcp.servers.gh.headers.Authorization"]
    env = shown["mcp.servers.local.env.API_TOKEN"]
    for leaf in (header, env):
        assert leaf.secret and render_text(leaf) == MASK
        assert render_json(leaf)["value"] == "***MASKED***"
    rendered = "\n".join(f"{leaf.path} = {render_text(leaf)}" for leaf in leaves)
    assert "secret-1" not in rendered and "secret-2" not in rendered
    assert "enc2:" not in rendered  # not even the ciphertext
    assert render_text(get_leaf(leaves, "mcp.servers.gh.headers.Authorization")) == MASK


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


@pytest.mark.req("MCP-LIFE-06")
def test_each_registry_owns_its_own_connections(connect: Connect) -> None:
    config = stdio_config()
    first, second = connect(config), connect(config)
    one, two = first.connection("peer"), second.connection("peer")
    assert one is not two and one._transport is not two._transport
    pids = {one._transport.pid, two._transport.pid}
    assert len(pids) == 2 and None not in pids
    first.close()
    assert one.state is State.CLOSED and two.state is State.READY
    assert text_of(second.call_tool("peer__echo", {"message": "mine"})) == "Echo: mine"


# --- §6.1 the CA file is read per connection ---------------------------------------------


@pytest.mark.req("MCP-TLS-02")
def test_the_ca_file_is_read_when_a_connection_is_set_up(
    connect: Connect, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, ca = https_fake(tmp_path / "pki")
    try:
        missing = tmp_path / "later" / "ca.pem"
        cfg = tmp_path / "cfg"
        cfg.mkdir()
        (cfg / "config.toml").write_text(
            f"[[mcp.servers]]\nname = 't'\ntransport = 'http'\nurl = '{server.url}'\n"
            f"tls_ca_cert_path = '{missing}'\n{BUNDLE}"
        )
        snapshot = load_config(cfg, tmp_path / "data", {})  # loading never opens the file
        config = snapshot.mcp.servers[0]
        with caplog.at_level(logging.WARNING):
            assert connect(config, options=OPTS).servers() == ()
        assert f"could not open TLS CA certificate file {missing}" in caplog.text
        missing.parent.mkdir()
        missing.write_bytes(ca.read_bytes())  # the same configuration, a new session
        session = connect(config, options=OPTS)
        assert session.servers() == ("t",)
        missing.unlink()  # the running session keeps the trust it was set up with
        assert text_of(session.call_tool("t__echo", {"message": "still"})) == "Echo: still"
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert connect(config, options=OPTS).servers() == ()  # restarted: read again
        assert f"could not open TLS CA certificate file {missing}" in caplog.text
        caplog.clear()
        plain = McpServerConfig(name="t", transport="http", url=server.url)  # removed
        with caplog.at_level(logging.WARNING):
            assert connect(plain, options=OPTS).servers() == ()
        assert "connection error: SSLError" in caplog.text  # back to the default trust
    finally:
        server.close()


# --- §1.3 what the handshake keeps, and the first discovery -------------------------------


@pytest.mark.req("MCP-INIT-08")
@pytest.mark.parametrize(
    ("caps", "supported"),
    [
        (
            {"tools": {"listChanged": False}, "resources": {"subscribe": False}, "prompts": None},
            {"tools": True, "resources": True, "prompts": False},
        ),
        (
            {"resources": {}, "prompts": {"listChanged": True}, "logging": {}},
            {"tools": False, "resources": True, "prompts": True},
        ),
        ({}, {"tools": False, "resources": False, "prompts": False}),
    ],
)
def test_capabilities_count_when_present_and_not_null(
    connect: Connect, tmp_path: Path, caps: dict[str, Any], supported: dict[str, bool]
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(stdio_config("--caps", json.dumps(caps), "--record", str(record)))
    conn = reg.connection("peer")
    assert conn.server_capabilities == caps
    for capability, expected in supported.items():
        assert reg.supports("peer", capability) is expected
    sent = [m.get("method") for m in recorded(record)]
    assert ("tools/list" in sent) is supported["tools"]  # discovery only with `tools`
    assert bool(reg.tools()) is supported["tools"]
    for capability, lister in (("resources", reg.list_resources), ("prompts", reg.list_prompts)):
        if supported[capability]:
            assert isinstance(lister("peer"), dict)
        else:
            with pytest.raises(McpError, match=f"does not support {capability}"):
                lister("peer")


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


def _sequence(fake: FakeMcpHttp) -> list[str]:
    out = []
    for seen in fake.seen():
        if seen.method == "POST" and isinstance(seen.body, dict):
            out.append(str(seen.body.get("method")))
        else:
            out.append(seen.method)
    return out


@pytest.mark.req("MCP-INIT-12")
def test_first_connect_discovers_before_ready_and_recovery_only_marks_stale(
    fake: FakeMcpHttp, monkeypatch: pytest.MonkeyPatch, connect: Connect
) -> None:
    from zeroclaw_ref.mcp.connection import Connection

    states: list[tuple[str, State]] = []
    list_tools = Connection.list_tools

    def spy(self: Connection) -> Any:
        states.append(("list", self.state))
        return list_tools(self)

    monkeypatch.setattr(Connection, "list_tools", spy)
    reg = connect(http_config(fake), options=OPTS)
    conn = reg.connection("h")
    assert _sequence(fake) == [
        "server/discover", "initialize", "notifications/initialized", "GET", "tools/list",
    ]  # fmt: skip
    assert states == [("list", State.CONNECTING)] and conn.state is State.READY
    assert [t.prefixed_name for t in reg.tools()][:2] == ["h__echo", "h__sse_echo"]
    reg.call_tool("h__expire", {})
    with pytest.raises(McpError):
        reg.call_tool("h__echo", {"message": "lost"})
    mark = len(fake.seen())
    assert text_of(reg.call_tool("h__echo", {"message": "back"})) == "Echo: back"
    after = _sequence(fake)[mark:]
    assert after == ["initialize", "notifications/initialized", "GET", "tools/call"]
    assert conn.tools_stale is True and len(states) == 1


# --- §7.1 timeouts -----------------------------------------------------------------------


def _init_with(fake: FakeMcpHttp, caps: dict[str, Any]) -> Any:
    def init(h: Handler, message: dict[str, Any]) -> None:
        sid = f"sess-x{len(fake.state.sessions)}"
        fake.state.sessions.add(sid)
        result = {"protocolVersion": "2025-11-25", "capabilities": caps,
                  "serverInfo": {"name": "fake", "version": "1"}}  # fmt: skip
        h._json({"jsonrpc": "2.0", "id": message["id"], "result": result}, Mcp_Session_Id=sid)

    return init


def _hang(script: Script) -> Any:
    def hang(h: Handler, message: dict[str, Any]) -> None:
        script.release.wait(20)

    return hang


@pytest.mark.req("MCP-TIME-03")
def test_listings_use_the_list_timeout_not_the_tool_timeout(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    script = script_for(fake)
    script.posts["initialize"] = _init_with(fake, {"tools": {}, "resources": {}, "prompts": {}})
    reg = connect(http_config(fake, tool_timeout_secs=120), options=McpOptions(
        init_timeout_s=5, list_timeout_s=0.5, default_tool_timeout_s=120))  # fmt: skip
    conn = reg.connection("h")
    for method in ("resources/list", "prompts/list", "tools/list"):
        script.posts[method] = _hang(script)
    with pytest.raises(McpTimeoutError) as err:
        reg.list_resources("h")
    assert str(err.value) == (
        "MCP server `h` timed out after 0.5s during `resources/list`; outcome unknown and "
        "request was not replayed"
    )
    with pytest.raises(McpTimeoutError, match=r"after 0\.5s during `prompts/list`;"):
        reg.list_prompts("h")
    with pytest.raises(McpTimeoutError, match=r"after 0\.5s during `tools/list`;"):
        conn.list_tools()
    assert conn.state is State.READY


@pytest.mark.req("MCP-TIME-04", "MCP-TIME-05")
def test_waiting_at_the_serial_gate_counts_against_the_deadline(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    reg = connect(http_config(fake), options=OPTS)
    outcomes: list[object] = []

    def hold_the_gate() -> None:
        try:  # the slow stream ends without a reply after 3 s: an outcome-unknown failure
            outcomes.append(call(reg, "slow", timeout=10, seconds=3))
        except McpError as exc:
            outcomes.append(exc)

    first = threading.Thread(target=hold_the_gate)
    first.start()
    try:
        wait_for(lambda: bool([s for s in fake.seen("POST") if s.body.get("params", {})
                               .get("name") == "slow"]), "the slow call to be written")  # fmt: skip
        with pytest.raises(McpTimeoutError) as err:
            call(reg, "echo", timeout=0.5, message="queued")
        assert (
            str(err.value) == "MCP server `h` timed out after 0.5s before writing tool call `echo`"
        )
        assert not [s for s in fake.seen("POST") if s.body.get("params", {}).get("name") == "echo"]
    finally:
        first.join(10)
    assert len(outcomes) == 1  # the gate holder itself was unaffected by the queued timeout


@pytest.mark.req("MCP-TIME-04", "MCP-TIME-05")
def test_a_slow_recovery_is_bounded_by_the_calls_deadline(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    reg = connect(http_config(fake), options=OPTS)
    conn = reg.connection("h")
    fake.state.sessions.clear()
    conn._transport.send_message({"jsonrpc": "2.0", "method": "notifications/progress",
                                  "params": {"progressToken": 1, "progress": 1}})  # fmt: skip
    assert conn.state is State.BROKEN  # stale session seen on a notification: not lossy
    script = script_for(fake)
    script.posts["initialize"] = _hang(script)  # the re-handshake never gets its answer
    with pytest.raises(McpTimeoutError) as err:
        call(reg, "echo", timeout=0.5, message="x")
    assert str(err.value) == "MCP server `h` timed out after 0.5s before writing tool call `echo`"
    assert conn.state is State.BROKEN  # not poisoned: nothing was written


@pytest.mark.req("MCP-TIME-08")
def test_progress_notifications_do_not_extend_the_deadline(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    script = script_for(fake)
    sent: list[int] = []

    def chatty(h: Handler, message: dict[str, Any]) -> None:
        h._sse_start()
        for n in range(200):  # up to 10 s of progress, one every 50 ms
            note = {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "p", "progress": n}}  # fmt: skip
            try:
                h._chunk(message_event(note, f"n{n}"))
            except OSError:
                return
            sent.append(n)
            if script.release.wait(0.05):
                return
        h._chunk(message_event(text_result(message["id"], "too late"), "last"))
        h._sse_end()

    script.posts["tools/call:chatty"] = chatty
    reg = connect(http_config(fake), options=OPTS)
    with pytest.raises(McpTimeoutError, match=r"timed out after 0\.5s during tool call `chatty`"):
        call(reg, "chatty", timeout=0.5)
    assert len(sent) >= 2  # progress kept arriving while the deadline ran out
    assert len(sent) < 200


# --- §1.4 versions -----------------------------------------------------------------------


@pytest.mark.req("MCP-VER-04")
def test_later_content_and_requests_are_handled_under_an_older_version(
    connect: Connect, tmp_path: Path
) -> None:
    hooks = ClientHandlers(elicitation=accept_with_defaults)
    reg = connect(stdio_config("--version", "2024-11-05"), handlers=hooks)
    assert reg.connection("peer").protocol_version == "2024-11-05"
    text, _ = format_result_for_model(reg.call_tool("peer__audio", {}), tmp_path)
    assert "[audio attachment: audio/wav]" in text and "UklGRg" not in text
    text, _ = format_result_for_model(reg.call_tool("peer__link", {}), tmp_path)
    assert json.loads(text)["content"] == [
        {"type": "resource_link", "uri": "file:///x", "name": "x"}
    ]
    answer = json.loads(text_of(reg.call_tool("peer__elicit", {})))
    assert answer["result"] == {"action": "accept", "content": {"name": "Ada"}}
    assert text_of(reg.call_tool("peer__change_tools", {})) == "changed"
    wait_for(lambda: reg.connection("peer").tools_stale, "the list_changed notification")


@pytest.mark.req("MCP-VER-05")
def test_the_stateless_era_is_never_attempted_with_era_legacy(
    connect: Connect, tmp_path: Path, fake: FakeMcpHttp
) -> None:
    assert McpOptions().era == "auto" and FAST.era == "auto"  # issue 16: auto by default
    record = tmp_path / "rec.jsonl"
    legacy_server = stdio_config("--record", str(record), era="legacy")
    reg = connect(legacy_server)
    reg.call_tool("peer__echo", {"message": "x"})
    sent = recorded(record)
    assert sent[0]["method"] == "initialize"
    assert sent[0]["params"]["protocolVersion"] == "2025-11-25"
    assert "_meta" not in sent[0]["params"]
    assert not any(m.get("method") == "server/discover" for m in sent)
    connect(http_config(fake), options=replace(OPTS, era="legacy")).call_tool(
        "h__echo", {"message": "y"}
    )
    posts = fake.seen("POST")
    assert posts[0].body["method"] == "initialize"
    assert not any(p.body.get("method") == "server/discover" for p in posts)
    assert not any("Mcp-Method" in p.headers for p in posts)
