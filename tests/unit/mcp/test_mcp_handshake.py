"""What the handshake decides (mcp.md §1.3, §1.4): a capability counts when present and not
null, the first connect discovers tools before READY while a recovery only marks them stale,
and a server that negotiated an older version still gets later content and requests handled.

The exact initialize exchange and version negotiation live in test_mcp_stdio.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import FakeMcpHttp, script_for
from tests.helpers.mcp_calls import text_of
from tests.unit.mcp.conftest import Connect, stdio_config
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpError,
    McpOptions,
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
