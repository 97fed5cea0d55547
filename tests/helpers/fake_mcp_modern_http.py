"""The scripted modern server of fake_mcp_modern.py over Streamable HTTP on loopback.

POSTs only: the routing headers are checked against the body (a mismatch is -32020 with HTTP
400, as the 2026-07-28 revision says), refusals (-32020/-32021/-32022/-32602) go out as 400
with their JSON-RPC error, a `subscriptions/listen` POST is answered with an event stream that
stays open and carries the list-change notifications, and GET and DELETE are refused with 405.
Every request is recorded with its headers.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.helpers.fake_mcp_modern import Core, parser

REFUSALS = (-32020, -32021, -32022, -32602)


@dataclass
class Seen:
    verb: str
    headers: dict[str, str]
    body: Any


def _decoded(value: str | None) -> str | None:
    if value is not None and value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[9:-2]).decode("utf-8")
    return value


@dataclass
class _State:
    core: Core
    seen: list[Seen] = field(default_factory=list)
    streams: list[tuple[Any, threading.Event]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    listen_closed: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _reply(self, status: int, body: bytes = b"", ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _record(self, body: Any) -> None:
        with self.server.st.lock:
            self.server.st.seen.append(Seen(self.command, dict(self.headers.items()), body))

    def do_GET(self) -> None:
        self._record(None)
        self._reply(405)

    def do_DELETE(self) -> None:
        self._record(None)
        self._reply(405)

    def _mismatch(self, message: dict[str, Any]) -> str | None:
        meta = (message.get("params") or {}).get("_meta") or {}
        version = meta.get("io.modelcontextprotocol/protocolVersion")
        if self.headers.get("MCP-Protocol-Version") != version:
            return "MCP-Protocol-Version header does not match the envelope"
        if self.headers.get("Mcp-Method") != message.get("method"):
            return "Mcp-Method header does not match the body"
        member = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(
            str(message.get("method"))
        )
        if member and _decoded(self.headers.get("Mcp-Name")) != message["params"].get(member):
            return "Mcp-Name header does not match the body"
        return None

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length))
        self._record(message)
        st = self.server.st
        if "method" not in message or "id" not in message:
            self._reply(202)
            return
        if message.get("method") != "initialize" or not st.core.args.dual:
            why = self._mismatch(message)
            if why is not None:
                error = {"code": -32020, "message": why}
                reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                self._reply(400, json.dumps(reply).encode())
                return
        replies = st.core.handle(message)
        listening = message.get("method") == "subscriptions/listen"
        if listening and replies and "error" not in replies[0]:
            self._listen(replies)
            return
        if not replies:
            threading.Event().wait(30)  # `slow`: never answered while the test runs
            return
        reply = replies[-1]
        code = reply.get("error", {}).get("code")
        self._reply(400 if code in REFUSALS else 200, json.dumps(reply).encode())

    def _listen(self, first: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        done = threading.Event()
        st = self.server.st
        with st.lock:
            st.streams.append((self, done))
        try:
            for note in first:
                self._event(note)
            self.connection.settimeout(30)
            self.connection.recv(1)  # returns (b"") when the client closes the stream
        except OSError:
            pass
        done.set()
        st.listen_closed.set()

    def _event(self, value: Any) -> None:
        data = f"event: message\ndata: {json.dumps(value)}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    st: _State


class FakeModernHttp:
    """Serve the modern core on a loopback ephemeral port; `args` are fake_mcp_modern options."""

    def __init__(self, *args: str) -> None:
        core = Core(parser().parse_args(list(args)))
        self.state = _State(core)
        core.on_change = self._push
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.st = self.state
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def _push(self, sid: Any, note: dict[str, Any]) -> None:
        with self.state.lock:
            streams = list(self.state.streams)
        for handler, done in streams:
            try:
                handler._event(note)
            except OSError:
                done.set()

    def seen(self, verb: str | None = None) -> list[Seen]:
        with self.state.lock:
            return [s for s in self.state.seen if verb is None or s.verb == verb]

    def methods(self) -> list[str]:
        return [str(s.body.get("method")) for s in self.seen("POST") if isinstance(s.body, dict)]

    def close(self) -> None:
        for handler, _done in self.state.streams:
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
        self.httpd.shutdown()
        self.httpd.server_close()
