"""A loopback model server for provider tests: replays recorded-shape event streams of the
Chat Completions and Messages APIs and records every request it receives.

Replies are queued in order; each request takes the next one. A reply can be a streamed list of
server-sent events (chunked, optionally paced, optionally cut before its end) or a plain body
with any status. Pacing waits on the client's socket, so a client that goes away ends the wait
at once and is recorded in `disconnected` — the timing is the behaviour under test.
"""

from __future__ import annotations

import json
import queue
import select
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    events: list[bytes] = field(default_factory=list)
    body: bytes = b""
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    pace: float = 0.0  # seconds between events
    cut: bool = False  # drop the connection after the events, without the final chunk
    stall: float = 0.0  # wait this long before the headers


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def sse(data: object, event: str | None = None) -> bytes:
    """One server-sent event; `data` is JSON-encoded unless it is already a string."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def openai_stream(*chunks: dict[str, Any], done: bool = True) -> list[bytes]:
    """Chat Completions chunks, each `choices[0].delta` given as the dict itself unless it
    already has `choices` (or `usage`/`error`), then `[DONE]`."""
    frames = []
    for chunk in chunks:
        if not {"choices", "usage", "error"} & chunk.keys():
            finish = chunk.pop("finish_reason", None)
            choice = {"index": 0, "delta": chunk, "finish_reason": finish}
            chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}
        frames.append(sse(chunk))
    if done:
        frames.append(sse("[DONE]"))
    return frames


def anthropic_stream(*events: dict[str, Any]) -> list[bytes]:
    """Messages API events, each named by its own `type`."""
    return [sse(e, event=str(e["type"])) for e in events]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hangs up mid-reply is what several tests do on purpose


class FakeLLM:
    """`with FakeLLM() as server:` — `server.url` is `http://127.0.0.1:<port>`."""

    def __init__(self) -> None:
        self.replies: queue.SimpleQueue[Reply] = queue.SimpleQueue()
        self.requests: list[Recorded] = []
        self.disconnected = threading.Event()
        self.served = threading.Event()  # a reply was written completely
        self.connections = 0
        self._server = _QuietServer(("127.0.0.1", 0), self._handler_class())
        # Design: a short poll interval only shortens `shutdown()` at the end of each test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *replies: Reply) -> None:
        for reply in replies:
            self.replies.put(reply)

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

            def do_POST(self) -> None:
                fake.connections += 1
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.requests.append(Recorded(self.path, headers, json.loads(raw or b"{}")))
                try:
                    reply = fake.replies.get_nowait()
                except queue.Empty:
                    reply = Reply(status=500, body=b"no reply queued", content_type="text/plain")
                try:
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    fake.disconnected.set()
                    self.close_connection = True

            def _send(self, reply: Reply) -> None:
                if reply.stall and self._client_gone(reply.stall):
                    return
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if not reply.events:
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    fake.served.set()
                    return
                self.send_header("transfer-encoding", "chunked")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for index, frame in enumerate(reply.events):
                    if index and reply.pace and self._client_gone(reply.pace):
                        return
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                    self.wfile.flush()
                if reply.cut:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                fake.served.set()

            def _client_gone(self, seconds: float) -> bool:
                # Wait on the socket itself: a client that closes ends the wait at once.
                readable, _, _ = select.select([self.connection], [], [], seconds)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    fake.disconnected.set()
                    self.close_connection = True
                    return True
                return False

        return Handler
