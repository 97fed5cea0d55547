"""The Streamable HTTP transport against the loopback fake server (mcp.md §4, §6.2, §7): one
session and its deadlines and secrets (§4.1), POST responses (§4.3) and stale sessions (§4.7).

The tests of one rule each stage its exact wire situation by replacing the fake's answers
through `script_for` (`tests.helpers.fake_mcp_http`). Streams: test_mcp_httpstream.py."""

from __future__ import annotations

import itertools
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import requests

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import (
    FakeMcpHttp,
    Handler,
    https_fake,
    message_event,
    script_for,
    sse_bytes,
    text_result,
)
from tests.helpers.internals import http_transport
from tests.helpers.mcp_calls import call, text_of
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
from zeroclaw_ref.mcp.http import HttpTransport, RequestsBody
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


def http_config(fake: FakeMcpHttp, **fields: Any) -> McpServerConfig:
    return replace(McpServerConfig(name="h", transport="http", url=fake.url), **fields)


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
    from zeroclaw_ref.mcp import httpbody

    with pytest.raises(McpProtocolError, match=r"^MCP response body was not valid UTF-8$"):
        httpbody.parse_json_body("h", b"\xff\xfe")
    reg = connect(http_config(fake), options=OPTS)
    transport = http_transport(reg)

    class _B(httpbody.Body):
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


OPTS_SHORT_GRACE = McpOptions(
    init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5, close_grace_s=1
)
SECRET = "Bearer zc-top-secret-0451"


# --- §4.1 one session, deadlines, secrets ------------------------------------------------


@pytest.mark.req("MCP-HTTP-01", "MCP-HTTP-35")
def test_posts_and_delete_share_one_keep_alive_session_and_the_get_uses_its_own(
    connect: Connect, fake: FakeMcpHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    peers: list[tuple[str, int]] = []
    original = Handler._record

    def record(self: Handler, body: Any) -> None:
        peers.append((self.command, self.client_address[1]))
        original(self, body)

    monkeypatch.setattr(Handler, "_record", record)
    reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
    transport = http_transport(reg)
    assert isinstance(transport, HttpTransport)
    session, get_session = transport._session, transport._get_session
    assert isinstance(session, requests.Session) and session.max_redirects == 10
    assert isinstance(get_session, requests.Session) and get_session is not session
    for word in ("a", "b", "c"):
        assert text_of(reg.call_tool("h__echo", {"message": word})) == f"Echo: {word}"
    reg.close()
    verbs = [verb for verb, _ in peers]
    assert verbs.count("DELETE") == 1 and verbs.count("GET") == 1
    post_ports = {port for verb, port in peers if verb in ("POST", "DELETE")}
    get_ports = {port for verb, port in peers if verb == "GET"}
    # the era probe, initialize, initialized, tools/list, three calls and DELETE: one
    # kept-alive connection
    assert len(post_ports) == 1, peers
    assert get_ports.isdisjoint(post_ports)


@pytest.mark.req("MCP-HTTP-35")
def test_the_get_stream_session_gets_the_same_custom_trust(
    connect: Connect, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, ca = https_fake(tmp_path)
    try:
        server.state.get_mode = "stream"
        config = McpServerConfig(
            name="h", transport="http", url=server.url, tls_ca_cert_path=str(ca)
        )
        reg = connect(config, options=OPTS_SHORT_GRACE)
        wait_for(lambda: bool(server.state.get_streams), "the GET stream over TLS")
        transport = http_transport(reg)
        assert transport.get_stream_open
        assert isinstance(transport._get_session.get_adapter(server.url), http_module._CaAdapter)
        assert text_of(reg.call_tool("h__get_reply", {})) == "via get"
    finally:
        server.close()


@pytest.mark.req("MCP-HTTP-08")
@pytest.mark.parametrize(("timeout", "connect_cap"), [(5.0, 5.0), (100.0, 30.0)])
def test_http_timeouts_follow_the_remaining_deadline(
    connect: Connect, fake: FakeMcpHttp, timeout: float, connect_cap: float
) -> None:
    reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
    transport = http_transport(reg)
    seen: list[tuple[float, float]] = []
    post = transport._session.post
    get = transport._get_session.get

    def spy_post(*args: Any, **kw: Any) -> Any:
        seen.append(kw["timeout"])
        return post(*args, **kw)

    def spy_get(*args: Any, **kw: Any) -> Any:
        seen.append(kw["timeout"])
        return get(*args, **kw)

    transport._session.post = spy_post
    transport._get_session.get = spy_get
    call(reg, "resume", timeout=timeout)  # one POST, then a resumption GET
    assert len(seen) == 2
    for connect_t, read_t in seen:
        assert timeout - 2 < read_t <= timeout
        assert connect_t == pytest.approx(min(connect_cap, read_t))


@pytest.mark.req("MCP-HTTP-08", "MCP-HTTP-46")
def test_a_deadline_aborts_a_streamed_body_by_socket_shutdown_only(
    connect: Connect, fake: FakeMcpHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    readers: dict[int, str] = {}
    closers: dict[int, str] = {}
    shutdowns: dict[int, str] = {}
    alive: list[RequestsBody] = []  # keeps every body alive, so no id() is ever reused
    chunks, close, shutdown = RequestsBody.chunks, RequestsBody.close, RequestsBody.shutdown

    def spy_chunks(self: RequestsBody) -> Iterator[bytes]:
        alive.append(self)
        readers.setdefault(id(self), threading.current_thread().name)
        yield from chunks(self)

    def spy_close(self: RequestsBody) -> None:
        closers.setdefault(id(self), threading.current_thread().name)
        close(self)

    def spy_shutdown(self: RequestsBody) -> None:
        shutdowns.setdefault(id(self), threading.current_thread().name)
        shutdown(self)

    monkeypatch.setattr(RequestsBody, "chunks", spy_chunks)
    monkeypatch.setattr(RequestsBody, "close", spy_close)
    monkeypatch.setattr(RequestsBody, "shutdown", spy_shutdown)
    # A legacy-era connection: an era probe would read its own (aborted) body on the connect
    # thread, which is not the streamed body this test follows.
    reg = connect(http_config(fake, era="legacy"), options=OPTS_SHORT_GRACE)
    # the server sends one event and then keeps the stream open for 30 s
    with pytest.raises(McpTimeoutError, match=r"timed out after 0\.5s during tool call `slow`"):
        call(reg, "slow", timeout=0.5, seconds=30)

    def post_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "mcp-h-post" and t.is_alive()]

    wait_for(lambda: not post_threads(), "the aborted reader to finish", timeout=5)
    assert len(shutdowns) == 1
    ((aborted, aborter),) = shutdowns.items()
    assert aborter == threading.current_thread().name  # the caller, on its deadline
    assert readers[aborted] == "mcp-h-post"
    assert closers[aborted] == "mcp-h-post"  # only the reading thread closed it
    for body, reader in readers.items():
        assert closers.get(body, reader) == reader
    assert text_of(reg.call_tool("h__echo", {"message": "after"})) == "Echo: after"


@pytest.mark.req("MCP-HTTP-46")
def test_shutdown_unblocks_a_read_on_another_thread_without_closing_the_response() -> None:
    ours, theirs = socket.socketpair()
    closed: list[str] = []
    resp = SimpleNamespace(
        status_code=200,
        headers={"Content-Type": "text/event-stream"},
        raw=SimpleNamespace(connection=SimpleNamespace(sock=ours)),
        close=lambda: closed.append(threading.current_thread().name),
    )
    body = RequestsBody(resp)  # type: ignore[arg-type]
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(ours.recv(10)), name="reader")
    reader.start()
    try:
        body.shutdown()
        reader.join(5)
        assert not reader.is_alive() and got == [b""]  # the blocked read saw end of stream
        assert closed == []  # the aborting thread never closes the response
    finally:
        ours.close()
        theirs.close()


@pytest.mark.req("MCP-HTTP-07")
def test_header_values_never_reach_logs_or_error_texts(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    headers = {"Authorization": SECRET, "X-Api-Key": SECRET}
    errors: list[str] = []
    script = script_for(fake)

    def get_fails(h: Handler) -> None:
        h._plain(503, b"down")

    script.get = get_fails
    with caplog.at_level(logging.DEBUG):
        reg = connect(http_config(fake, headers=headers), options=OPTS_SHORT_GRACE)
        for tool in ("status500", "badjson", "mismatch", "empty"):
            with pytest.raises(McpProtocolError) as err:
                reg.call_tool(f"h__{tool}", {})
            errors.append(str(err.value))
        reg.call_tool("h__expire", {})
        with pytest.raises(McpOutcomeUnknownError) as lost:
            reg.call_tool("h__echo", {"message": "x"})
        errors.append(str(lost.value))
        reg.close()
        dead = FakeMcpHttp()
        url = dead.url
        dead.close()
        config = McpServerConfig(name="d", transport="http", url=url, headers=headers)
        assert connect(config, options=OPTS_SHORT_GRACE).servers() == ()
    assert "GET stream answered HTTP 503" in caplog.text  # the failures were logged
    assert "Failed to connect to MCP server `d`" in caplog.text
    assert all(h.headers.get("Authorization") == SECRET for h in fake.seen("POST"))
    secret_part = SECRET.split()[1]
    assert secret_part not in caplog.text
    assert not any(secret_part in text for text in errors)
    assert not any(secret_part in str(r.args) for r in caplog.records)


# --- §4.3 POST responses -----------------------------------------------------------------


class _Router:
    def __init__(self) -> None:
        self.routed: list[JSON] = []
        self.broken: list[bool] = []

    def route(self, value: JSON, generation: int) -> None:
        self.routed.append(value)

    def transport_failed(self, generation: int, cause: str, stderr_tail: str = "") -> None:
        raise AssertionError("not expected")

    def mark_broken(self, generation: int, lossy: bool) -> None:
        self.broken.append(lossy)

    def pending_count(self) -> int:
        return 0

    def fail_pending(self, error_text: str) -> None:
        raise AssertionError("not expected")


class _AckBody:
    """A POST answer with a body that must never be parsed."""

    def __init__(self, status: int, data: bytes, ctype: str = "application/json") -> None:
        self.status, self.content_type, self.content_length = status, ctype, len(data)
        self.data, self.closed = data, False

    def chunks(self) -> Iterator[bytes]:
        yield self.data

    def header(self, name: str) -> str | None:
        return None

    def shutdown(self) -> None: ...

    def set_read_timeout(self, seconds: float | None) -> None: ...

    def close(self) -> None:
        self.closed = True


@pytest.mark.req("MCP-HTTP-12")
@pytest.mark.parametrize(
    ("status", "data"),
    [
        (202, b""),
        (200, b'{"jsonrpc":"2.0","id":1,"result":{}}'),
        (200, b"<html>not json</html>"),
        (204, b""),
        (201, b"data: {}\n\n"),
    ],
)
def test_any_2xx_delivers_a_notification_and_its_body_is_not_parsed(
    status: int, data: bytes
) -> None:
    router = _Router()
    config = McpServerConfig(name="n", transport="http", url="http://127.0.0.1:9/mcp")
    transport = HttpTransport(config, OPTS_SHORT_GRACE, router)  # type: ignore[arg-type]
    body = _AckBody(status, data)
    transport.post = lambda *a, **k: body  # type: ignore[method-assign]
    transport.send_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    transport.send_message({"jsonrpc": "2.0", "id": 7, "result": {}})
    assert router.routed == [] and router.broken == [] and body.closed


@pytest.mark.req("MCP-HTTP-12")
def test_a_non_2xx_notification_answer_is_a_delivery_failure() -> None:
    config = McpServerConfig(name="n", transport="http", url="http://127.0.0.1:9/mcp")
    transport = HttpTransport(config, OPTS_SHORT_GRACE, _Router())  # type: ignore[arg-type]
    transport.post = lambda *a, **k: _AckBody(500, b"{}")  # type: ignore[method-assign]
    with pytest.raises(McpProtocolError, match=r"^MCP server returned HTTP 500$"):
        transport.send_message({"jsonrpc": "2.0", "method": "notifications/initialized"})


@pytest.mark.req("MCP-HTTP-12")
def test_a_200_with_a_garbage_body_to_initialized_still_connects(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    def noisy_ack(h: Handler, message: dict[str, Any]) -> None:
        h._plain(200, b"{{ not json", "application/json")

    script_for(fake).posts["notifications/initialized"] = noisy_ack
    with caplog.at_level(logging.WARNING):
        reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
    assert reg.servers() == ("h",)
    assert "could not send" not in caplog.text
    assert text_of(reg.call_tool("h__echo", {"message": "ok"})) == "Echo: ok"


@pytest.mark.req("MCP-HTTP-13")
@pytest.mark.parametrize("ctype", ["application/json", "application/vnd.mcp+json; charset=utf-8"])
def test_a_json_body_is_routed_message_by_message(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture, ctype: str
) -> None:
    def batch(h: Handler, message: dict[str, Any]) -> None:
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "warning", "data": "from the batch"},
        }
        stray = text_result(99_999, "not ours")
        body = json.dumps([note, stray, text_result(message["id"], "ours")]).encode()
        h._plain(200, body, ctype)

    script_for(fake).posts["tools/call:batch"] = batch
    reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
    with caplog.at_level(logging.DEBUG):
        assert text_of(call(reg, "batch")) == "ours"
    server_logs = [r for r in caplog.records if r.name == "zeroclaw_ref.mcp.server.h"]
    assert any("from the batch" in r.getMessage() for r in server_logs)
    assert reg.connection("h").state is State.READY


@pytest.mark.req("MCP-HTTP-13")
def test_a_json_body_over_the_cap_fails_the_request(connect: Connect, fake: FakeMcpHttp) -> None:
    reg = connect(http_config(fake, max_response_bytes=4000), options=OPTS_SHORT_GRACE)
    with pytest.raises(Exception, match=r"exceeds the 4000-byte limit$"):
        reg.call_tool("h__big", {"bytes": 8000})


@pytest.mark.req("MCP-HTTP-23")
def test_an_event_stream_with_content_length_is_read_like_a_chunked_one(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    def fixed_length(h: Handler, message: dict[str, Any]) -> None:
        note = {"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "before the reply"}}  # fmt: skip
        body = sse_bytes(
            "id: 0\ndata: \n\n",
            ": comment\n\n",
            message_event(note),
            "event: other\ndata: {}\n\n",
            message_event(text_result(message["id"], "fixed length"), "e1"),
        )
        h._plain(200, body, "text/event-stream")  # Content-Length, no chunked encoding

    script_for(fake).posts["tools/call:fixed"] = fixed_length
    reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
    with caplog.at_level(logging.INFO):
        assert text_of(call(reg, "fixed")) == "fixed length"
    assert any("before the reply" in r.getMessage() for r in caplog.records)
    assert "Transfer-Encoding" not in str(fake.seen("POST")[-1].headers)


# --- §4.7 stale sessions on notifications and responses ----------------------------------


@pytest.mark.req("MCP-HTTP-42", "MCP-HTTP-44")
def test_a_stale_answer_post_breaks_the_connection_but_not_the_pending_call(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    answered = threading.Event()

    def expire_then_ask(h: Handler, message: dict[str, Any]) -> None:
        fake.state.sessions.clear()  # whatever the client sends next is for a dead session
        h._sse_start()
        ask = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
        h._event({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
                  "params": ask})  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # bounded: wait for the client's answer POST
            if any(
                isinstance(s.body, dict) and s.body.get("id") == "ask-1" and "result" in s.body
                for s in fake.seen("POST")
            ):
                answered.set()
                break
            answered.wait(0.01)
        h._event(text_result(message["id"], "finished anyway"), "e9")
        h._sse_end()

    script_for(fake).posts["tools/call:asker"] = expire_then_ask
    reg = connect(http_config(fake), options=OPTS_SHORT_GRACE,
                  handlers=ClientHandlers(elicitation=accept_with_defaults))  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="zeroclaw_ref.mcp"):
        assert text_of(call(reg, "asker")) == "finished anyway"
    assert answered.is_set()
    warning = "MCP server `h`: session expired; reconnecting on next use"
    assert warning in [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert reg.connection("h").state is State.BROKEN
    assert text_of(reg.call_tool("h__echo", {"message": "again"})) == "Echo: again"
    inits = [p for p in fake.seen("POST") if p.body.get("method") == "initialize"]
    assert len(inits) == 2 and reg.connection("h").state is State.READY
