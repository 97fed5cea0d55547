"""What real servers taught the client about connecting (issue 16, item 6): a per-server
startup wait, a failed server's reason told to the model, and an unreachable endpoint named.

- `startup_timeout_secs` bounds that server's initialize wait (MCP-INIT-05), not the others'.
- A call to a tool of a server that failed to connect answers with the scrubbed MCP-ERR-02
  text (MCP-LIFE-04, §16) instead of `Unknown tool: <name>` (POL-ENGINE-05).
- A refused connect names the URL without its userinfo or query (§16 connection error, MCP-CTX-06).
"""

from __future__ import annotations

import json
import logging
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.mcp.conftest import SERVER, Connect, stdio_config
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.core.scrub import url_without_credentials
from zeroclaw_ref.engine.events import ToolFinished, TurnEvent
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.mcp import McpOptions

SECRET = "sk-live0123456789abcdef"


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that is bound but not listening: every connect is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


@pytest.mark.req("MCP-INIT-05", "MCP-LIFE-04")
def test_startup_timeout_secs_bounds_that_servers_initialize_wait_only(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    # The shared default is a minute: the silent server is given up on after its own 1 s.
    opts = McpOptions(init_timeout_s=60, list_timeout_s=10, close_grace_s=0.5)
    silent = stdio_config("--init", "silent", name="slow", startup_timeout_secs=1)
    with caplog.at_level(logging.WARNING):
        reg = connect(silent, stdio_config(name="good"), options=opts)
    assert reg.servers() == ("good",)
    assert (
        "Failed to connect to MCP server `slow`: MCP server `slow` timed out after 1s waiting "
        "for initialize response"
    ) in caplog.text
    assert reg.connection("good").options.init_timeout_s == 60


@pytest.mark.req("MCP-LIFE-04", "MCP-ERR-01")
def test_the_registry_keeps_why_a_server_failed_scrubbed(connect: Connect) -> None:
    bad = McpServerConfig(name="bad", command=f"/nonexistent/{SECRET}/server")
    reg = connect(bad, stdio_config(name="good"))
    assert reg.servers() == ("good",)
    reason = reg.connect_failure("bad")
    assert reason is not None
    assert reason.startswith("Failed to connect to MCP server `bad`: failed to create transport")
    assert SECRET not in reason and "[REDACTED]" in reason
    assert reg.connect_failure("good") is None and reg.connect_failure("other") is None


CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
level = "full"
[runtime_profiles.r]
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["b"]
[[mcp.servers]]
name = "bad"
command = "/nonexistent/{secret}/server"
[[mcp.servers]]
name = "good"
command = {python}
args = [{script}]
[mcp_bundles.b]
servers = ["bad", "good"]
"""


def _call(name: str, call_id: str) -> JSONObject:
    return {"id": call_id, "name": name, "arguments": {"approved": True}}


@pytest.mark.req("MCP-LIFE-04", "MCP-ERR-01", "POL-ENGINE-05", "POL-ASSEMBLE-13")
def test_a_call_to_a_failed_servers_tool_tells_the_model_why(tmp_path: Path) -> None:
    turns: list[JSONObject] = [
        {"tool_calls": [_call("bad__create_issue", "c1"), _call("nobody__x", "c2")]},
        {"chunks": ["done"]},
    ]
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "model.json").write_text(json.dumps({"turns": turns}))
    text = CONFIG.format(
        secret=SECRET, python=json.dumps(sys.executable), script=json.dumps(str(SERVER))
    )
    (cfg / "config.toml").write_text(text)
    execution = resolve(load_config(cfg, tmp_path / "data", {}), "a", PathRequest("cli-run"))
    events: list[TurnEvent] = []
    try:
        TurnEngine(SequentialIds()).run_turn(execution, [], "go", events.append, CancelToken())
    finally:
        execution.io.tools.close_mcp()
    outputs = [e.output for e in events if isinstance(e, ToolFinished)]
    assert outputs[0].startswith(
        "Error: Failed to connect to MCP server `bad`: failed to create transport for MCP "
        "server `bad`: failed to spawn MCP server `bad`: [Errno 2]"
    )
    assert SECRET not in outputs[0]
    assert outputs[1] == "Error: Unknown tool: nobody__x"  # no such server: as before


@pytest.mark.req("MCP-HTTP-08", "MCP-SSE-01", "MCP-REC-03", "MCP-CTX-06")
@pytest.mark.parametrize("transport", ["http", "sse"])
def test_an_unreachable_endpoint_is_named_without_its_credentials(
    connect: Connect, caplog: pytest.LogCaptureFixture, refused_port: int, transport: str
) -> None:
    url = f"http://alice:hunter2-pass@127.0.0.1:{refused_port}/mcp?api_key={SECRET}&x=1"
    config = McpServerConfig(name="h", transport=transport, url=url)
    with caplog.at_level(logging.WARNING):
        reg = connect(config, options=McpOptions(init_timeout_s=5, close_grace_s=0.5))
    assert reg.servers() == ()
    expected = (
        "Failed to connect to MCP server `h`: connection error: ConnectionError "
        f"(cannot reach http://127.0.0.1:{refused_port}/mcp)"
    )
    assert expected in caplog.text
    reason = reg.connect_failure("h") or ""
    assert f"cannot reach http://127.0.0.1:{refused_port}/mcp" in reason
    for leaked in ("alice", "hunter2", SECRET, "api_key"):
        assert leaked not in caplog.text and leaked not in reason


@pytest.mark.req("MCP-CTX-06")
@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://u:p@example.com:8443/a/mcp?token=abc#frag", "https://example.com:8443/a/mcp"),
        ("http://[::1]:9/mcp", "http://[::1]:9/mcp"),
        ("https://example.com", "https://example.com"),
        ("not a url?token=abc", "not a url"),
        (f"https://example.com/{SECRET}/mcp", "https://example.com/[REDACTED]/mcp"),
    ],
)
def test_urls_lose_userinfo_query_fragment_and_tokens(url: str, shown: str) -> None:
    assert url_without_credentials(url) == shown
