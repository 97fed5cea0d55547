"""The legacy HTTP+SSE transport against the loopback fake server (mcp.md §5)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.helpers.fake_mcp_http import FakeMcpHttp
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import McpOptions, McpOutcomeUnknownError, McpSizeLimitError
from zeroclaw_ref.mcp import sse as sse_module
from zeroclaw_ref.mcp.lifecycle import State
from zeroclaw_ref.mcp.sse import capped_events, origin

OPTS = McpOptions(init_timeout_s=2, list_timeout_s=5, default_tool_timeout_s=5)


@pytest.fixture
def fake() -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp()
    yield server
    server.close()


def sse_config(fake: FakeMcpHttp, path: str = "/sse", **fields: object) -> McpServerConfig:
    return McpServerConfig(name="l", transport="sse", url=fake.base + path, **fields)  # type: ignore[arg-type]


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


@pytest.mark.req("MCP-SSE-01", "MCP-SSE-05", "MCP-SSE-10", "MCP-SSE-15", "MCP-PEER-03")
def test_requests_go_to_the_relative_endpoint_and_replies_come_on_the_stream(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    reg = connect(sse_config(fake, headers={"Authorization": "Bearer t"}), options=OPTS)
    assert _text(reg.call_tool("l__echo", {"message": "hi"})) == "Echo: hi"
    get = fake.seen("GET")[0]
    assert get.headers["Cache-Control"] == "no-cache" and get.headers["Authorization"] == "Bearer t"
    assert get.headers["Accept"] == "application/json, text/event-stream"
    posts = fake.seen("POST")
    assert all(p.path.startswith("/message?sessionId=legacy-") for p in posts)
    assert all("MCP-Protocol-Version" not in p.headers for p in posts)
    reg.close()
    assert not fake.seen("DELETE")


@pytest.mark.req("MCP-SSE-05")
def test_a_json_endpoint_event_is_accepted(connect: Connect, fake: FakeMcpHttp) -> None:
    fake.state.endpoint = '{{"endpoint": "/message?sessionId={sid}"}}'  # str.format template
    reg = connect(sse_config(fake), options=OPTS)
    assert reg.servers() == ("l",)


@pytest.mark.req("MCP-SSE-06", "MCP-ERR-34")
def test_an_endpoint_on_another_origin_is_refused(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    fake.state.endpoint = "http://collector.example.net:8080/rpc?sessionId={sid}"
    with caplog.at_level(logging.WARNING):
        reg = connect(sse_config(fake), options=OPTS)
    assert reg.servers() == ()
    assert (
        "MCP server `l` advertised an SSE message endpoint on a different origin "
        "(http://collector.example.net:8080); refusing to send requests there"
    ) in caplog.text
    assert not fake.seen("POST")


@pytest.mark.req("MCP-SSE-06")
@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("http://127.0.0.1:3001/sse", "http://127.0.0.1:3001/message?x=1", True),
        ("https://MCP.example.com/sse", "https://mcp.example.com:443/rpc", True),
        ("https://mcp.example.com/sse", "http://mcp.example.com/rpc", False),
        ("https://mcp.example.com/sse", "https://collector.example.net/rpc", False),
    ],
)
def test_origins(a: str, b: str, same: bool) -> None:
    assert (origin(a) == origin(b)) is same


@pytest.mark.req("MCP-SSE-09", "MCP-ERR-33")
def test_no_endpoint_event_fails_the_connect(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    fake.state.endpoint = ""
    with caplog.at_level(logging.WARNING):
        reg = connect(sse_config(fake), options=McpOptions(init_timeout_s=0.5))
    assert reg.servers() == ()
    assert "MCP server `l` sent no endpoint event within 0.5s" in caplog.text


@pytest.mark.req("MCP-SSE-03")
def test_a_refused_stream_falls_back_to_streamable_http(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    reg = connect(sse_config(fake, path="/mcp"), options=OPTS)
    assert _text(reg.call_tool("l__echo", {"message": "x"})) == "Echo: x"


@pytest.mark.req("MCP-SSE-16", "MCP-SSE-17", "MCP-SIZE-08")
def test_an_oversized_event_fails_the_pending_call_at_once(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    reg = connect(sse_config(fake, max_response_bytes=5000), options=OPTS)
    with pytest.raises(
        McpSizeLimitError, match=r"^MCP SSE response body exceeds the 5000-byte limit$"
    ):
        reg.call_tool("l__big", {"bytes": 10_000})
    assert _text(reg.call_tool("l__echo", {"message": "still"})) == "Echo: still"


@pytest.mark.req("MCP-SSE-18", "MCP-SSE-19", "MCP-ERR-31")
def test_a_closed_stream_fails_the_call_and_the_next_call_reconnects(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    reg = connect(sse_config(fake), options=OPTS)
    with pytest.raises(
        McpOutcomeUnknownError, match=r"request was not replayed: SSE stream closed$"
    ):
        reg.call_tool("l__close", {})
    assert reg.connection("l").state is State.BROKEN
    assert _text(reg.call_tool("l__echo", {"message": "again"})) == "Echo: again"
    assert len(fake.seen("GET")) == 2


@pytest.mark.req("MCP-SSE-11", "MCP-ERR-36")
def test_an_unacknowledged_post_is_bounded(
    connect: Connect, fake: FakeMcpHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sse_module, "POST_ACK_S", 0.5)
    reg = connect(sse_config(fake), options=OPTS)
    fake.state.legacy_queues.clear()  # the server forgets the session and never answers
    with pytest.raises(McpOutcomeUnknownError) as err:
        reg.call_tool("l__echo", {"message": "lost"})
    assert str(err.value) == (
        "MCP server `l` did not acknowledge the POST to its SSE message endpoint within 0.5s "
        "during tool call `echo`; outcome unknown and request was not replayed"
    )
    assert reg.connection("l").state is State.BROKEN


@pytest.mark.req("MCP-SIZE-08")
def test_capped_events_drop_only_the_large_event() -> None:
    dropped: list[bool] = []
    chunks = iter([b"data: small\r\n\r\nevent: message\ndata: ", b"x" * 50, b"\n\ndata: ok\n\n"])
    out = list(capped_events(chunks, 30, dropped.append))
    assert out == [b"data: small\r\n\r\n", b"data: ok\n\n"]
    assert dropped == [True]
