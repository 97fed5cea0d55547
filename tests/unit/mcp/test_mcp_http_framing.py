"""Event streams without chunked framing deliver each event when it arrives (MCP-HTTP-23).

A raw socket server answers with a Content-Length body, or with a body that only the closing
connection ends (HTTP/1.0 style), sends one event and then holds the connection open. The
client must hand that event on while the server still holds it, not when 64 KiB or the end
have arrived.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
import requests

from zeroclaw_ref.mcp.http import RequestsBody

EVENT = b'id: 1\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'
REST = b"data: {}\n\n"


class _HoldingServer:
    """Sends the head and EVENT at once, REST only when released, then closes."""

    def __init__(self, head: bytes) -> None:
        self.release = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._head = head
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self._listener.accept()
        with conn:
            conn.recv(65536)  # the request; its content does not matter here
            conn.sendall(self._head + EVENT)
            self.release.wait(10)
            conn.sendall(REST)

    def close(self) -> None:
        self.release.set()
        self._thread.join(5)
        self._listener.close()


HEADS = {
    "content-length": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Content-Length: %d\r\n\r\n" % (len(EVENT) + len(REST))
    ),
    "until-close": b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
}


@pytest.fixture(params=sorted(HEADS))
def server(request: pytest.FixtureRequest) -> Iterator[_HoldingServer]:
    holding = _HoldingServer(HEADS[request.param])
    yield holding
    holding.close()


@pytest.mark.req("MCP-HTTP-23")
def test_an_unchunked_event_stream_yields_an_event_before_the_body_ends(
    server: _HoldingServer,
) -> None:
    response = requests.get(f"http://127.0.0.1:{server.port}/mcp", stream=True, timeout=10)
    body = RequestsBody(response)
    chunks = body.chunks()
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(next(chunks)), daemon=True)
    reader.start()
    reader.join(5)
    # The server still holds the rest: the first event must already be out.
    assert received == [EVENT], "the event was held back until the body ended"
    assert not server.release.is_set()
    server.release.set()
    assert b"".join(chunks) == REST  # and the body still ends where it should
    response.close()


class _ShortAck:
    """A 202 that declares `declared` bytes, sends `sent` of them (one every `drip` s if
    set), then holds the connection until released."""

    def __init__(self, declared: int, sent: bytes, drip: float | None) -> None:
        self.release = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        head = b"HTTP/1.1 202 Accepted\r\nContent-Length: %d\r\n\r\n" % declared
        self._parts = [head, sent] if drip is None else [head, *(bytes([b]) for b in sent)]
        self._drip = drip
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self._listener.accept()
        with conn:
            conn.recv(65536)
            for part in self._parts:
                conn.sendall(part)
                # a bounded wait on the release event doubles as the drip interval
                if self._drip is not None and self.release.wait(self._drip):
                    return
            self.release.wait(10)

    def close(self) -> None:
        self.release.set()
        self._thread.join(5)
        self._listener.close()


@pytest.mark.req("MCP-HTTP-01", "MCP-HTTP-12")
@pytest.mark.parametrize(
    ("declared", "sent", "drip"),
    [(5, b"ab", None), (4000, b"x" * 4000, 0.05)],
    ids=["short-body", "dripping-body"],
)
def test_reading_out_an_acknowledgement_never_holds_the_sender(
    declared: int, sent: bytes, drip: float | None
) -> None:
    """The drain that keeps a keep-alive connection is given a fixed budget; a body that
    does not arrive in time costs the connection, not a stalled notification."""
    from zeroclaw_ref.mcp import http as mcp_http

    server = _ShortAck(declared, sent, drip)
    try:
        response = requests.post(
            f"http://127.0.0.1:{server.port}/mcp", data=b"{}", stream=True, timeout=(5, 30)
        )
        body = RequestsBody(response)
        done = threading.Event()

        def drain() -> None:
            mcp_http._drain(body)
            done.set()

        threading.Thread(target=drain, daemon=True).start()
        # A generous bound for a loaded machine, far below the 30 s read timeout.
        assert done.wait(mcp_http.DRAIN_BUDGET_S + 2.0), "the drain held the sender"
        assert not server.release.is_set()  # the server was still holding the body
        response.close()
    finally:
        server.close()
