"""ACP over WebSocket at `<prefix>/acp` (acp.md §13.1, DESIGN §7.9), and the frame channel the
bridge reuses.

Plan: `server.py` has authenticated the upgrade; `accept()` checks the RFC 6455 handshake
headers, answers 101 itself (echoing `zeroclaw.acp.v1`, never a `bearer.` entry, ACP-GW-05) and
takes the socket over with a sans-IO `wsproto` connection. The request thread becomes the
connection's reader; each complete message goes to the connection's own `AcpServer`
(ACP-GW-07). Every outbound frame — messages, pongs, the close frame — goes through the
connection's `Writer`, and one lock guards the wsproto object, held only around in-memory calls.

Caveats: the `Writer` carries text lines, so `FrameChannel` tags each line with one character
saying which frame it becomes (`t` text, `p` pong, `c` close); nothing else ever writes to the
queue, so the tag cannot be forged by a peer.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from email.message import Message
from io import BufferedIOBase

from wsproto import WSConnection
from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import (
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    Pong,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, generate_accept_token

from zeroclaw_ref.acp.server import AcpServer, ServerOptions
from zeroclaw_ref.acp.stdio import open_store
from zeroclaw_ref.core.limits import SHUTDOWN_BUDGET_SECS
from zeroclaw_ref.rpc.writer import Writer

from .request import HttpRequest, LiveConnection, Reply

log = logging.getLogger(__name__)

SUBPROTOCOL = "zeroclaw.acp.v1"  # [ACP-GW-05]
BEARER_PREFIX = "bearer."  # [ACP-GW-02]
READ_CHUNK = 65536
# Design: after sending our close frame we wait this long for the peer's, then drop the socket.
CLOSE_WAIT_SECS = 2.0

CLOSE_TOO_BIG = 1009  # [ACP-GW-09] a message above the size limit
NOT_UPGRADE = "Expected a WebSocket upgrade request"
BAD_VERSION = "Unsupported WebSocket version (expected 13)"
BAD_KEY = "Missing or malformed Sec-WebSocket-Key"


def offered_subprotocols(headers: Message) -> list[str]:
    """Every `Sec-WebSocket-Protocol` entry, in order, over repeated headers."""
    entries: list[str] = []
    for value in headers.get_all("Sec-WebSocket-Protocol") or []:
        entries.extend(p.strip() for p in str(value).split(",") if p.strip())
    return entries


class FrameChannel:
    """One WebSocket's wsproto object, its lock and its writer (both gateway and bridge)."""

    def __init__(self, proto: Connection | WSConnection, sock: socket.socket) -> None:
        self._proto = proto
        self._sock = sock
        self._lock = threading.Lock()
        self.writer = Writer(self._sink, on_broken=self.abort)

    def send_text(self, text: str) -> None:
        """Queue one text frame (compact JSON, or a bridge input line)."""
        self.writer.send("t" + text)

    def send_pong(self, payload: bytes) -> None:
        self.writer.send("p" + payload.hex())

    def send_close(self, code: int, reason: str = "") -> None:
        self.writer.send(f"c{code}:{reason}")

    def feed(self, data: bytes | None) -> list[Event]:
        """Hand received bytes (None at end of stream) to wsproto; returns the events."""
        with self._lock:
            try:
                self._proto.receive_data(data)
            except LocalProtocolError:
                return [CloseConnection(code=1006)]  # already closed: nothing more to read
            return list(self._proto.events())

    @property
    def state(self) -> ConnectionState:
        with self._lock:
            return self._proto.state

    def abort(self) -> None:
        """Drop the socket so the reader's blocking read ends (broken stream, shutdown)."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Flush what is queued (the close frame included) and stop the writer."""
        self.writer.close()

    def _sink(self, item: bytes) -> None:
        event = _event_of(item[:-1])
        with self._lock:
            try:
                data = self._proto.send(event)
            except LocalProtocolError:
                return  # [ACP-GW-10] after the close frame, late results are dropped
        self._sock.sendall(data)  # outside the lock (DESIGN §7.9)


def _event_of(tagged: bytes) -> Event:
    kind, body = tagged[:1], tagged[1:]
    if kind == b"p":
        return Pong(payload=bytes.fromhex(body.decode("ascii")))
    if kind == b"c":
        code, _, reason = body.decode("utf-8").partition(":")
        return CloseConnection(code=int(code), reason=reason or None)
    return TextMessage(data=body.decode("utf-8"))


class MessageTooBig(Exception):
    """A message grew past the limit; the connection closes with 1009."""


class Assembler:
    """Reassembles fragmented messages; yields one complete message as bytes plus its kind."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def add(self, event: TextMessage | BytesMessage) -> tuple[bytes, bool] | None:
        """Returns (payload, is_text) when `event` ends a message, else None.

        Raises:
            MessageTooBig: the message exceeds the limit; the caller closes with 1009.
        """
        chunk = event.data.encode("utf-8") if isinstance(event, TextMessage) else bytes(event.data)
        self._size += len(chunk)
        if self._size > self._limit:
            raise MessageTooBig
        self._parts.append(chunk)
        if not event.message_finished:
            return None
        payload = b"".join(self._parts)
        self._parts, self._size = [], 0
        return payload, isinstance(event, TextMessage)


def _check_upgrade(request: HttpRequest) -> Reply | None:
    """RFC 6455 §4.2.1: what a server must see before answering 101."""
    headers = request.headers
    upgrade = (headers.get("Upgrade") or "").strip().lower()
    tokens = {t.strip().lower() for t in (headers.get("Connection") or "").split(",")}
    if request.verb != "GET" or upgrade != "websocket" or "upgrade" not in tokens:
        return Reply.error(426, NOT_UPGRADE)
    if (headers.get("Sec-WebSocket-Version") or "").strip() != "13":
        return Reply(
            426,
            Reply.error(426, BAD_VERSION).body,
            headers=(("Sec-WebSocket-Version", "13"),),
        )
    key = (headers.get("Sec-WebSocket-Key") or "").strip()
    if len(key) != 24 or not key.endswith("=="):
        return Reply.error(400, BAD_KEY)
    return None


def accept(request: HttpRequest) -> Reply | None:
    """The `/acp` route: refuse a bad upgrade, else serve the connection until it ends."""
    refusal = _check_upgrade(request)
    if refusal is not None:
        return refusal
    key = (request.headers.get("Sec-WebSocket-Key") or "").strip().encode("ascii")
    lines = [
        "HTTP/1.1 101 Switching Protocols",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Accept: {generate_accept_token(key).decode('ascii')}",
    ]
    if SUBPROTOCOL in offered_subprotocols(request.headers):
        lines.append(f"Sec-WebSocket-Protocol: {SUBPROTOCOL}")  # [ACP-GW-05]
    handler = request.handler
    handler.close_connection = True
    sock: socket.socket = handler.connection
    try:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("ascii"))
    except OSError:
        return None
    _AcpConnection(request, sock, handler.rfile).run()
    return None


class _AcpConnection(LiveConnection):
    """One accepted WebSocket: its store handle, its AcpServer, its reader loop."""

    def __init__(self, request: HttpRequest, sock: socket.socket, rfile: BufferedIOBase) -> None:
        super().__init__()
        self._request = request
        self._sock = sock
        self._rfile = rfile
        self._channel = FrameChannel(Connection(ConnectionType.SERVER), sock)
        self._assembler = Assembler(request.state.deps.max_message_bytes)
        # [ACP-GW-06] trimmed, blank is absent; AcpServer validates it like an explicit alias.
        self.agent = (request.query.get("agent") or "").strip() or None
        self.server: AcpServer | None = None

    def abort(self) -> None:
        self._channel.abort()

    def run(self) -> None:
        state = self._request.state
        deps = state.deps
        config = deps.config.snapshot()  # [ACP-GW-08] a connection starts from the current one
        store = open_store(config)  # [ACP-STORE-02] one handle per accepted connection
        # [ACP-GW-07] [ACP-REAP-04] own sessions, budget and zc-out counter; no reaper.
        server = AcpServer(
            config,
            self._channel.send_text,
            deps.ids,
            deps.clock,
            ServerOptions(connection_agent=self.agent),
            store,
        )
        self.server = server
        state.add(self)
        try:
            self._read(server)
        finally:
            # [ACP-GW-10] like end of input on stdio, without waiting to deliver results.
            server.shutdown(SHUTDOWN_BUDGET_SECS)
            self._channel.close()
            if store is not None:
                store.close()
            state.discard(self)
            self.finished.set()

    def _recv(self) -> bytes | None:
        try:
            data = self._rfile.read1(READ_CHUNK)
        except OSError:
            return None
        return data or None

    def _read(self, server: AcpServer) -> None:
        closing = False
        while True:
            data = self._recv()
            for event in self._channel.feed(data):
                if isinstance(event, CloseConnection):
                    self._on_close(event)
                    return
                if closing:
                    continue  # after our close frame only the peer's close matters
                if not self._on_event(event, server):
                    closing = True
                    self._sock.settimeout(CLOSE_WAIT_SECS)
            if data is None:
                return

    def _on_close(self, event: CloseConnection) -> None:
        state = self._channel.state
        if state is ConnectionState.REMOTE_CLOSING:
            self._channel.send_close(event.code)  # the peer closed: answer with its code
        elif state is ConnectionState.OPEN and event.code != 1006:
            # wsproto reports a frame it could not parse (1002, 1007 for invalid UTF-8) as a
            # close event while still open; we send that close frame ourselves.
            self._channel.send_close(event.code, event.reason or "")

    def _on_event(self, event: Event, server: AcpServer) -> bool:
        """Handle one event; False once this side has started closing."""
        if isinstance(event, Ping):
            self._channel.send_pong(bytes(event.payload))
            return True
        if not isinstance(event, TextMessage | BytesMessage):
            return True  # an unsolicited pong
        try:
            message = self._assembler.add(event)
        except MessageTooBig:
            self._channel.send_close(CLOSE_TOO_BIG, "message too big")
            return False
        if message is None:
            return True
        payload, is_text = message
        if not is_text:
            try:
                payload.decode("utf-8")
            except UnicodeDecodeError:
                log.warning("dropping a binary frame that is not UTF-8")  # [ACP-GW-09]
                return True
        # [ACP-GW-08] every session/new, load and resume sees the snapshot current now.
        server.config = self._request.state.deps.config.snapshot()
        server.endpoint.dispatch(payload)  # [ACP-GW-09] one frame, one message, never split
        return True
