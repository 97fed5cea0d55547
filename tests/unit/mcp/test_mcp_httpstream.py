"""Event streams of the Streamable HTTP transport (`mcp/httpstream.py`): resumption of POST
response streams (mcp.md §4.5), the standalone GET stream (§4.6) and how streams end (§4.9).

The fake's answers are replaced per test through `script_for` (`tests.helpers.fake_mcp_http`),
so that the exact wire situation of a rule can be staged."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
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
    message_event,
    script_for,
    text_result,
)
from tests.helpers.internals import http_transport
from tests.helpers.mcp_calls import call, outcome_unknown, text_of, tool_posts
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.mcp import McpOptions, McpOutcomeUnknownError
from zeroclaw_ref.mcp.http import RequestsBody
from zeroclaw_ref.mcp.httpstream import GetListener
from zeroclaw_ref.mcp.lifecycle import State

OPTS_SHORT_GRACE = McpOptions(
    init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5, close_grace_s=1
)


NO_SSE = "MCP server returned no response in SSE stream"


@pytest.fixture
def fake() -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp()
    yield server
    server.close()  # also frees handlers parked by a script


def http_config(fake: FakeMcpHttp, **fields: Any) -> McpServerConfig:
    return McpServerConfig(name="h", transport="http", url=fake.url, **fields)


def _park(script: Script, seconds: float = 20) -> None:
    """Hold a handler thread until the test ends (bounded)."""
    script.release.wait(seconds)


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
    reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
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
    reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
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
    reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
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
    reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
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
        reg = connect(http_config(fake), options=OPTS_SHORT_GRACE)
        for word in ("x", "y"):
            assert text_of(reg.call_tool("h__echo", {"message": word})) == f"Echo: {word}"
    status = "200" if answer == "200-json" else answer
    assert f"MCP server `h`: no GET stream (HTTP {status})" in caplog.text
    records = [r for r in caplog.records if "GET stream" in r.getMessage()]
    assert records and all(r.levelno == logging.DEBUG for r in records)
    transport = http_transport(reg)
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
    assert not http_transport(reg).get_stream_open
    assert text_of(reg.call_tool("h__echo", {"message": "fine"})) == "Echo: fine"


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
        name="g",
        limit=1 << 20,
        router=router,
        options=OPTS_SHORT_GRACE,
        no_get_stream=False,
        get=get,
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
