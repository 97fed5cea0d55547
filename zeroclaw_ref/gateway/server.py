"""The gateway's one port: `ThreadingHTTPServer`, the route table and authentication
(acp.md §13, policy.md POL-PATH-12, DESIGN §6 and §7.9).

Goals: every route except pairing is authenticated before anything else is looked at
(ACP-GW-02, ACP-GW-12); tokens are compared as SHA-256 digests in constant time (ACP-GW-03);
routes are mounted under `gateway.path_prefix`; the configuration comes from a reloading
`ConfigStore` (ACP-GW-08). When `[scheduler].enabled` the process also runs the cron scheduler
(POL-PATH-18).
"""

from __future__ import annotations

import hmac
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.limits import SHUTDOWN_BUDGET_SECS
from zeroclaw_ref.cron.scheduler import Scheduler

from . import api, config_api, pairing, ws
from .request import GatewayDeps, GatewayState, HttpRequest, Reply, Route

log = logging.getLogger(__name__)

# [ACP-GW-04] the exact body of every authentication failure.
UNAUTHORIZED = (
    "Unauthorized - provide Authorization header, Sec-WebSocket-Protocol bearer, "
    "or ?token= query param"
)
NOT_FOUND = "Not found"
METHOD_NOT_ALLOWED = "Method not allowed"
BODY_TOO_LARGE = "Request body too large"
BAD_LENGTH = "Malformed Content-Length"

# DESIGN §6: dispatch is a dict lookup on (verb, path below the prefix).
ROUTES: dict[tuple[str, str], Route] = {
    ("GET", "/acp"): ws.accept,
    ("POST", "/api/chat"): api.chat,
    ("GET", "/api/tools"): api.tools,
    ("GET", "/pair/code"): pairing.get_code,
    ("POST", "/pair"): pairing.post_pair,
    **config_api.ROUTES,
}
# [ACP-GW-12] the pairing routes are the only unauthenticated ones.
OPEN_ROUTES = frozenset({("GET", "/pair/code"), ("POST", "/pair")})
_BEARER = "Bearer "


def presented_token(request: HttpRequest) -> str | None:
    """[ACP-GW-02] the first non-empty of: Authorization after `Bearer `, the first
    `bearer.<token>` subprotocol (upgrades only, ACP-GW-12), the `token` query parameter."""
    header = request.headers.get("Authorization") or ""
    if header.startswith(_BEARER) and header[len(_BEARER) :].strip():
        return header[len(_BEARER) :].strip()
    if request.path == "/acp":
        for entry in ws.offered_subprotocols(request.headers):
            if entry.startswith(ws.BEARER_PREFIX) and entry[len(ws.BEARER_PREFIX) :]:
                return entry[len(ws.BEARER_PREFIX) :]
    return request.query.get("token") or None


def token_accepted(config: ConfigSnapshot, token: str | None) -> bool:
    """[ACP-GW-03] the token's digest equals a configured digest; every entry is compared."""
    if not config.gateway.require_pairing:
        return True
    if not token:
        return False
    digest = pairing.token_digest(token).encode("ascii")
    matched = False
    for stored in config.gateway.paired_tokens:
        matched |= hmac.compare_digest(digest, stored.encode("ascii"))
    return matched


def _strip_prefix(path: str, prefix: str | None) -> str | None:
    """The path below `gateway.path_prefix` (POL-PATH-12), or None when it is outside."""
    if not prefix:
        return path
    prefix = prefix.rstrip("/")
    if path == prefix:
        return "/"
    return path[len(prefix) :] if path.startswith(prefix + "/") else None


class _Handler(BaseHTTPRequestHandler):
    """Parses one request and hands it to `Gateway.handle`."""

    protocol_version = "HTTP/1.1"
    server: _HttpServer

    def do_GET(self) -> None:
        self.server.gateway.handle(self, "GET")

    def do_POST(self) -> None:
        self.server.gateway.handle(self, "POST")

    def do_PUT(self) -> None:
        self.server.gateway.handle(self, "PUT")

    def do_DELETE(self) -> None:
        self.server.gateway.handle(self, "DELETE")

    def log_message(self, format: str, *args: object) -> None:
        log.info("%s - %s", self.address_string(), format % args)


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], gateway: Gateway) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.gateway = gateway
        super().__init__(address, _Handler)


class Gateway:
    """One listening gateway; `serve_forever()` on one thread, `close()` from another."""

    def __init__(self, deps: GatewayDeps, host: str | None = None, port: int | None = None):
        config = deps.config.snapshot()
        self.state = GatewayState(deps, pairing.Pairing())
        bind_host = host if host is not None else config.gateway.host
        bind_port = port if port is not None else config.gateway.port
        self._http = _HttpServer((bind_host, bind_port), self)
        self.pairing_code = self.state.pairing.start(config)
        if self.pairing_code is not None:
            deps.announce(
                f"Pairing code: {self.pairing_code} (exchange it once with POST /pair, or run "
                f"`zeroclaw-acp-bridge --pair-code {self.pairing_code}`)"
            )  # [ACP-GW-11]
        self._scheduler: Scheduler | None = None
        if config.scheduler.enabled:  # [POL-PATH-18]
            self._scheduler = Scheduler(
                deps.config.snapshot, config.scheduler.tick_secs, clock=deps.clock, ids=deps.ids
            )
        self._serving: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The bound host and port (the real port when 0 was asked for)."""
        bound = self._http.server_address
        return str(bound[0]), int(bound[1])

    def serve_forever(self) -> None:
        """Serve until `close()`; starts the scheduler first."""
        if self._scheduler is not None:
            self._scheduler.start()
        self._http.serve_forever()

    def start(self) -> None:
        """Serve on a background thread (tests, embedding)."""
        self._serving = threading.Thread(target=self.serve_forever, name="gateway", daemon=True)
        self._serving.start()

    def close(self) -> None:
        """Stop accepting, end every WebSocket connection and the scheduler, bounded."""
        self._http.shutdown()
        for connection in self.state.connections():
            connection.abort()
        for connection in self.state.connections():
            connection.finished.wait(SHUTDOWN_BUDGET_SECS * 2)
        if self._scheduler is not None:
            self._scheduler.stop(SHUTDOWN_BUDGET_SECS)
        self._http.server_close()
        if self._serving is not None:
            self._serving.join(SHUTDOWN_BUDGET_SECS)

    def handle(self, handler: BaseHTTPRequestHandler, verb: str) -> None:
        """Authenticate, route and answer one request (or let `/acp` take the socket)."""
        config = self.state.deps.config.snapshot()
        url = urlsplit(handler.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        path = _strip_prefix(url.path, config.gateway.path_prefix)
        request = HttpRequest(
            verb, path or url.path, query, handler.headers, b"", handler.client_address[0],
            config, self.state, handler,
        )  # fmt: skip
        key = (verb, request.path)
        guarded = path is None or key not in OPEN_ROUTES
        if guarded and not token_accepted(config, presented_token(request)):
            self._answer(handler, Reply(401, UNAUTHORIZED.encode(), "text/plain"))
            return
        reply = self._route(handler, request, path is not None)
        if reply is not None:
            self._answer(handler, reply)

    def _route(
        self, handler: BaseHTTPRequestHandler, request: HttpRequest, inside: bool
    ) -> Reply | None:
        route = ROUTES.get((request.verb, request.path)) if inside else None
        if route is None:
            if inside and any(path == request.path for _, path in ROUTES):
                return Reply.error(405, METHOD_NOT_ALLOWED)
            return Reply.error(404, NOT_FOUND)
        if request.verb in ("POST", "PUT"):
            raw = (handler.headers.get("Content-Length") or "0").strip()
            length = int(raw) if raw.isascii() and raw.isdigit() else -1
            if length < 0:
                return Reply.error(400, BAD_LENGTH)
            if length > self.state.deps.max_message_bytes:
                return Reply.error(413, BODY_TOO_LARGE)
            body = handler.rfile.read(length) if length > 0 else b""
            request = HttpRequest(
                request.verb, request.path, request.query, request.headers, body,
                request.client_host, request.config, request.state, handler,
            )  # fmt: skip
        return route(request)

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        handler.close_connection = True
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", reply.content_type)
            handler.send_header("Content-Length", str(len(reply.body)))
            handler.send_header("Connection", "close")
            for name, value in reply.headers:
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(reply.body)
        except OSError as exc:
            log.info("client went away before the reply: %s", exc)
