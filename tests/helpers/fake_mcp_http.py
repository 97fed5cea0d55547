"""A scriptable Streamable HTTP MCP server on loopback, standard library only.

`FakeMcpHttp()` listens on 127.0.0.1 at an ephemeral port and serves `/mcp`. Tool names pick
the response style (JSON, SSE, resumable SSE, never answering, oversized, ...). Every request
is recorded with its headers so tests can assert exactly what the client sent. Used by the
unit tests of the HTTP and legacy SSE transports, which also find `/sse` + `/message` here.

`FakeMcpHttp(more_tools=True)` lists three more tools: `escaped` (a reply whose JSON escapes make
its raw body much larger than its decoded text), `blob` (a resource blob of `bytes` decoded
bytes) and `sse_hold` (an SSE reply, then the stream held open until the test sets
`state.hold_release`, then `flood` more bytes before the end).

`script_for(fake)` lets one test replace the answer to one JSON-RPC method (or one tool of
`tools/call`) and every GET on `/mcp`, leaving every other request to the stock fake; a fake
without a `Script` behaves exactly as before. `https_fake` serves HTTPS with a certificate of a
throw-away private CA (`tests/helpers/pki.py`), trusted through `tls_ca_cert_path`.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOOLS = [
    {"name": n, "inputSchema": {"type": "object"}}
    for n in (
        "echo", "sse_echo", "resume", "elicit", "slow", "big", "badjson", "mismatch", "empty",
        "status500", "expire", "sniff", "get_reply", "close",
    )
]  # fmt: skip
MORE_TOOLS = [
    {"name": n, "inputSchema": {"type": "object"}} for n in ("escaped", "blob", "sse_hold")
]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)


@dataclass
class FakeState:
    seen: list[Seen] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)
    counter: Any = field(default_factory=lambda: itertools.count(1))
    stale_status: int = 404  # or 400 (server-everything)
    get_mode: str = "405"  # "405", "stream" or "brief" (one event, then empty streams)
    big_bytes: int = 0
    answers: dict[Any, threading.Event] = field(default_factory=dict)
    answer_values: dict[Any, Any] = field(default_factory=dict)
    pending_replies: dict[str, Any] = field(default_factory=dict)
    get_streams: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    legacy_queues: dict[str, Any] = field(default_factory=dict)
    endpoint: str = "/message?sessionId={sid}"
    session_header: bool = True
    redirect_to: str = ""  # where POST /redir sends the client (itself when empty: a loop)
    tools: list[dict[str, Any]] = field(default_factory=lambda: list(TOOLS))
    hold_release: threading.Event = field(default_factory=threading.Event)  # frees `sse_hold`
    hold_finished: threading.Event = field(default_factory=threading.Event)
    hold_released_in_time: bool = False
    script: Script | None = None


PostHook = Callable[["Handler", dict[str, Any]], None]
GetHook = Callable[["Handler"], None]


@dataclass
class Script:
    """What one fake answers differently. Keys of `posts` are a method name, or
    `tools/call:<tool>` for a single tool; `get` replaces every GET on `/mcp`."""

    posts: dict[str, PostHook] = field(default_factory=dict)
    get: GetHook | None = None
    release: threading.Event = field(default_factory=threading.Event)  # frees parked handlers


def _key(message: dict[str, Any]) -> str:
    method = str(message.get("method", ""))
    if method == "tools/call":
        return f"tools/call:{message.get('params', {}).get('name')}"
    return method


def _result(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _text(rid: Any, text: str) -> dict[str, Any]:
    return _result(rid, {"content": [{"type": "text", "text": text}]})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: avoid Nagle + delayed-ACK stalls
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def st(self) -> FakeState:
        return self.server.state

    def _record(self, body: Any) -> None:
        with self.st.lock:
            self.st.seen.append(Seen(self.command, self.path, dict(self.headers.items()), body))

    def _plain(self, status: int, body: bytes = b"", ctype: str = "text/plain", **hdr: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in hdr.items():
            self.send_header(k.replace("_", "-"), v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, value: Any, **hdr: str) -> None:
        self._plain(200, json.dumps(value).encode(), "application/json", **hdr)

    def _sse_start(self, **hdr: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in hdr.items():
            self.send_header(k.replace("_", "-"), v)
        self.end_headers()

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, value: Any, event_id: str | None = None) -> None:
        head = f"id: {event_id}\n" if event_id else ""
        self._chunk(f"{head}event: message\ndata: {json.dumps(value)}\n\n")

    def _sse_end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # --- verbs ----------------------------------------------------------------------------

    def do_DELETE(self) -> None:
        self._record(None)
        self.st.sessions.discard(self.headers.get("Mcp-Session-Id", ""))
        self._plain(200)

    def do_GET(self) -> None:
        self._record(None)
        script = self.st.script
        if script is not None and script.get is not None and not self.path.startswith("/sse"):
            script.get(self)
            return
        if self.path.startswith("/sse"):
            self.server.legacy_stream(self)
            return
        last = self.headers.get("Last-Event-ID")
        if last is not None and last in self.st.pending_replies:
            self._sse_start()
            self._event(self.st.pending_replies.pop(last), "e2")
            self._sse_end()
            return
        if self.st.get_mode == "brief":
            # MCP-HTTP-36: the first stream sets `retry` and carries one event; every
            # stream after it ends without an event, so the client backs off and gives up.
            self._sse_start()
            if last is None:
                note = {"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": "hello from GET"}}  # fmt: skip
                self._chunk("retry: 20\n")
                self._event(note, "g1")
            self._sse_end()
            return
        if self.st.get_mode != "stream":
            self._plain(405)
            return
        self._sse_start()
        done = threading.Event()
        self.st.get_streams.append((self, done))
        done.wait(30)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length))
        self._record(message)
        script = self.st.script
        if script is not None and self.path.startswith("/mcp") and isinstance(message, dict):
            hook = script.posts.get(_key(message))
            if hook is not None:
                hook(self, message)
                return
        if self.path.startswith("/redir"):
            self._plain(307, Location=self.st.redirect_to or self.path)
            return
        if self.path.startswith("/message"):
            self.server.legacy_post(self, message)
            return
        sid = self.headers.get("Mcp-Session-Id")
        if message.get("method") == "initialize":
            new = f"sess-{next(self.st.counter)}"
            self.st.sessions.add(new)
            caps: dict[str, Any] = {"tools": {}, "resources": {}}
            result = {"protocolVersion": "2025-11-25", "capabilities": caps,
                      "serverInfo": {"name": "fake", "version": "1"}}  # fmt: skip
            self._json(_result(message["id"], result), Mcp_Session_Id=new)
            return
        if sid not in self.st.sessions:
            text = b"Bad Request: No valid session ID provided"
            self._plain(self.st.stale_status, text)
            return
        if "method" not in message or "id" not in message:
            rid = message.get("id")
            if rid in self.st.answers:
                self.st.answer_values[rid] = message
                self.st.answers[rid].set()
            self._plain(202)
            return
        method = message["method"]
        if method == "tools/list":
            self._json(_result(message["id"], {"tools": self.st.tools}))
            return
        if method == "tools/call":
            name = message["params"]["name"]
            getattr(self, "t_" + name)(message["id"], message["params"].get("arguments") or {})
            return
        self._json(
            {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "Method not found"},
            }
        )

    # --- tools ----------------------------------------------------------------------------

    def t_echo(self, rid: Any, a: dict[str, Any]) -> None:
        self._json(_text(rid, f"Echo: {a.get('message', '')}"))

    def t_sse_echo(self, rid: Any, a: dict[str, Any]) -> None:
        self._sse_start()
        self._chunk("id: 0\ndata: \n\n")  # priming event without data
        self._chunk(": a comment\n\n")
        self._event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "x"},
            }
        )
        self._chunk("event: other\ndata: {}\n\n")
        self._event(_text(rid, f"Echo: {a.get('message', '')}"), "e1")
        self._sse_end()

    def t_resume(self, rid: Any, a: dict[str, Any]) -> None:
        self.st.pending_replies["r1"] = _text(rid, "resumed")
        self._sse_start()
        self._chunk("id: r1\r\nretry: 200\r\ndata: \r\n\r\n")
        self._sse_end()

    def t_elicit(self, rid: Any, a: dict[str, Any]) -> None:
        ask_id = 0
        done = threading.Event()
        self.st.answers[ask_id] = done
        self._sse_start()
        params = {
            "message": "Name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "default": "Ada"}},
            },
        }
        self._event(
            {"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create", "params": params}
        )
        done.wait(10)
        answer = self.st.answer_values.get(ask_id)
        self._event(_text(rid, json.dumps(answer)))
        self._sse_end()

    def t_get_reply(self, rid: Any, a: dict[str, Any]) -> None:
        # the reply travels on the standalone GET stream; the POST body is empty
        self._plain(200, b"", "application/json")
        for handler, _done in list(self.st.get_streams):
            handler._event(_text(rid, "via get"))

    def t_slow(self, rid: Any, a: dict[str, Any]) -> None:
        self._sse_start()
        self._chunk("id: s1\ndata: \n\n")
        threading.Event().wait(float(a.get("seconds", 3)))
        with contextlib.suppress(OSError):
            self._sse_end()

    def t_big(self, rid: Any, a: dict[str, Any]) -> None:
        if a.get("sse"):
            self._sse_start()
            self._chunk("data: " + "x" * int(a["bytes"]) + "\n\n")
            self._sse_end()
            return
        self._json(_text(rid, "x" * int(a["bytes"])))

    def t_badjson(self, rid: Any, a: dict[str, Any]) -> None:
        self._plain(200, b"<html>oops https://h/x?token=1</html>", "application/json")

    def t_mismatch(self, rid: Any, a: dict[str, Any]) -> None:
        self._json(_text(rid + 100, "wrong"))

    def t_empty(self, rid: Any, a: dict[str, Any]) -> None:
        self._plain(200, b"", "application/json")

    def t_status500(self, rid: Any, a: dict[str, Any]) -> None:
        self._plain(500, b"boom")

    def t_expire(self, rid: Any, a: dict[str, Any]) -> None:
        self.st.sessions.clear()
        self._json(_text(rid, "expired now"))

    def t_sniff(self, rid: Any, a: dict[str, Any]) -> None:
        body = f"data: {json.dumps(_text(rid, 'sniffed'))}\n\n".encode()
        self._plain(200, body, "text/plain")

    # --- the tools of more_tools=True -------------------------------------------------------

    def t_escaped(self, rid: Any, a: dict[str, Any]) -> None:
        reply = json.dumps(_text(rid, "\u00e9" * int(a["chars"])), ensure_ascii=True)
        if a.get("sse"):
            self._sse_start()
            self._chunk(f"event: message\ndata: {reply}\n\n")
            self._sse_end()
            return
        self._plain(200, reply.encode(), "application/json")

    def t_blob(self, rid: Any, a: dict[str, Any]) -> None:
        blob = base64.b64encode(b"\x00" * int(a["bytes"])).decode()
        resource = {"uri": "file:///data/big.bin", "mimeType": "application/octet-stream",
                    "blob": blob}  # fmt: skip
        self._json(_result(rid, {"content": [{"type": "resource", "resource": resource}]}))

    def t_sse_hold(self, rid: Any, a: dict[str, Any]) -> None:
        self._sse_start()
        self._event(_text(rid, "early"), "h1")
        self.st.hold_released_in_time = self.st.hold_release.wait(10)
        with contextlib.suppress(OSError):
            self._chunk(": " + "f" * int(a.get("flood", 0)) + "\n\n")
            self._sse_end()
        self.st.hold_finished.set()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: FakeState

    def legacy_stream(self, handler: Handler) -> None:
        import queue

        sid = f"legacy-{next(self.state.counter)}"
        q: queue.Queue[Any] = queue.Queue()
        self.state.legacy_queues[sid] = q
        handler._sse_start()
        if self.state.endpoint:
            handler._chunk(f"event: endpoint\ndata: {self.state.endpoint.format(sid=sid)}\n\n")
        while True:
            item = q.get()
            if item is None:
                handler._sse_end()
                return
            handler._chunk(item)

    def legacy_post(self, handler: Handler, message: Any) -> None:
        sid = handler.path.split("sessionId=")[-1]
        q = self.state.legacy_queues.get(sid)
        if q is None:
            return  # like server-everything: never answer an unknown session
        handler._plain(202)
        if "method" not in message or "id" not in message:
            return
        method, rid = message["method"], message["id"]
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "legacy", "version": "1"}}  # fmt: skip
            reply: Any = _result(rid, result)
        elif method == "tools/list":
            reply = _result(rid, {"tools": self.state.tools})
        else:
            args = message["params"].get("arguments") or {}
            if message["params"]["name"] == "big":
                q.put("event: message\ndata: " + "x" * int(args["bytes"]) + "\n\n")
                return
            if message["params"]["name"] == "close":
                q.put(None)
                return
            reply = _text(rid, f"Echo: {args.get('message', '')}")
        q.put(f"event: message\ndata: {json.dumps(reply)}\n\n")


class FakeMcpHttp:
    """Run the fake server on a loopback ephemeral port (HTTPS when `tls` is given)."""

    def __init__(self, tls: ssl.SSLContext | None = None, more_tools: bool = False) -> None:
        self.state = FakeState()
        if more_tools:
            self.state.tools += MORE_TOOLS
        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.httpd.state = self.state
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/mcp"
        self.base = f"{scheme}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def seen(self, verb: str | None = None) -> list[Seen]:
        with self.state.lock:
            return [s for s in self.state.seen if verb is None or s.method == verb]

    def close(self) -> None:
        self.state.hold_release.set()
        if self.state.script is not None:
            self.state.script.release.set()
        for _handler, done in self.state.get_streams:
            done.set()
        for q in self.state.legacy_queues.values():
            q.put(None)
        self.httpd.shutdown()
        self.httpd.server_close()


def script_for(fake: FakeMcpHttp) -> Script:
    """The script of `fake`, attached on first use."""
    if fake.state.script is None:
        fake.state.script = Script()
    return fake.state.script


def sse_bytes(*events: str) -> bytes:
    """Event-stream text made of the given raw event blocks."""
    return "".join(events).encode()


def message_event(value: Any, event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: message\ndata: {json.dumps(value)}\n\n"


def text_result(rid: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}


def https_fake(tmp: Path) -> tuple[FakeMcpHttp, Path]:
    """An HTTPS fake whose certificate chains to a fresh private CA; returns (fake, ca path)."""
    from tests.helpers.pki import make_pki

    ca, cert, key = make_pki(tmp)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return FakeMcpHttp(tls=ctx), ca
