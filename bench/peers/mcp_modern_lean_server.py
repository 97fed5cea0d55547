"""A lean 2026-07-28 echo server (stdlib only), the shared fixture of the modern echo cases.

    python bench/peers/mcp_modern_lean_server.py stdio
    python bench/peers/mcp_modern_lean_server.py http <port>      # POST http://127.0.0.1:<port>/mcp

Why it exists: the modern echo cases compare two *clients* (ours and the official SDK's) that
talk to the same server. On the SDK's own server (mcp_modern_echo_server.py) about 0.6 ms of a
0.8 ms round trip is spent in that server, so both clients' ratios were squeezed towards 1 and
the case measured the server more than the clients. This server answers each request with
prebuilt bytes, so what is left to time is the clients. Its answers are byte for byte the
shapes the SDK's server sends for the same requests (recorded from it): `server/discover`,
`tools/list` and `tools/call echo {message}` → `Echo: <message>`, each with `resultType`,
the cache hints and the `serverInfo` `_meta`. Anything else is −32601, and `initialize` is
refused with −32022, so a client can only succeed in the modern era.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VERSION = "2026-07-28"
_META = {"io.modelcontextprotocol/serverInfo": {"name": "bench-modern-echo", "version": "1.0.0"}}
_CACHE = {"cacheScope": "private", "ttlMs": 0}
ECHO_TOOL = {
    "description": "Echo a message",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
    "name": "echo",
}
DISCOVER = {
    **_CACHE,
    "capabilities": {"tools": {"listChanged": False}},
    "resultType": "complete",
    "supportedVersions": [VERSION],
    "_meta": _META,
}
TOOLS = {**_CACHE, "resultType": "complete", "tools": [ECHO_TOOL], "_meta": _META}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reply to one JSON-RPC message, or None for a notification."""
    if "id" not in message:
        return None
    method, rid = message.get("method"), message["id"]
    if method == "server/discover":
        return {"jsonrpc": "2.0", "id": rid, "result": DISCOVER}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": rid, "result": TOOLS}
    if method == "tools/call":
        params = message.get("params") or {}
        text = f"Echo: {(params.get('arguments') or {}).get('message', '')}"
        result = {
            "content": [{"text": text, "type": "text"}],
            "isError": False,
            "resultType": "complete",
            "_meta": _META,
        }
        return {"jsonrpc": "2.0", "id": rid, "result": result}
    if method == "initialize":
        error = {"code": -32022, "message": "Unsupported protocol version"}
        return {"jsonrpc": "2.0", "id": rid, "error": {**error, "data": {"supported": [VERSION]}}}
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}


def _encode(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, separators=(",", ":")).encode()


def serve_stdio() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            out.write(_encode(reply) + b"\n")
            out.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: both clients reuse one connection
    # Headers and body leave in two writes; without TCP_NODELAY, Nagle's algorithm holds the
    # body until the client's delayed ACK (~40 ms), which would time the kernel, not clients.
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        reply = answer(json.loads(body))
        if reply is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = _encode(reply)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the bench reads no server output."""


def main(argv: list[str]) -> int:
    if argv[0] == "stdio":
        serve_stdio()
        return 0
    server = ThreadingHTTPServer(("127.0.0.1", int(argv[1])), _Handler)
    server.serve_forever()  # until the case terminates it
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
