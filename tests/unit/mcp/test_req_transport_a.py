"""Streamable HTTP transport rules (mcp.md §4) against the scripted fake.

Each test names the rule it proves; the fake's answers are replaced per test through
`script_for` (`tests.helpers.fake_mcp_http`) so that the exact wire situation of a rule can be
staged.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import requests
from urllib3.exceptions import ProtocolError

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import (
    FakeMcpHttp,
    Handler,
    Script,
    https_fake,
    message_event,
    script_for,
    sse_bytes,
    text_result,
)
from tests.helpers.mcp_calls import call, outcome_unknown, text_of, tool_posts
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpOptions,
    McpOutcomeUnknownError,
    McpProtocolError,
    McpTimeoutError,
    accept_with_defaults,
)
from zeroclaw_ref.mcp import http as http_module
from zeroclaw_ref.mcp.http import HttpTransport, RequestsBody
from zeroclaw_ref.mcp.httpstream import GetListener
from zeroclaw_ref.mcp.lifecycle import State

OPTS = McpOptions(init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5, close_grace_s=1)
SECRET = "Bearer zc-top-secret-0451"
NO_SSE = "MCP server returned no response in SSE stream"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp()
    yield server
    script_for(server).release.set()
    server.close()


def http_config(fake: FakeMcpHttp, **fields: Any) -> McpServerConfig:
    return McpServerConfig(name="h", transport="http", url=fake.url, **fields)


def _park(script: Script, seconds: float = 20) -> None:
    """Hold a handler thread until the test ends (bounded)."""
    script.release.wait(seconds)


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
    reg = connect(http_config(fake), options=OPTS)
    transport = reg.connection("h")._transport
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
        reg = connect(config, options=OPTS)
        wait_for(lambda: bool(server.state.get_streams), "the GET stream over TLS")
        transport = reg.connection("h")._transport
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
    reg = connect(http_config(fake), options=OPTS)
    transport = reg.connection("h")._transport
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
    reg = connect(http_config(fake, era="legacy"), options=OPTS)
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
        reg = connect(http_config(fake, headers=headers), options=OPTS)
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
        assert connect(config, options=OPTS).servers() == ()
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
    transport = HttpTransport(config, OPTS, router)  # type: ignore[arg-type]
    body = _AckBody(status, data)
    transport.post = lambda *a, **k: body  # type: ignore[method-assign]
    transport.send_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    transport.send_message({"jsonrpc": "2.0", "id": 7, "result": {}})
    assert router.routed == [] and router.broken == [] and body.closed


@pytest.mark.req("MCP-HTTP-12")
def test_a_non_2xx_notification_answer_is_a_delivery_failure() -> None:
    config = McpServerConfig(name="n", transport="http", url="http://127.0.0.1:9/mcp")
    transport = HttpTransport(config, OPTS, _Router())  # type: ignore[arg-type]
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
        reg = connect(http_config(fake), options=OPTS)
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
    reg = connect(http_config(fake), options=OPTS)
    with caplog.at_level(logging.DEBUG):
        assert text_of(call(reg, "batch")) == "ours"
    server_logs = [r for r in caplog.records if r.name == "zeroclaw_ref.mcp.server.h"]
    assert any("from the batch" in r.getMessage() for r in server_logs)
    assert reg.connection("h").state is State.READY


@pytest.mark.req("MCP-HTTP-13")
def test_a_json_body_over_the_cap_fails_the_request(connect: Connect, fake: FakeMcpHttp) -> None:
    reg = connect(http_config(fake, max_response_bytes=4000), options=OPTS)
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
    reg = connect(http_config(fake), options=OPTS)
    with caplog.at_level(logging.INFO):
        assert text_of(call(reg, "fixed")) == "fixed length"
    assert any("before the reply" in r.getMessage() for r in caplog.records)
    assert "Transfer-Encoding" not in str(fake.seen("POST")[-1].headers)


# --- §4.5 resumption ---------------------------------------------------------------------


def _priming(event_id: str | None, retry_ms: int = 5) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}retry: {retry_ms}\ndata: \n\n"


@pytest.mark.req("MCP-HTTP-28")
def test_a_resumed_stream_that_ends_again_is_resumed_with_the_newest_id(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    script = script_for(fake)
    pending: dict[str, Any] = {}
    by_last: dict[str, list[str]] = {}

    def start(h: Handler, message: dict[str, Any]) -> None:
        pending["rid"] = message["id"]
        h._plain(200, _priming("a1").encode(), "text/event-stream")

    def resume(h: Handler) -> None:
        last = h.headers.get("Last-Event-ID")
        if last is None:
            h._plain(405)
            return
        count = by_last.setdefault(last, [])
        count.append(last)
        if last == "a1":
            body = "id: a2\ndata: \n\n"  # a new id, then the stream ends again
        elif len(count) == 1:
            body = ": nothing new\n\n"  # ends without a new id: resume with a2 again
        else:
            body = message_event(text_result(pending["rid"], "third time lucky"), "a3")
        h._plain(200, body.encode(), "text/event-stream")

    script.posts["tools/call:flaky"] = start
    script.get = resume
    reg = connect(http_config(fake), options=OPTS)
    assert text_of(call(reg, "flaky")) == "third time lucky"
    resumed = [g.headers.get("Last-Event-ID") for g in fake.seen("GET")][1:]
    assert resumed == ["a1", "a2", "a2"]
    assert len(tool_posts(fake, "flaky")) == 1


@pytest.mark.req("MCP-HTTP-29", "MCP-HTTP-30")
def test_resumptions_are_capped(connect: Connect, fake: FakeMcpHttp) -> None:
    script = script_for(fake)
    ids = iter(range(1, 100))

    def start(h: Handler, message: dict[str, Any]) -> None:
        h._plain(200, _priming("p0").encode(), "text/event-stream")

    def resume(h: Handler) -> None:
        if h.headers.get("Last-Event-ID") is None:
            h._plain(405)
            return
        h._plain(200, f"id: p{next(ids)}\ndata: \n\n".encode(), "text/event-stream")

    script.posts["tools/call:endless"] = start
    script.get = resume
    options = McpOptions(init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5,
                         max_resumptions=3)  # fmt: skip
    reg = connect(http_config(fake), options=options)
    with pytest.raises(McpOutcomeUnknownError) as err:
        call(reg, "endless")
    assert str(err.value) == outcome_unknown("endless", NO_SSE)
    resumed = [g.headers.get("Last-Event-ID") for g in fake.seen("GET")][1:]
    assert resumed == ["p0", "p1", "p2"]  # three resumptions, the newest id each time
    assert reg.connection("h").state is State.READY


@pytest.mark.req("MCP-HTTP-29", "MCP-HTTP-30", "MCP-HTTP-43")
@pytest.mark.parametrize("answer", ["404", "500", "json"])
def test_a_refused_resumption_fails_the_request_but_keeps_the_session(
    connect: Connect, fake: FakeMcpHttp, answer: str
) -> None:
    script = script_for(fake)

    def start(h: Handler, message: dict[str, Any]) -> None:
        h._plain(200, _priming("r1").encode(), "text/event-stream")

    def resume(h: Handler) -> None:
        if h.headers.get("Last-Event-ID") is None:
            h._plain(405)
        elif answer == "json":
            h._plain(200, b"{}", "application/json")
        else:
            h._plain(int(answer), b"Not Found: session")

    script.posts["tools/call:refused"] = start
    script.get = resume
    reg = connect(http_config(fake), options=OPTS)
    with pytest.raises(McpOutcomeUnknownError) as err:
        call(reg, "refused")
    assert str(err.value) == outcome_unknown("refused", NO_SSE)
    assert reg.connection("h").state is State.READY
    assert text_of(reg.call_tool("h__echo", {"message": "same"})) == "Echo: same"
    inits = [p for p in fake.seen("POST") if p.body.get("method") == "initialize"]
    assert len(inits) == 1  # the 404 on the GET did not make the session stale
    assert fake.seen("POST")[-1].headers["Mcp-Session-Id"] == "sess-1"


@pytest.mark.req("MCP-HTTP-29", "MCP-HTTP-30")
def test_a_stream_that_ends_before_any_event_id_is_not_resumed(
    connect: Connect, fake: FakeMcpHttp
) -> None:
    def no_id(h: Handler, message: dict[str, Any]) -> None:
        h._plain(200, b"data: \n\n: bye\n\n", "text/event-stream")

    script_for(fake).posts["tools/call:noid"] = no_id
    reg = connect(http_config(fake), options=OPTS)
    with pytest.raises(McpOutcomeUnknownError) as err:
        call(reg, "noid")
    assert str(err.value) == outcome_unknown("noid", NO_SSE)
    assert len(fake.seen("GET")) == 1  # only the standalone attempt at connect
    assert reg.connection("h").state is State.READY


def _cut(h: Handler, head: bytes) -> None:
    """Send `head` and drop the connection mid-body."""
    h.wfile.write(head)
    h.wfile.flush()
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


@pytest.mark.req("MCP-HTTP-30")
@pytest.mark.parametrize("shape", ["sse", "json"])
def test_a_connection_error_after_writing_is_outcome_unknown_and_keeps_ready(
    connect: Connect, fake: FakeMcpHttp, shape: str
) -> None:
    def broken(h: Handler, message: dict[str, Any]) -> None:
        if shape == "sse":
            head = (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n5\r\n: hi\n\r\n"
            )
        else:
            head = (
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b'Content-Length: 500\r\n\r\n{"jsonrpc":'
            )
        _cut(h, head)

    script_for(fake).posts["tools/call:cut"] = broken
    reg = connect(http_config(fake), options=OPTS)
    with pytest.raises(McpOutcomeUnknownError) as err:
        call(reg, "cut")
    assert str(err.value) == outcome_unknown("cut", "connection error: ProtocolError")
    assert reg.connection("h").state is State.READY
    assert len(tool_posts(fake, "cut")) == 1  # never replayed
    assert text_of(reg.call_tool("h__echo", {"message": "on"})) == "Echo: on"
    inits = [p for p in fake.seen("POST") if p.body.get("method") == "initialize"]
    assert len(inits) == 1


# --- §4.6 the standalone GET stream ------------------------------------------------------


@pytest.mark.req("MCP-HTTP-32", "MCP-HTTP-43")
@pytest.mark.parametrize("answer", ["400", "404", "405", "406", "200-json"])
def test_a_refused_get_stream_means_no_stream_for_the_session(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture, answer: str
) -> None:
    def refuse(h: Handler) -> None:
        if answer == "200-json":
            h._plain(200, b"{}", "application/json")
        else:
            h._plain(int(answer), b"no")

    script_for(fake).get = refuse
    with caplog.at_level(logging.DEBUG, logger="zeroclaw_ref.mcp"):
        reg = connect(http_config(fake), options=OPTS)
        for word in ("x", "y"):
            assert text_of(reg.call_tool("h__echo", {"message": word})) == f"Echo: {word}"
    status = "200" if answer == "200-json" else answer
    assert f"MCP server `h`: no GET stream (HTTP {status})" in caplog.text
    records = [r for r in caplog.records if "GET stream" in r.getMessage()]
    assert records and all(r.levelno == logging.DEBUG for r in records)
    transport = reg.connection("h")._transport
    assert transport.no_get_stream and not transport.get_stream_open
    assert len(fake.seen("GET")) == 1  # never retried
    assert reg.connection("h").state is State.READY
    inits = [p for p in fake.seen("POST") if p.body.get("method") == "initialize"]
    assert len(inits) == 1  # a 404 on the GET never made the session stale


@pytest.mark.req("MCP-HTTP-33")
@pytest.mark.parametrize("failure", ["503", "reset", "timeout"])
def test_other_get_failures_warn_and_mean_no_stream(
    connect: Connect, fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    script = script_for(fake)

    def fail(h: Handler) -> None:
        if failure == "503":
            h._plain(503, b"busy")
        elif failure == "reset":
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
        else:
            _park(script)  # never sends the status line

    script.get = fail
    options = McpOptions(init_timeout_s=1, list_timeout_s=5, default_tool_timeout_s=5)
    with caplog.at_level(logging.WARNING, logger="zeroclaw_ref.mcp"):
        reg = connect(http_config(fake), options=options)
    expected = {
        "503": "MCP server `h`: GET stream answered HTTP 503",
        "reset": "MCP server `h`: GET stream failed: ConnectionError",
        "timeout": "MCP server `h`: GET stream failed: ReadTimeout",
    }[failure]
    assert expected in [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert reg.servers() == ("h",) and reg.connection("h").state is State.READY
    assert not reg.connection("h")._transport.get_stream_open
    assert text_of(reg.call_tool("h__echo", {"message": "fine"})) == "Echo: fine"


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
    reg = connect(http_config(fake), options=OPTS,
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


# --- §4.9 stream ends ---------------------------------------------------------------------


class _RawStream:
    """urllib3's response surface as RequestsBody reads an unchunked body: read1 gives
    `first`, then fails with `error`."""

    chunked = False

    def __init__(self, first: bytes, error: BaseException) -> None:
        self.first, self.error = first, error
        self.connection = None
        self._given = False

    def supports_chunked_reads(self) -> bool:
        return False

    def read1(self, amount: int, decode_content: bool = False) -> bytes:
        if not self._given:
            self._given = True
            return self.first
        raise self.error


class _Resp:
    def __init__(self, status: int, ctype: str, raw: Any) -> None:
        self.status_code, self.headers, self.raw = status, {"Content-Type": ctype}, raw
        self.closed_by: list[str] = []

    def close(self) -> None:
        self.closed_by.append(threading.current_thread().name)


@pytest.mark.req("MCP-HTTP-47")
@pytest.mark.parametrize(
    "error",
    [
        requests.exceptions.ChunkedEncodingError("cut"),
        requests.exceptions.ConnectionError("reset"),
        ProtocolError("Connection broken"),
        OSError("shut down"),
        ValueError("I/O operation on closed file"),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_a_shut_down_get_stream_error_is_its_end(
    error: BaseException, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashes: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashes.append(args.exc_value))
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": 1}}
    first = f"retry: 1\nid: x1\nevent: message\ndata: {json.dumps(note)}\n\n".encode()
    responses = [
        _Resp(200, "text/event-stream", _RawStream(first, error)),
        _Resp(405, "text/plain", _RawStream(b"", StopIteration())),
    ]
    asked: list[str | None] = []

    def get(timeout: Any, last_id: str | None) -> RequestsBody:
        asked.append(last_id)
        return RequestsBody(responses[len(asked) - 1])  # type: ignore[arg-type]

    router = _Router()
    transport = SimpleNamespace(
        name="g", limit=1 << 20, router=router, options=OPTS, no_get_stream=False, get=get
    )
    listener = GetListener(transport, 1)  # type: ignore[arg-type]
    assert listener.start(1.0)

    def alive() -> bool:
        return any(t.name == "mcp-g-get" and t.is_alive() for t in threading.enumerate())

    wait_for(lambda: len(asked) == 2 and not alive(), "the listener to reopen and stop")
    assert crashes == []
    assert router.routed == [note]  # what arrived before the error was delivered
    assert asked == [None, "x1"]  # the error ended the stream; it was reopened after it
    assert responses[0].closed_by == ["mcp-g-get"]  # closed by its reader
    assert transport.no_get_stream  # the 405 on reopening: no stream any more
