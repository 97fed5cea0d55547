"""Deadlines of MCP requests (mcp.md §7.1): listings use the list timeout, the wait at the serial
gate and a slow recovery count against the call's own deadline, and progress notifications do
not extend it; against the scripted HTTP fake (`tests/helpers/fake_mcp_http.py`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import (
    FakeMcpHttp,
    Handler,
    Script,
    message_event,
    script_for,
    text_result,
)
from tests.helpers.mcp_calls import call
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import McpError, McpOptions, McpTimeoutError
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
