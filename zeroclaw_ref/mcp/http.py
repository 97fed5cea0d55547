"""The Streamable HTTP transport (mcp.md §4, §6; DESIGN §7.8).

Plan: every request runs its POST exchange on a helper thread, so the caller waits on its
`Slot` and stays cancellable; the thread routes whatever the body carries (a JSON body, or an
event stream read with the client's own parser) and resumes a broken stream with
`Last-Event-ID` (§4.5). A standalone GET stream is read on its own daemon thread (§4.6).
Caveats: another thread never closes a response that is being read; it shuts its socket down
(MCP-HTTP-46) and the reader closes it. The connection holds the serial gate (MCP-RPC-11).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError, HTTPError, MaxRetryError, NewConnectionError

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.cancel import Slot
from zeroclaw_ref.core.jsontypes import JSONObject, dumps
from zeroclaw_ref.mcp import errors, httpbody, mcpheaders, tls
from zeroclaw_ref.mcp.httpstream import GetListener, ListenStream, read_post_stream
from zeroclaw_ref.mcp.options import McpOptions
from zeroclaw_ref.mcp.transport import Outcome, PreWriteFailure, Router, Transport
from zeroclaw_ref.wire import mcp as wire

log = logging.getLogger(__name__)

MAX_REDIRECTS = 10  # [MCP-HTTP-01] [MCP-TLS-13]
CONNECT_CAP_S = 30.0  # [MCP-HTTP-08]
DELETE_TIMEOUT_S = 5.0  # [MCP-HTTP-48]
NOTIFY_TIMEOUT_S = 30.0  # Design: bound on a notification or response POST
DRAIN_MAX_BYTES = 65_536  # [MCP-HTTP-01] larger acknowledgement bodies are not read out
DRAIN_BUDGET_S = 0.25  # [MCP-HTTP-01] longest a drain may take before the connection is dropped
SSE_ACCEPT = "text/event-stream"


class StreamError(OSError):
    """A urllib3 error while reading a body, as an `OSError` (MCP-HTTP-47)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class PlaintextRedirect(requests.exceptions.RequestException):
    """[MCP-TLS-12] raised before a redirect to a non-https target is followed."""


class _Session(requests.Session):
    def __init__(self, https_only: bool) -> None:
        super().__init__()
        self.max_redirects = MAX_REDIRECTS
        self._https_only = https_only

    def get_redirect_target(self, resp: requests.Response) -> str | None:
        target = super().get_redirect_target(resp)
        if target and self._https_only and urlsplit(urljoin(resp.url, target)).scheme != "https":
            raise PlaintextRedirect(tls.PLAINTEXT_REDIRECT)
        return target


class _CaAdapter(HTTPAdapter):
    """[MCP-TLS-08] pool managers (proxy managers too) built with the extended context."""

    def __init__(self, ctx: object) -> None:
        self._ctx = ctx
        super().__init__()

    def init_poolmanager(self, *args: object, **kwargs: object) -> None:
        kwargs["ssl_context"] = self._ctx
        super().init_poolmanager(*args, **kwargs)  # type: ignore[arg-type]

    def proxy_manager_for(self, proxy: str, **kwargs: object) -> object:
        kwargs["ssl_context"] = self._ctx
        return super().proxy_manager_for(proxy, **kwargs)


class RequestsBody(httpbody.Body):
    """A `requests` streamed response seen through `httpbody.Body`."""

    def __init__(self, resp: requests.Response) -> None:
        self.resp = resp
        self.status = resp.status_code
        self.content_type = resp.headers.get("Content-Type", "")
        length = resp.headers.get("Content-Length")
        self.content_length = int(length) if length and length.strip().isdigit() else None

    def chunks(self) -> Iterator[bytes]:
        raw = self.resp.raw
        try:
            if raw.chunked and raw.supports_chunked_reads():
                yield from raw.read_chunked(httpbody.CHUNK, decode_content=False)
                return
            # [MCP-HTTP-23] a body framed by Content-Length or by the connection closing is
            # read with read1, which returns what has arrived: urllib3's read(n) would hold an
            # event stream's events back until n bytes or the end had come.
            read1 = getattr(raw, "read1", None)  # urllib3 1.x, which requests allows, has none
            if read1 is None:
                yield from raw.stream(httpbody.CHUNK, decode_content=False)
                return
            while data := read1(httpbody.CHUNK, decode_content=False):
                yield data
        except HTTPError as exc:  # urllib3's, not an OSError: keep its name for the cause text
            raise StreamError(type(exc).__name__) from exc

    def header(self, name: str) -> str | None:
        value = self.resp.headers.get(name)
        return value if isinstance(value, str) else None

    def _socket(self) -> socket.socket | None:
        raw = self.resp.raw
        conn = getattr(raw, "connection", None) or getattr(raw, "_connection", None)
        sock = getattr(conn, "sock", None)
        if sock is None:  # http.client keeps the socket under fp.raw._sock
            fp = getattr(getattr(raw, "_fp", None), "fp", None)
            sock = getattr(getattr(fp, "raw", None), "_sock", None)
        return sock if isinstance(sock, socket.socket) else None

    def shutdown(self) -> None:
        sock = self._socket()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def clear_timeout(self) -> None:
        """[MCP-HTTP-34] a GET stream has no read timeout once its headers arrived."""
        self.set_read_timeout(None)

    def set_read_timeout(self, seconds: float | None) -> None:
        """Bound every further read of this body (None: no bound)."""
        sock = self._socket()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.settimeout(seconds)

    def close(self) -> None:
        self.resp.close()


@dataclass(eq=False)
class Exchange:
    """One request's POST, visible to `abort` (MCP-CANCEL-03)."""

    request_id: int
    aborted: threading.Event = field(default_factory=threading.Event)
    body: httpbody.Body | None = None

    def abort(self) -> None:
        self.aborted.set()
        if self.body is not None:
            self.body.shutdown()


def make_session(server: str, ca_path: str | None) -> _Session:
    """[MCP-HTTP-01] [MCP-TLS-08] a keep-alive session; with a CA file, an extended trust.

    Raises:
        McpConnectError: the CA file failed a check of §6.1.
    """
    session = _Session(https_only=ca_path is not None)
    if ca_path is not None:
        pem = tls.read_ca_pem(server, ca_path)  # [MCP-TLS-02] read at connection set-up
        ctx = tls.context_with(pem, requests.utils.DEFAULT_CA_BUNDLE_PATH)
        session.mount("https://", _CaAdapter(ctx))
    return session


def _drain(body: httpbody.Body) -> None:
    """[MCP-HTTP-01] read out (never parse, MCP-HTTP-12) a small fixed-length body, so that
    closing it hands its connection back to the pool instead of dropping it.

    Only while that is cheap: the whole drain gets DRAIN_BUDGET_S, so a server that declares
    more than it sends, or drips it, costs a dropped connection (the behaviour without the
    drain), never a stalled notification such as `notifications/cancelled`.
    """
    if body.content_length is None or body.content_length > DRAIN_MAX_BYTES:
        return  # (a zero length is still read: that is what marks the body complete)
    deadline = time.monotonic() + DRAIN_BUDGET_S
    body.set_read_timeout(DRAIN_BUDGET_S)
    with contextlib.suppress(OSError, ValueError, StreamError):
        for _ in body.chunks():
            if time.monotonic() >= deadline:
                return


def pre_write(exc: requests.exceptions.ConnectionError) -> bool:
    """[MCP-REC-03] refused, unresolvable or timed-out connects sent nothing."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    reason = exc.args[0] if exc.args else None
    if isinstance(reason, MaxRetryError):
        reason = reason.reason
    return isinstance(reason, NewConnectionError | ConnectTimeoutError)


class HttpTransport(Transport):
    """[MCP-HTTP-01] one `requests.Session` per connection, plus one for the GET stream."""

    serial = True

    def __init__(self, config: McpServerConfig, options: McpOptions, router: Router) -> None:
        self.name = config.name
        self.url = config.url or ""
        self.options = options
        self.router = router
        self.limit = httpbody.response_limit(config.max_response_bytes)
        self._configured = {str(k): str(v) for k, v in config.headers.items()}
        self._ca_path = config.tls_ca_cert_path
        self._session: _Session | None = None
        self._get_session: _Session | None = None
        self.session_id: str | None = None
        self.version: str | None = None
        self.generation = 0
        self._lock = threading.Lock()
        self._active: dict[int, Exchange] = {}
        self._listener: GetListener | None = None
        self.no_get_stream = False
        # [MCP-MOD-14..17] a modern incarnation: routing headers, no session, no GET stream
        self.modern = False
        self._tool_headers: dict[str, mcpheaders.HeaderMap] = {}
        self._listen: ListenStream | None = None

    # --- sessions and headers -------------------------------------------------------------

    def _new_session(self) -> _Session:
        return make_session(self.name, self._ca_path)

    def headers(
        self,
        *,
        post: bool,
        version: bool = True,
        sse_only: bool = False,
        routing: dict[str, str] | None = None,
    ) -> dict[str, str]:
        """[MCP-HTTP-02..06] configured headers plus the client-managed ones; `routing` are
        the modern request headers of MCP-MOD-14, which win over configured ones too."""
        lower = {k.lower() for k in self._configured}
        out: dict[str, str] = {}
        if post and "content-type" not in lower:
            out["Content-Type"] = "application/json"
        managed = {wire.HEADER_SESSION_ID.lower(), wire.HEADER_PROTOCOL_VERSION.lower()}
        managed.update(k.lower() for k in routing or {})
        out.update({k: v for k, v in self._configured.items() if k.lower() not in managed})
        if "accept" not in lower:
            out["Accept"] = SSE_ACCEPT if sse_only else "application/json, text/event-stream"
        if "accept-encoding" not in lower:
            out["Accept-Encoding"] = "identity"
        if self.session_id:
            out[wire.HEADER_SESSION_ID] = self.session_id
        if version and self.version:
            out[wire.HEADER_PROTOCOL_VERSION] = self.version
        out.update(routing or {})
        return out

    def routing(self, message: JSONObject) -> dict[str, str] | None:
        """[MCP-MOD-14] [MCP-MOD-16] the routing headers of a modern message, else None."""
        return mcpheaders.request_headers(message, self._tool_headers) if self.modern else None

    @property
    def over_http(self) -> bool:
        return True

    def set_era(self, modern: bool) -> None:
        self.modern = modern

    def set_tool_headers(self, maps: Mapping[str, mcpheaders.HeaderMap]) -> None:
        self._tool_headers = dict(maps)

    def capture_session(self, body: httpbody.Body) -> None:
        """[MCP-HTTP-09] [MCP-HTTP-10] take a session id from any 2xx response (never in the
        modern era, which has no sessions: MCP-MOD-17)."""
        if not 200 <= body.status < 300 or self.modern:
            return
        value = (body.header(wire.HEADER_SESSION_ID) or "").strip()
        if not value:
            return
        if not all(0x21 <= ord(c) <= 0x7E for c in value):
            log.warning("MCP server `%s` sent a session id with invalid characters", self.name)
            return
        self.session_id = value

    # --- lifecycle ------------------------------------------------------------------------

    def open(self, generation: int, deadline: float) -> None:
        if self._ca_path is not None and urlsplit(self.url).scheme != "https":
            raise errors.McpConnectError(self.name, tls.PLAINTEXT_URL)  # [MCP-TLS-11]
        if self._session is None:
            self._session = self._new_session()
            self._get_session = self._new_session()  # [MCP-HTTP-35]
        self.generation = generation
        self.session_id = None  # [MCP-HTTP-11]
        self.no_get_stream = False

    def set_protocol_version(self, version: str | None) -> None:
        self.version = version  # [MCP-HTTP-05] [MCP-VER-03]

    def reset(self) -> None:
        """Drop the session without DELETE (MCP-HTTP-39) and stop the GET and listen streams."""
        self._stop_listener()
        self.close_listen()
        self.session_id = None

    def close(self) -> None:
        """[MCP-HTTP-48] DELETE a held session, abort the GET stream, close both sessions."""
        with self._lock:
            active = list(self._active.values())
        for exchange in active:
            exchange.abort()
        session, self._session = self._session, None
        if session is not None and self.session_id:
            try:
                resp = session.delete(
                    self.url, headers=self.headers(post=False), timeout=DELETE_TIMEOUT_S
                )
                resp.close()
                log.debug("MCP server `%s`: DELETE answered %d", self.name, resp.status_code)
            except (OSError, ValueError) as exc:
                log.debug("MCP server `%s`: DELETE failed: %s", self.name, exc)
        self.session_id = None
        self._stop_listener()
        self.close_listen()
        if session is not None:
            session.close()
        if self._get_session is not None:
            self._get_session.close()
            self._get_session = None

    def _stop_listener(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()

    @property
    def get_stream_open(self) -> bool:
        listener = self._listener
        return listener is not None and listener.is_open

    # --- sending --------------------------------------------------------------------------

    def post(
        self,
        message: JSONObject,
        timeout: float,
        *,
        version: bool = True,
        stream_session: bool = False,
    ) -> RequestsBody:
        """POST one message (on the GET stream's session with `stream_session`); the body is
        left unread.

        Raises:
            requests exceptions (OSError) and `PlaintextRedirect`; callers classify them.
        """
        session = self._get_session if stream_session else self._session
        if session is None:
            raise errors.closed(self.name)
        connect = max(0.001, min(CONNECT_CAP_S, timeout))
        headers = self.headers(post=True, version=version, routing=self.routing(message))
        resp = session.post(
            self.url,
            data=dumps(message).encode("utf-8"),
            headers=headers,
            stream=True,
            timeout=(connect, max(0.001, timeout)),
        )
        return RequestsBody(resp)

    def get(self, timeout: tuple[float, float | None], last_id: str | None) -> RequestsBody:
        """GET the endpoint as an event stream (standalone or resumption)."""
        session = self._get_session
        if session is None:
            raise errors.closed(self.name)
        headers = self.headers(post=False, sse_only=True)
        if last_id is not None:
            headers[wire.HEADER_LAST_EVENT_ID] = last_id
        resp = session.get(self.url, headers=headers, stream=True, timeout=timeout)
        return RequestsBody(resp)

    def stale(self, body: httpbody.Body, sent_session: bool) -> bool:
        """[MCP-HTTP-37] [MCP-HTTP-38]"""
        if not sent_session:
            return False
        return body.status in (404, 410) or (body.status == 400 and httpbody.stale_400(body))

    def send_request(
        self, message: JSONObject, request_id: int, slot: Slot[Outcome], deadline: float, op: str
    ) -> None:
        exchange = Exchange(request_id)
        with self._lock:
            self._active[request_id] = exchange
        threading.Thread(
            target=self._exchange,
            args=(message, exchange, slot, deadline, op, self.generation),
            name=f"mcp-{self.name}-post",
            daemon=True,
        ).start()

    def abort(self, request_id: int) -> None:
        with self._lock:
            exchange = self._active.get(request_id)
        if exchange is not None:
            exchange.abort()

    def _exchange(
        self,
        message: JSONObject,
        exchange: Exchange,
        slot: Slot[Outcome],
        deadline: float,
        op: str,
        generation: int,
    ) -> None:
        try:
            outcome = self._run_exchange(message, exchange, slot, deadline, op, generation)
        except errors.McpError as err:
            outcome = err
        except (OSError, ValueError) as exc:
            # [MCP-HTTP-30] name the urllib3 class a `StreamError` wraps, not the wrapper
            cause = getattr(exc, "name", None) if isinstance(exc, StreamError) else None
            outcome = errors.outcome_unknown(
                self.name, op, f"connection error: {cause or type(exc).__name__}"
            )
        finally:
            with self._lock:
                self._active.pop(exchange.request_id, None)
            if exchange.body is not None:
                with contextlib.suppress(OSError, ValueError):
                    exchange.body.close()
        if outcome is not None and not exchange.aborted.is_set():
            slot.offer(outcome)

    def _run_exchange(
        self,
        message: JSONObject,
        exchange: Exchange,
        slot: Slot[Outcome],
        deadline: float,
        op: str,
        generation: int,
    ) -> Outcome | None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None  # the caller's own wait reports the timeout
        sent_session = self.session_id is not None
        is_init = message.get("method") == wire.METHOD_INITIALIZE
        try:
            body = self.post(message, remaining, version=not is_init)
        except PlaintextRedirect as exc:
            return errors.McpConnectError(self.name, str(exc))
        except requests.exceptions.TooManyRedirects:
            return errors.McpConnectError(self.name, "too many redirects")  # [MCP-TLS-14]
        except requests.exceptions.SSLError as exc:
            # [MCP-TLS-15] a verification failure is never retried
            return errors.McpConnectError(self.name, f"connection error: {type(exc).__name__}")
        except requests.exceptions.ConnectionError as exc:
            cause = f"connection error: {type(exc).__name__}"
            if pre_write(exc):
                return PreWriteFailure(errors.unreachable(self.name, type(exc).__name__, self.url))
            return errors.outcome_unknown(self.name, op, cause)
        except requests.exceptions.Timeout:
            return None
        exchange.body = body
        if exchange.aborted.is_set():
            return None
        self.capture_session(body)
        if self.stale(body, sent_session):
            # [MCP-HTTP-39] drop the session, no DELETE, fail without replay
            self.session_id = None
            self.router.mark_broken(generation, lossy=True)
            return errors.outcome_unknown(self.name, op, f"session expired (HTTP {body.status})")
        if not 200 <= body.status < 300:
            if self.modern and 400 <= body.status < 500:
                refusal = httpbody.jsonrpc_refusal(body, exchange.request_id)  # [MCP-MOD-02]
                if refusal is not None:
                    return refusal
                _drain(body)  # a legacy server's refusal of the probe: keep the connection
            return errors.http_status(self.name, body.status)  # [MCP-HTTP-41]
        request_id = exchange.request_id
        if httpbody.is_sse(body.content_type):
            return read_post_stream(self, body, exchange, slot, deadline, op, generation)
        data = httpbody.read_capped(self.name, body, self.limit)
        if not data.strip():
            if self.get_stream_open:
                return None  # [MCP-HTTP-18] the answer may come on the GET stream
            return errors.McpProtocolError(self.name, errors.NO_RESPONSE)  # [MCP-HTTP-17]
        if not httpbody.is_json(body.content_type) and httpbody.looks_like_sse(data):
            return read_post_stream(self, body, exchange, slot, deadline, op, generation, data)
        return self._route_json(data, request_id, slot, generation)

    def _route_json(
        self, data: bytes, request_id: int, slot: Slot[Outcome], generation: int
    ) -> Outcome | None:
        """[MCP-HTTP-13] [MCP-HTTP-14] route every message; the reply completes the request."""
        value = httpbody.parse_json_body(self.name, data)
        if isinstance(value, dict) and "method" not in value and "id" in value:
            rid = value.get("id")
            if type(rid) is not int or rid != request_id:
                return errors.McpProtocolError(
                    self.name,
                    f"MCP response id mismatch: expected {request_id}, received {dumps(rid)}",
                )
        self.router.route(value, generation)
        return None if slot.filled else errors.McpProtocolError(self.name, errors.NO_RESPONSE)

    def send_message(self, message: JSONObject) -> None:
        """[MCP-HTTP-12] [MCP-HTTP-42] [MCP-HTTP-44] any 2xx counts; the body is not parsed."""
        sent_session = self.session_id is not None
        generation = self.generation
        body = self.post(message, NOTIFY_TIMEOUT_S)
        try:
            self.capture_session(body)
            if self.stale(body, sent_session):
                log.warning("MCP server `%s`: session expired; reconnecting on next use", self.name)
                self.session_id = None
                self.router.mark_broken(generation, lossy=False)
                return
            if not 200 <= body.status < 300:
                raise errors.http_status(self.name, body.status)
        finally:
            _drain(body)  # [MCP-HTTP-01] keep the keep-alive connection for the next POST
            body.close()

    # --- the standalone GET stream --------------------------------------------------------

    def open_listen(self, message: JSONObject, deadline: float) -> bool:
        """[MCP-MOD-13] POST the listen request and keep reading its event stream."""
        self.close_listen()
        stream = ListenStream(self, self.generation)
        if not stream.start(message, deadline):
            return False
        self._listen = stream
        return True

    def close_listen(self) -> None:
        stream, self._listen = self._listen, None
        if stream is not None:
            stream.stop()

    def after_initialized(self, deadline: float) -> None:
        """[MCP-HTTP-31] open the GET stream and learn its status before READY."""
        if self.no_get_stream:
            return
        listener = GetListener(self, self.generation)
        if listener.start(self.options.init_timeout_s):
            self._listener = listener
