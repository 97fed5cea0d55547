"""The gateway's one port: `ThreadingHTTPServer`, the route table and authentication
(acp.md §13, policy.md POL-PATH-12, DESIGN §6 and §7.9).

Goals: every route except pairing is authenticated before anything else is looked at
(ACP-GW-02, ACP-GW-12); tokens are compared as SHA-256 digests in constant time (ACP-GW-03);
routes are mounted under `gateway.path_prefix`; the configuration comes from a reloading
`ConfigStore` (ACP-GW-08). When `[scheduler].enabled` the process also runs the cron scheduler
(POL-PATH-18).

Hardening of the one listener (ACP-GW-01), none of it configurable through `config.toml`
(CFG-GW-01 has no key for it), all of it in `Limits`:
- a `Host` header naming anything but this gateway is refused before any route (DNS rebinding);
- a connection gets a total budget for its request line and headers, then one for its body, so a
  silent or byte-at-a-time client is dropped in bounded time; a WebSocket that has been accepted
  has no read timeout at all (ACP-GW-07: no idle reaper);
- connections still in that unauthenticated phase are capped, and the listen backlog is deep
  enough for hundreds of clients connecting at once.
"""

from __future__ import annotations

import hmac
import io
import ipaddress
import logging
import socket
import threading
import time
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.limits import SHUTDOWN_BUDGET_SECS
from zeroclaw_ref.cron.scheduler import Scheduler

from . import api, config_api, pairing, ws
from .request import GatewayDeps, GatewayState, HttpRequest, Reply, Route

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

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
ONE_HOST = "A request must carry exactly one Host header"
WRONG_HOST = (
    "Misdirected request: the Host header must name this gateway (its bound address, "
    "localhost, 127.0.0.1 or [::1]); other names are refused against DNS rebinding"
)
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(slots=True)
class Limits:
    """How long and how many, for sockets that have not yet been authenticated and routed.

    Design: attributes rather than config keys (CFG-GW-01 defines the `[gateway]` keys), so
    tests can shrink them; `backlog` is read once, when the socket starts listening.
    """

    header_secs: float = 10.0  # request line and headers, in total, from accept
    body_secs: float = 30.0  # a POST or PUT body, in total
    send_secs: float = 10.0  # how long one write of an HTTP reply may stall
    max_pending: int = 512  # connections accepted but not yet past authentication
    # socketserver listens with 5, so a burst of clients saw dropped SYNs and retried for
    # seconds; the kernel caps this at net.core.somaxconn.
    backlog: int = 1024


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


def host_name(value: str) -> str | None:
    """The name in a `Host` header value, lower-case, without brackets or port; None when the
    value is malformed (a bare IPv6 address, a non-numeric port, brackets around a name)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, closed, rest = value[1:].partition("]")
        if not closed:
            return None
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
    else:
        name, colon, port = value.partition(":")
        rest = colon + port
    if rest and not (rest[:1] == ":" and rest[1:].isascii() and rest[1:].isdigit()):
        return None
    return _canonical(name) if name else None


def _canonical(name: str) -> str:
    """One spelling per IP literal (`0:0::1` is `::1`); names stay as they are."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def host_allowed(value: str, names: frozenset[str], any_ip: bool) -> bool:
    """Whether a `Host` header value names this gateway.

    Design: DNS rebinding makes a browser send a page's requests to 127.0.0.1 under the page's
    own name (`Host: evil.example`), with the loopback client address that `GET /pair/code`
    trusts (ACP-GW-11); only the Host header tells such a request apart. The port is not
    compared: a rebound name uses the same port anyway, and port forwarding changes it
    legitimately. `any_ip` (a wildcard bind) accepts every IP literal, since rebinding always
    arrives under a DNS name.
    """
    name = host_name(value)
    if name is None:
        return False
    if name in names:
        return True
    if not any_ip:
        return False
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _strip_prefix(path: str, prefix: str | None) -> str | None:
    """The path below `gateway.path_prefix` (POL-PATH-12), or None when it is outside."""
    if not prefix:
        return path
    prefix = prefix.rstrip("/")
    if path == prefix:
        return "/"
    return path[len(prefix) :] if path.startswith(prefix + "/") else None


class _DeadlineReader(io.RawIOBase):
    """The socket's bytes, where each read waits at most what is left of a total budget.

    A plain socket timeout bounds one read, so a client sending a byte every few seconds would
    never trip it; this bounds the whole phase. Disarmed, it leaves the timeout alone (the
    WebSocket reader sets its own while closing).
    """

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self._deadline: float | None = None

    def readable(self) -> bool:
        return True

    def arm(self, budget: float) -> None:
        self._deadline = time.monotonic() + budget

    def disarm(self, timeout: float | None) -> None:
        self._deadline = None
        self._sock.settimeout(timeout)

    def readinto(self, buffer: WriteableBuffer, /) -> int:
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("request deadline passed")
            self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    """Parses one request and hands it to `Gateway.handle`.

    `handle_one_request` already drops the connection on `TimeoutError`, so an expired budget
    ends it without an answer.
    """

    protocol_version = "HTTP/1.1"
    server: _HttpServer

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # replaced: same socket, reads bounded by the header budget
        self.reader = _DeadlineReader(self.connection)
        self.reader.arm(self.server.gateway.limits.header_secs)
        self.rfile = io.BufferedReader(self.reader)

    def routed(self, timeout: float | None) -> None:
        """The request is past authentication: end the budget, free its pending slot, and
        leave `timeout` on the socket."""
        self.reader.disarm(timeout)
        self.server.release(self.request)

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
        self.request_queue_size = gateway.limits.backlog
        self._pending: set[object] = set()
        self._pending_lock = threading.Lock()
        self._shedding = False
        super().__init__(address, _Handler)

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: object
    ) -> None:
        """Start a thread for the connection, unless too many are still unauthenticated: each
        holds a thread and a descriptor for up to the header budget, so without a cap a flood
        of idle connections would exhaust both. Accepted WebSockets do not count."""
        with self._pending_lock:
            admitted = len(self._pending) < self.gateway.limits.max_pending
            if admitted:
                self._pending.add(request)
            shed_now, self._shedding = not admitted and not self._shedding, not admitted
        if not admitted:
            if shed_now:
                log.warning("too many unauthenticated connections; dropping new ones")
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request: socket.socket | tuple[bytes, socket.socket]) -> None:
        """socketserver's last step for every connection, however it ended."""
        super().shutdown_request(request)
        self.release(request)

    def release(self, request: object) -> None:
        with self._pending_lock:
            self._pending.discard(request)

    def pending(self) -> int:
        with self._pending_lock:
            return len(self._pending)


class Gateway:
    """One listening gateway; `serve_forever()` on one thread, `close()` from another."""

    def __init__(
        self,
        deps: GatewayDeps,
        host: str | None = None,
        port: int | None = None,
        limits: Limits | None = None,
    ):
        config = deps.config.snapshot()
        self.state = GatewayState(deps, pairing.Pairing())
        self.limits = limits or Limits()
        bind_host = host if host is not None else config.gateway.host
        bind_port = port if port is not None else config.gateway.port
        self._http = _HttpServer((bind_host, bind_port), self)
        bound = _canonical(str(self._http.server_address[0]))
        # The names a Host header may carry: loopback, the address as asked, as configured
        # (what the bridge puts in its Host, ACP-BR-04) and as bound.
        asked = {bind_host, config.gateway.host}
        self.host_names = (
            LOOPBACK_NAMES | {bound} | {_canonical(h.strip("[]").lower()) for h in asked}
        )
        self._any_ip = bound in ("0.0.0.0", "::")
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
        self._loop_thread: int | None = None  # the thread that called serve_forever()

    @property
    def address(self) -> tuple[str, int]:
        """The bound host and port (the real port when 0 was asked for)."""
        bound = self._http.server_address
        return str(bound[0]), int(bound[1])

    @property
    def pending_connections(self) -> int:
        """Connections accepted and not yet past authentication (capped by `Limits`)."""
        return self._http.pending()

    def serve_forever(self) -> None:
        """Serve until `close()` from another thread, or until an exception raised on this one
        (the command's SIGTERM handler) ends the loop; starts the scheduler first."""
        self._loop_thread = threading.get_ident()
        if self._scheduler is not None:
            self._scheduler.start()
        self._http.serve_forever()

    def start(self) -> None:
        """Serve on a background thread (tests, embedding)."""
        self._serving = threading.Thread(target=self.serve_forever, name="gateway", daemon=True)
        self._serving.start()

    def close(self) -> None:
        """Stop accepting, end every WebSocket connection and the scheduler, bounded."""
        # shutdown() asks a loop running on another thread to end, and waits for it. On the
        # thread that serves, or when a stop signal came before the loop was entered (the
        # command, SIGTERM right after `listening`), no loop runs and it would wait forever.
        if self._serving is not None or self._loop_thread not in (None, threading.get_ident()):
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

    def host_refusal(self, headers: Message) -> Reply | None:
        """400 unless there is exactly one Host header, 421 unless it names this gateway."""
        hosts = headers.get_all("Host") or []
        if len(hosts) != 1:
            return Reply.error(400, ONE_HOST)
        if not host_allowed(str(hosts[0]), self.host_names, self._any_ip):
            return Reply.error(421, WRONG_HOST)
        return None

    def handle(self, handler: _Handler, verb: str) -> None:
        """Check the Host, authenticate, route and answer one request (or let `/acp` take the
        socket)."""
        # Before authentication too: a refused Host gets the same answer on every path and
        # never reaches a route, so the rule that nothing precedes authentication (ACP-GW-12),
        # which keeps routes from answering strangers, still holds.
        refusal = self.host_refusal(handler.headers)
        if refusal is not None:
            self._answer(handler, refusal)
            return
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

    def _route(self, handler: _Handler, request: HttpRequest, inside: bool) -> Reply | None:
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
            handler.reader.arm(self.limits.body_secs)  # a fresh budget for the body
            body = handler.rfile.read(length) if length > 0 else b""
            request = HttpRequest(
                request.verb, request.path, request.query, request.headers, body,
                request.client_host, request.config, request.state, handler,
            )  # fmt: skip
        # [ACP-GW-07] an accepted WebSocket is never timed out by the gateway: no read timeout
        # from here on. Other routes write one reply, bounded like any reply.
        handler.routed(None if request.path == "/acp" else self.limits.send_secs)
        return route(request)

    def _answer(self, handler: _Handler, reply: Reply) -> None:
        handler.routed(self.limits.send_secs)
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
