"""The legacy HTTP+SSE transport against the loopback fake server (mcp.md §5).

The tests of one rule each stage its exact wire situation by replacing the fake's answers
through `script_for` (`tests.helpers.fake_mcp_http`)."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import (
    FakeMcpHttp,
    Handler,
    https_fake,
    message_event,
    sse_bytes,
    text_result,
)
from tests.helpers.internals import sse_transport
from tests.helpers.mcp_calls import call, outcome_unknown, text_of, tool_posts
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.mcp import (
    McpClosedError,
    McpOptions,
    McpOutcomeUnknownError,
    McpProtocolError,
    McpSizeLimitError,
)
from zeroclaw_ref.mcp import sse as sse_module
from zeroclaw_ref.mcp.http import RequestsBody
from zeroclaw_ref.mcp.lifecycle import State
from zeroclaw_ref.mcp.sse import capped_events, origin

OPTS = McpOptions(init_timeout_s=2, list_timeout_s=5, default_tool_timeout_s=5)


@pytest.fixture
def fake() -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp()
    yield server
    server.close()


def sse_config(fake: FakeMcpHttp, path: str = "/sse", **fields: Any) -> McpServerConfig:
    return replace(McpServerConfig(name="l", transport="sse", url=fake.base + path), **fields)


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


# the closing tests need a short grace period
OPTS_SHORT_GRACE = McpOptions(
    init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5, close_grace_s=1
)


# --- §5 the legacy HTTP+SSE transport ----------------------------------------------------


def _legacy_queue(fake: FakeMcpHttp) -> Any:
    wait_for(lambda: len(fake.state.legacy_queues) >= 1, "the legacy stream")
    return list(fake.state.legacy_queues.values())[-1]


@pytest.mark.req("MCP-SSE-02")
def test_the_event_stream_is_read_by_sseclient_on_a_daemon_thread(
    connect: Connect, fake: FakeMcpHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sseclient

    built: list[tuple[str, str]] = []
    real = sseclient.SSEClient

    def spy(source: Any, *args: Any, **kw: Any) -> Any:
        name = getattr(getattr(source, "gi_code", None), "co_name", type(source).__name__)
        built.append((threading.current_thread().name, name))
        return real(source, *args, **kw)

    monkeypatch.setattr(sseclient, "SSEClient", spy)
    reg = connect(sse_config(fake), options=OPTS_SHORT_GRACE)
    assert text_of(reg.call_tool("l__echo", {"message": "r"})) == "Echo: r"
    reader = [t for t in threading.enumerate() if t.name == "mcp-l-sse"]
    assert len(reader) == 1 and reader[0].daemon and reader[0].is_alive()
    assert built[0] == ("mcp-l-sse", "capped_events")  # fed through the size-capping iterator


@pytest.mark.req("MCP-SSE-04")
@pytest.mark.parametrize("status", [401, 403, 500, 503])
def test_other_statuses_of_the_event_stream_fail_the_connect(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    # this fake only: an instance attribute shadows the stock handler
    fake.httpd.legacy_stream = lambda h: h._plain(status, b"no")  # type: ignore[method-assign,assignment]
    with caplog.at_level(logging.WARNING):
        reg = connect(sse_config(fake), options=OPTS_SHORT_GRACE)
    assert reg.servers() == ()
    assert f"Failed to connect to MCP server `l`: MCP server returned HTTP {status}" in caplog.text
    assert fake.seen("POST") == []  # no fallback to Streamable HTTP


@pytest.mark.req("MCP-SSE-07")
def test_a_plaintext_endpoint_is_refused_when_a_ca_is_configured(
    connect: Connect, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, ca = https_fake(tmp_path)
    try:
        server.state.endpoint = f"http://127.0.0.1:{server.port}/message?sessionId={{sid}}"
        config = McpServerConfig(
            name="l", transport="sse", url=server.base + "/sse", tls_ca_cert_path=str(ca)
        )
        with caplog.at_level(logging.WARNING):
            assert connect(config, options=OPTS_SHORT_GRACE).servers() == ()
        assert (
            "Failed to connect to MCP server `l`: tls_ca_cert_path requires an HTTPS SSE "
            "message endpoint; refusing plaintext transport"
        ) in caplog.text
        assert server.seen("POST") == []
    finally:
        server.close()


@pytest.mark.req("MCP-SSE-08")
def test_a_later_endpoint_replaces_the_current_one_after_the_same_checks(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    reg = connect(sse_config(fake), options=OPTS_SHORT_GRACE)
    transport = sse_transport(reg)
    queue = _legacy_queue(fake)
    sid = next(iter(fake.state.legacy_queues))
    queue.put(f"event: endpoint\ndata: /message/v2?sessionId={sid}\n\n")
    wait_for(lambda: "/message/v2" in (transport._endpoint or ""), "the new endpoint")
    assert text_of(reg.call_tool("l__echo", {"message": "moved"})) == "Echo: moved"
    assert fake.seen("POST")[-1].path == f"/message/v2?sessionId={sid}"
    with caplog.at_level(logging.WARNING):
        queue.put("event: mcp-endpoint\ndata: http://collector.example.net/rpc\n\n")
        wait_for(lambda: "ignoring a new endpoint" in caplog.text, "the warning")
    assert "different origin" in caplog.text
    assert text_of(reg.call_tool("l__echo", {"message": "kept"})) == "Echo: kept"
    assert fake.seen("POST")[-1].path == f"/message/v2?sessionId={sid}"
    assert reg.connection("l").state is State.READY


def _legacy_script(fake: FakeMcpHttp, answers: dict[str, Any]) -> None:
    """Answer chosen tools from a custom legacy POST handler; the rest as the stock fake."""
    from tests.helpers import fake_mcp_http

    stock = fake_mcp_http._Server.legacy_post

    def post(h: Handler, message: dict[str, Any]) -> None:
        name = message.get("params", {}).get("name") if message.get("method") else None
        if name in answers:
            answers[name](h, message)
        else:
            stock(fake.httpd, h, message)

    fake.httpd.legacy_post = post  # type: ignore[method-assign,assignment]  # this fake only


@pytest.mark.req("MCP-SSE-12")
def test_a_reply_is_taken_from_the_post_body_or_else_from_the_stream(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    def queue_of(h: Handler) -> Any:
        return fake.state.legacy_queues[h.path.split("sessionId=")[-1]]

    def in_json(h: Handler, m: dict[str, Any]) -> None:
        h._json(text_result(m["id"], "json body"))

    def in_sse(h: Handler, m: dict[str, Any]) -> None:
        body = sse_bytes(message_event(text_result(m["id"], "sse body")))
        h._plain(200, body, "text/event-stream")

    def elsewhere(h: Handler, m: dict[str, Any]) -> None:
        note = {"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "not the reply"}}  # fmt: skip
        h._json(note)  # a 2xx body without our response: wait on the stream
        queue_of(h).put(message_event(text_result(m["id"], "on the stream")))

    def empty(h: Handler, m: dict[str, Any]) -> None:
        h._plain(200, b"", "application/json")
        queue_of(h).put(message_event(text_result(m["id"], "after an empty body")))

    _legacy_script(fake, {"in_json": in_json, "in_sse": in_sse, "elsewhere": elsewhere,
                          "empty": empty})  # fmt: skip
    reg = connect(sse_config(fake), options=OPTS_SHORT_GRACE)
    assert text_of(call(reg, "in_json", server="l")) == "json body"
    assert text_of(call(reg, "in_sse", server="l")) == "sse body"
    assert text_of(call(reg, "elsewhere", server="l")) == "on the stream"
    assert text_of(call(reg, "empty", server="l")) == "after an empty body"
    assert reg.connection("l").state is State.READY


@pytest.mark.req("MCP-SSE-13")
@pytest.mark.parametrize("status", [404, 410, 500, 403])
def test_post_statuses_of_the_legacy_transport(
    connect: Connect, fake: FakeMcpHttp, status: int
) -> None:
    _legacy_script(fake, {"refuse": lambda h, m: h._plain(status, b"nope")})
    reg = connect(sse_config(fake), options=OPTS_SHORT_GRACE)
    if status in (404, 410):
        with pytest.raises(McpOutcomeUnknownError) as err:
            call(reg, "refuse", server="l")
        cause = f"session expired (HTTP {status})"
        assert str(err.value) == outcome_unknown("refuse", cause, server="l")
        assert reg.connection("l").state is State.BROKEN
        assert text_of(reg.call_tool("l__echo", {"message": "back"})) == "Echo: back"
        assert len([g for g in fake.seen("GET") if g.path == "/sse"]) == 2  # a new stream
    else:
        with pytest.raises(McpProtocolError) as perr:
            call(reg, "refuse", server="l")
        assert str(perr.value) == f"MCP server returned HTTP {status}"
        assert reg.connection("l").state is State.READY


@pytest.mark.req("MCP-SSE-14")
def test_answers_to_server_requests_are_posted_from_a_handler_worker(
    connect: Connect, fake: FakeMcpHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zeroclaw_ref.mcp.sse import SseTransport

    senders: list[tuple[str, JSON]] = []
    send = SseTransport.send_message

    def spy(self: SseTransport, message: dict[str, JSON]) -> None:
        senders.append((threading.current_thread().name, message.get("id")))
        send(self, message)

    monkeypatch.setattr(SseTransport, "send_message", spy)
    reg = connect(sse_config(fake), options=OPTS_SHORT_GRACE)
    queue = _legacy_queue(fake)
    sid = next(iter(fake.state.legacy_queues))
    queue.put(message_event({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}))

    def answered() -> list[Any]:
        return [s for s in fake.seen("POST") if isinstance(s.body, dict)
                and s.body.get("id") == "srv-1"]  # fmt: skip

    wait_for(lambda: bool(answered()), "the answer to the server's ping")
    answer = answered()[0]
    assert answer.body == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
    assert answer.path == f"/message?sessionId={sid}"
    ((thread, _),) = [s for s in senders if s[1] == "srv-1"]
    assert re.fullmatch(r"mcp-l_\d+", thread), thread  # the handler pool, not the reader
    assert reg.connection("l").state is State.READY


@pytest.mark.req("MCP-SSE-20")
def test_closing_aborts_the_stream_fails_pending_calls_and_sends_no_delete(
    connect: Connect, fake: FakeMcpHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutdowns: list[str] = []
    shutdown = RequestsBody.shutdown

    def spy(self: RequestsBody) -> None:
        shutdowns.append(threading.current_thread().name)
        shutdown(self)

    monkeypatch.setattr(RequestsBody, "shutdown", spy)
    _legacy_script(fake, {"hang": lambda h, m: h._plain(202)})  # acknowledged, never answered
    reg = connect(sse_config(fake), options=McpOptions(init_timeout_s=5,
                                                       default_tool_timeout_s=30))  # fmt: skip
    conn = reg.connection("l")
    transport = sse_transport(reg)
    outcome: list[BaseException] = []

    def waiting_call() -> None:
        try:
            call(reg, "hang", timeout=30, server="l")
        except BaseException as exc:
            outcome.append(exc)

    caller = threading.Thread(target=waiting_call)
    caller.start()
    wait_for(lambda: bool(tool_posts(fake, "hang")) and conn.pending_count() == 1, "the call")
    reg.close()
    caller.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], McpClosedError)
    assert str(outcome[0]) == "MCP server `l` is closed"
    assert shutdowns == [threading.current_thread().name]
    wait_for(
        lambda: not any(t.name == "mcp-l-sse" and t.is_alive() for t in threading.enumerate()),
        "the reader to end",
    )
    assert transport._endpoint is None
    assert fake.seen("DELETE") == []


@pytest.mark.req("MCP-SSE-20")
def test_closing_waits_for_a_stuck_reader_for_about_a_second_only(
    connect: Connect, fake: FakeMcpHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = connect(sse_config(fake), options=OPTS_SHORT_GRACE)
    monkeypatch.setattr(RequestsBody, "shutdown", lambda self: None)  # the abort never lands
    closer = threading.Thread(target=reg.close)
    closer.start()
    closer.join(5)
    assert not closer.is_alive()  # close() returned although the reader is still blocked
    assert any(t.name == "mcp-l-sse" and t.is_alive() for t in threading.enumerate())
