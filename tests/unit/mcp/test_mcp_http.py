"""The Streamable HTTP transport against the loopback fake server (mcp.md §4, §6.2, §7)."""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import FakeMcpHttp
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpCancelledError,
    McpOptions,
    McpOutcomeUnknownError,
    McpProtocolError,
    McpSizeLimitError,
    McpTimeoutError,
    accept_with_defaults,
)
from zeroclaw_ref.mcp import http as http_module
from zeroclaw_ref.mcp.httpstream import deliver
from zeroclaw_ref.mcp.lifecycle import State
from zeroclaw_ref.mcp.ssestream import Oversized, SseEvent, SseParser
from zeroclaw_ref.mcp.transport import Router

OPTS = McpOptions(init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5)


@pytest.fixture
def fake() -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp()
    yield server
    server.close()


def http_config(fake: FakeMcpHttp, **fields: object) -> McpServerConfig:
    return McpServerConfig(name="h", transport="http", url=fake.url, **fields)  # type: ignore[arg-type]


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


# --- the parser --------------------------------------------------------------------------


@pytest.mark.req("MCP-HTTP-20", "MCP-HTTP-21", "MCP-HTTP-24")
def test_the_parser_follows_the_event_stream_rules() -> None:
    p = SseParser()
    events = p.feed(b"\xef\xbb\xbfid: 0\r\nretry: 500\r\ndata: \r\n\r\n: c\n")
    assert events == [SseEvent("message", "")]
    assert (p.last_event_id, p.retry_ms) == ("0", 500)
    assert p.feed(b"event: x\ndata:a\rdata: b\r") == []
    assert p.feed(b"\n\nid: bad\0id\nretry: 1x\nid\n\n") == [
        SseEvent("x", "a\nb"),
        SseEvent("message", None),  # no data line: never parsed, but its id counts
    ]
    assert (p.last_event_id, p.retry_ms) == ("", 500)
    assert p.feed(b"id: only\n\n") == [SseEvent("message", None)]
    assert p.last_event_id == "only"


@pytest.mark.req("MCP-SIZE-08")
def test_an_oversized_event_is_discarded_and_the_stream_continues() -> None:
    p = SseParser(event_limit=20)
    events = p.feed(b"data: " + b"x" * 40 + b"\n\ndata: ok\n\n")
    assert events == [Oversized("message"), SseEvent("message", "ok")]


# --- the transport -----------------------------------------------------------------------


@pytest.mark.req(
    "MCP-HTTP-02", "MCP-HTTP-03", "MCP-HTTP-04", "MCP-HTTP-05", "MCP-HTTP-06", "MCP-HTTP-09",
    "MCP-HTTP-11", "MCP-HTTP-31", "MCP-HTTP-48", "MCP-PEER-02",
)  # fmt: skip
def test_headers_sessions_and_delete(connect: Connect, fake: FakeMcpHttp) -> None:
    headers = {"User-Agent": "ZeroClaw", "Authorization": "Bearer t", "mcp-session-id": "mine"}
    reg = connect(http_config(fake, headers=headers), options=OPTS)
    assert _text(reg.call_tool("h__echo", {"message": "m"})) == "Echo: m"
    reg.close()
    probe, *posts = fake.seen("POST")
    assert probe.body["method"] == "server/discover"  # answered 404: a legacy server
    init = posts[0].headers
    assert posts[0].body["method"] == "initialize"
    assert init["Content-Type"] == "application/json" and init["User-Agent"] == "ZeroClaw"
    assert init["Accept"] == "application/json, text/event-stream"
    assert init["Accept-Encoding"] == "identity" and init["Authorization"] == "Bearer t"
    assert "MCP-Protocol-Version" not in init and "Mcp-Session-Id" not in init
    assert "mcp-session-id" not in {k.lower(): v for k, v in init.items()}
    for seen in [*posts[1:], *fake.seen("GET"), *fake.seen("DELETE")]:
        assert seen.headers["Mcp-Session-Id"] == "sess-1"
        assert seen.headers["MCP-Protocol-Version"] == "2025-11-25"
        assert seen.headers["User-Agent"] == "ZeroClaw"
    assert fake.seen("GET")[0].headers["Accept"] == "text/event-stream"
    assert len(fake.seen("DELETE")) == 1


@pytest.mark.req("MCP-HTTP-15", "MCP-HTTP-21", "MCP-HTTP-22", "MCP-NOTE-03")
def test_sse_replies_are_found_among_other_events(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    reg = connect(http_config(fake), options=OPTS)
    with caplog.at_level(logging.INFO):
        assert _text(reg.call_tool("h__sse_echo", {"message": "s"})) == "Echo: s"
    assert any(r.name == "zeroclaw_ref.mcp.server.h" for r in caplog.records)


class _RecordingRouter(Router):
    """Collects what a stream hands to the connection; the other duties are never used."""

    def __init__(self) -> None:
        self.routed: list[object] = []

    def route(self, value: JSON, generation: int) -> None:
        self.routed.append(value)

    def transport_failed(self, generation: int, cause: str, stderr_tail: str = "") -> None:
        raise AssertionError(cause)

    def mark_broken(self, generation: int, lossy: bool) -> None:
        raise AssertionError("mark_broken")

    def pending_count(self) -> int:
        return 0

    def fail_pending(self, error_text: str) -> None:
        raise AssertionError(error_text)


@pytest.mark.req("MCP-HTTP-22")
def test_only_message_events_reach_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    """An event of another type carries a well-formed JSON-RPC reply: it must still be
    dropped (with a DEBUG line), while the same reply as a default-typed event is routed."""
    reply = {"jsonrpc": "2.0", "id": 3, "result": {}}
    stream = SseParser().feed(
        f"event: other\ndata: {json.dumps(reply)}\n\n"
        f"event: endpoint\ndata: {json.dumps(reply)}\n\n"
        f"data: {json.dumps(reply)}\n\n".encode()
    )
    router = _RecordingRouter()
    with caplog.at_level(logging.DEBUG, logger="zeroclaw_ref.mcp.httpstream"):
        for event in stream:
            deliver("h", router, event, 0)
    assert router.routed == [reply]
    ignored = [r for r in caplog.records if r.levelno == logging.DEBUG and "other" in r.message]
    assert ignored, "the ignored event type is logged at DEBUG"


@pytest.mark.req("MCP-HTTP-25", "MCP-HTTP-26", "MCP-HTTP-27", "MCP-CONF-05")
def test_a_broken_stream_resumes_with_last_event_id(
    connect: Connect, fake: FakeMcpHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream ends after `id: r1` and `retry: 200`: the client waits the announced 200 ms
    (observed as the timeout it hands to the exchange's abort event, not by a clock) and
    then reopens with `Last-Event-ID: r1`."""
    waits: list[float | None] = []

    class RecordingEvent(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waits.append(timeout)
            return super().wait(timeout)

    @dataclass
    class RecordingExchange(http_module.Exchange):
        aborted: threading.Event = field(default_factory=RecordingEvent)

    monkeypatch.setattr(http_module, "Exchange", RecordingExchange)
    reg = connect(http_config(fake), options=OPTS)
    assert _text(reg.call_tool("h__resume", {})) == "resumed"
    assert waits == [0.2]  # the retry the server announced, before the one reopen
    resumed = [g for g in fake.seen("GET") if "Last-Event-ID" in g.headers]
    assert resumed and resumed[0].headers["Last-Event-ID"] == "r1"


@pytest.mark.req("MCP-S2C-01", "MCP-HTTP-44", "MCP-RPC-12", "MCP-CONF-04")
def test_an_elicitation_during_a_call_is_answered(connect: Connect, fake: FakeMcpHttp) -> None:
    hooks = ClientHandlers(elicitation=accept_with_defaults)
    reg = connect(http_config(fake), options=OPTS, handlers=hooks)
    answer = json.loads(_text(reg.call_tool("h__elicit", {})))
    assert answer == {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {"action": "accept", "content": {"name": "Ada"}},
    }


@pytest.mark.req("MCP-HTTP-18", "MCP-HTTP-34")
def test_a_reply_on_the_get_stream_completes_an_empty_post(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    fake.state.get_mode = "stream"
    reg = connect(http_config(fake), options=OPTS)
    wait_for(lambda: bool(fake.state.get_streams), "GET stream")
    assert _text(reg.call_tool("h__get_reply", {})) == "via get"


@pytest.mark.req("MCP-HTTP-36", "MCP-HTTP-34")
def test_an_ended_get_stream_is_reopened_with_backoff_then_given_up(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    """The first GET stream sets `retry: 20` and delivers event `g1`; every later one ends
    empty. Reopens carry `Last-Event-ID: g1`, wait 20 ms and then double after each empty
    stream (40, 80, 160, 320 ms), and stop after the fifth empty reopened stream."""
    fake.state.get_mode = "brief"
    connect(http_config(fake), options=OPTS)

    def listener_alive() -> bool:
        return any(t.name == "mcp-h-get" and t.is_alive() for t in threading.enumerate())

    wait_for(lambda: len(fake.seen("GET")) >= 6, "six GET streams")
    wait_for(lambda: not listener_alive(), "the GET listener to give up")
    gets = fake.seen("GET")
    assert len(gets) == 6  # the first stream and five empty reopenings, then no more
    assert "Last-Event-ID" not in gets[0].headers
    assert all(g.headers.get("Last-Event-ID") == "g1" for g in gets[1:])
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(gets)]
    for gap, expected in zip(gaps, (0.02, 0.04, 0.08, 0.16, 0.32), strict=True):
        assert gap >= expected * 0.9, (gaps, expected)  # lower bounds only: no timing flake
    assert gaps[4] > gaps[1]  # the delay grows


@pytest.mark.req("MCP-HTTP-16", "MCP-HTTP-14", "MCP-HTTP-17", "MCP-HTTP-19", "MCP-HTTP-41")
def test_body_shapes_and_their_failures(connect: Connect, fake: FakeMcpHttp) -> None:
    reg = connect(http_config(fake), options=OPTS)
    assert _text(reg.call_tool("h__sniff", {})) == "sniffed"
    cases = {
        "mismatch": r"^MCP response id mismatch: expected \d+, received \d+$",
        "empty": r"^MCP server returned no response$",
        "badjson": r"^invalid JSON-RPC response: <html>oops https://h/x$",  # query cut to the space
        "status500": r"^MCP server returned HTTP 500$",
    }
    for tool, pattern in cases.items():
        with pytest.raises(McpProtocolError, match=pattern):
            reg.call_tool(f"h__{tool}", {})
    assert reg.connection("h").state is State.READY


@pytest.mark.req("MCP-SIZE-01", "MCP-SIZE-03", "MCP-SIZE-04", "MCP-SIZE-06", "MCP-SIZE-09")
def test_response_size_limits(connect: Connect, fake: FakeMcpHttp) -> None:
    reg = connect(http_config(fake, max_response_bytes=5000), options=OPTS)
    with pytest.raises(
        McpSizeLimitError,
        match=r"^MCP response body Content-Length \d+ exceeds the 5000-byte limit$",
    ):
        reg.call_tool("h__big", {"bytes": 10_000})
    with pytest.raises(
        McpSizeLimitError, match=r"^MCP SSE response body exceeds the 5000-byte limit$"
    ):
        reg.call_tool("h__big", {"bytes": 10_000, "sse": True})
    assert reg.connection("h").state is State.READY
    assert _text(reg.call_tool("h__echo", {"message": "ok"})) == "Echo: ok"


@pytest.mark.req("MCP-HTTP-37", "MCP-HTTP-39", "MCP-HTTP-40", "MCP-HTTP-38", "MCP-ERR-29")
@pytest.mark.parametrize("status", [404, 400])
def test_a_stale_session_fails_once_then_reinitialises(
    connect: Connect, fake: FakeMcpHttp, status: int
) -> None:
    fake.state.stale_status = status
    reg = connect(http_config(fake), options=OPTS)
    reg.call_tool("h__expire", {})
    with pytest.raises(McpOutcomeUnknownError) as err:
        reg.call_tool("h__echo", {"message": "lost"})
    assert str(err.value) == (
        "MCP server `h` failed during tool call `echo`; outcome unknown and request was not "
        f"replayed: session expired (HTTP {status})"
    )
    assert reg.connection("h").state is State.BROKEN
    assert _text(reg.call_tool("h__echo", {"message": "new"})) == "Echo: new"
    inits = [p for p in fake.seen("POST") if p.body.get("method") == "initialize"]
    assert len(inits) == 2 and "Mcp-Session-Id" not in inits[1].headers
    assert not fake.seen("DELETE")
    lost = [
        p
        for p in fake.seen("POST")
        if p.body.get("params", {}).get("arguments") == {"message": "lost"}
    ]
    assert len(lost) == 1  # never replayed


@pytest.mark.req("MCP-CANCEL-01", "MCP-CANCEL-03", "MCP-HTTP-45", "MCP-TIME-06")
def test_a_timeout_aborts_the_stream_and_posts_cancelled(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    reg = connect(http_config(fake), options=McpOptions(default_tool_timeout_s=0.5))
    with pytest.raises(McpTimeoutError, match=r"timed out after 0.5s during tool call `slow`"):
        reg.call_tool("h__slow", {"seconds": 3})
    note = [p for p in fake.seen("POST") if p.body.get("method") == "notifications/cancelled"]
    assert note and note[0].body["params"]["reason"] == "timed out after 0.5s"
    assert _text(reg.call_tool("h__echo", {"message": "after"})) == "Echo: after"


@pytest.mark.req("MCP-CANCEL-06", "MCP-RPC-11")
def test_caller_cancellation_and_the_serial_gate(connect: Connect, fake: FakeMcpHttp) -> None:
    reg = connect(http_config(fake), options=OPTS)
    token = CancelToken()
    threading.Timer(0.3, token.fire).start()
    results: list[str] = []
    second = threading.Thread(
        target=lambda: results.append(_text(reg.call_tool("h__echo", {"message": "queued"})))
    )
    with pytest.raises(McpCancelledError, match=r"call cancelled during tool call `slow`"):
        threading.Timer(0.1, second.start).start()
        reg.call_tool("h__slow", {"seconds": 3}, cancel=token)
    second.join(5)
    assert results == ["Echo: queued"]
    posts = [p.body.get("params", {}).get("name") for p in fake.seen("POST")]
    assert posts.index("slow") < posts.index("echo")  # the queued call waited at the gate


@pytest.mark.req("MCP-REC-03", "MCP-REC-04")
def test_a_refused_connection_is_a_connect_failure(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    dead = FakeMcpHttp()
    url = dead.url
    dead.close()
    with caplog.at_level(logging.WARNING):
        reg = connect(McpServerConfig(name="h", transport="http", url=url), options=OPTS)
    assert reg.servers() == ()
    assert "Failed to connect to MCP server `h`: connection error: ConnectionError" in caplog.text


@pytest.mark.req("MCP-HTTP-40")
def test_a_request_queued_behind_a_stale_session_goes_to_the_new_session(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    reg = connect(http_config(fake), options=OPTS)
    reg.call_tool("h__expire", {})
    results: list[str] = []
    errors: list[Exception] = []

    def call(message: str) -> None:
        try:
            results.append(_text(reg.call_tool("h__echo", {"message": message})))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(m,)) for m in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(errors) <= 1  # only a request that was written to the stale session fails
    assert len(results) + len(errors) == 3
    assert all(isinstance(x, McpOutcomeUnknownError) for x in errors)


@pytest.mark.req("MCP-SIZE-05", "MCP-HTTP-10")
def test_invalid_utf8_and_invalid_session_ids(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    from zeroclaw_ref.mcp import httpbody as hb

    with pytest.raises(McpProtocolError, match=r"^MCP response body was not valid UTF-8$"):
        hb.parse_json_body("h", b"\xff\xfe")
    reg = connect(http_config(fake), options=OPTS)
    transport = reg.connection("h")._transport  # type: ignore[attr-defined]

    class _B(hb.Body):
        status, content_type, content_length = 200, "", None

        def chunks(self) -> Iterator[bytes]:
            yield b""

        def header(self, name: str) -> str | None:
            return "bad id\x01"

        def shutdown(self) -> None: ...

        def close(self) -> None: ...

    with caplog.at_level(logging.WARNING):
        transport.capture_session(_B())
    assert transport.session_id == "sess-1"
    assert "session id with invalid characters" in caplog.text
