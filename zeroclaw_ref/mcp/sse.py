"""The legacy HTTP+SSE transport (mcp.md §5).

Plan: one daemon thread reads the event stream with `sseclient-py`, fed by a byte iterator that
discards oversized events (MCP-SSE-02, MCP-SIZE-08); the first `endpoint` event names where
messages are POSTed, and must be on the stream's origin (MCP-SSE-06). Requests are POSTed on
the caller's thread, so a refused connection is a synchronous pre-write failure; the response
arrives on the stream. A server that refuses the stream is used as Streamable HTTP
(MCP-SSE-03): the transport then delegates to `HttpTransport`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from urllib.parse import urljoin, urlsplit

import requests
import sseclient

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.cancel import Slot
from zeroclaw_ref.core.jsontypes import JSONObject, dumps, loads
from zeroclaw_ref.mcp import errors, httpbody, tls
from zeroclaw_ref.mcp.http import HttpTransport, RequestsBody, make_session, pre_write
from zeroclaw_ref.mcp.mcpheaders import HeaderMap
from zeroclaw_ref.mcp.options import McpOptions
from zeroclaw_ref.mcp.transport import Outcome, PreWriteError, Router, Transport
from zeroclaw_ref.wire import mcp as wire

log = logging.getLogger(__name__)

POST_ACK_S = 30.0  # [MCP-SSE-11]
READER_JOIN_S = 1.0  # [MCP-SSE-20]
ENDPOINT_TYPES = (wire.EVENT_ENDPOINT, wire.EVENT_MCP_ENDPOINT)  # [MCP-SSE-05]
PLAINTEXT_ENDPOINT = (
    "tls_ca_cert_path requires an HTTPS SSE message endpoint; refusing plaintext transport"
)
_EOL = re.compile(rb"\r\n|\r|\n")


def origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, lower-case host and effective port of `url`."""
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def capped_events(
    chunks: Iterator[bytes], limit: int, on_oversized: Callable[[bool], None]
) -> Iterator[bytes]:
    """[MCP-SIZE-08] [MCP-SSE-16] pass whole events of at most `limit` bytes; drop larger ones.

    `on_oversized(was_message)` is told about each dropped event.
    """
    event = bytearray()
    dropping = False
    kind = b"message"
    pending = bytearray()
    for chunk in chunks:
        pending += chunk
        start = 0
        while (match := _EOL.search(pending, start)) is not None:
            if match.group() == b"\r" and match.end() == len(pending):
                break  # maybe half of a CRLF: wait for more bytes
            line = bytes(pending[start : match.end()])
            start = match.end()
            if line.strip(b"\r\n") == b"":
                if dropping:
                    log.warning("dropped an SSE event larger than %d bytes", limit)
                    on_oversized(kind == b"message")
                elif event:
                    yield bytes(event) + line  # the blank line ends it for sseclient too
                event.clear()
                dropping, kind = False, b"message"
                continue
            if line.startswith(b"event:"):
                kind = line[6:].strip()
            if not dropping:
                event += line
                dropping = len(event) > limit
                if dropping:
                    event.clear()
        del pending[:start]
        if len(pending) > limit:
            pending.clear()
            event.clear()
            dropping = True


class SseTransport(Transport):
    """A GET event stream for server messages and POSTs to the advertised endpoint."""

    serial = True

    def __init__(self, config: McpServerConfig, options: McpOptions, router: Router) -> None:
        self.name = config.name
        self.config = config
        self.url = config.url or ""
        self.options = options
        self.router = router
        self.limit = httpbody.response_limit(config.max_response_bytes)
        self._configured = {str(k): str(v) for k, v in config.headers.items()}
        self._session: requests.Session | None = None
        self._stream: RequestsBody | None = None
        self._endpoint: str | None = None
        self._endpoint_error: errors.McpError | None = None
        self._endpoint_ready = threading.Event()
        self._closing = threading.Event()
        self._reader: threading.Thread | None = None
        self._session_id: str | None = None
        self._delegate: HttpTransport | None = None
        self._generation = 0

    def headers(self, *, stream: bool = False) -> dict[str, str]:
        """[MCP-SSE-01] [MCP-SSE-10] configured headers plus the transport's defaults."""
        lower = {k.lower() for k in self._configured}
        out: dict[str, str] = {}
        if not stream and "content-type" not in lower:
            out["Content-Type"] = "application/json"
        out.update(self._configured)
        if "accept" not in lower:
            out["Accept"] = "application/json, text/event-stream"
        if stream:
            out["Cache-Control"] = "no-cache"
        if "accept-encoding" not in lower:
            out["Accept-Encoding"] = "identity"
        if self._session_id and not stream:
            out[wire.HEADER_SESSION_ID] = self._session_id
        return out

    # --- opening ----------------------------------------------------------------------------

    def open(self, generation: int, deadline: float) -> None:
        if self._delegate is not None:
            self._delegate.open(generation, deadline)
            return
        if self.config.tls_ca_cert_path is not None and urlsplit(self.url).scheme != "https":
            raise errors.McpConnectError(self.name, tls.PLAINTEXT_URL)  # [MCP-TLS-11]
        if self._session is None:
            self._session = make_session(self.name, self.config.tls_ca_cert_path)
        self._generation = generation
        self._closing.clear()
        self._endpoint, self._endpoint_error = None, None
        self._endpoint_ready.clear()
        wait_s = max(0.001, min(self.options.init_timeout_s, deadline - time.monotonic()))
        try:
            resp = self._session.get(
                self.url, headers=self.headers(stream=True), stream=True, timeout=(30.0, wait_s)
            )
        except requests.exceptions.ConnectionError as exc:
            if pre_write(exc):
                raise errors.unreachable(self.name, type(exc).__name__, self.url) from exc
            raise errors.McpConnectError(
                self.name, f"connection error: {type(exc).__name__}"
            ) from exc
        except (OSError, ValueError) as exc:
            raise errors.McpConnectError(
                self.name, f"connection error: {type(exc).__name__}"
            ) from exc
        body = RequestsBody(resp)
        ok = 200 <= body.status < 300
        if body.status in (404, 405) or (ok and not httpbody.is_sse(body.content_type)):
            body.close()
            log.warning("MCP server `%s` refused the SSE stream; using Streamable HTTP", self.name)
            self._delegate = HttpTransport(self.config, self.options, self.router)
            self._delegate.open(generation, deadline)  # [MCP-SSE-03]
            return
        if not ok:
            body.close()
            raise errors.http_status(self.name, body.status)  # [MCP-SSE-04]
        body.clear_timeout()
        self._stream = body
        self._reader = threading.Thread(
            target=self._read, args=(body, generation), name=f"mcp-{self.name}-sse", daemon=True
        )
        self._reader.start()
        self._await_endpoint(wait_s)

    def _await_endpoint(self, wait_s: float) -> None:
        """[MCP-SSE-09] the first endpoint event, or a failed connect."""
        if not self._endpoint_ready.wait(wait_s):
            raise errors.McpConnectError(
                self.name,
                f"MCP server `{self.name}` sent no endpoint event within "
                f"{errors.seconds(self.options.init_timeout_s)}s",
            )
        if self._endpoint_error is not None:
            raise self._endpoint_error
        if self._endpoint is None:
            raise errors.McpConnectError(self.name, errors.CAUSE_SSE_CLOSED)

    # --- the event stream -------------------------------------------------------------------

    def _oversized(self, was_message: bool) -> None:
        # [MCP-SSE-17] the (single) pending request fails at once
        if was_message and self.router.pending_count():
            self.router.fail_pending(f"MCP SSE response body exceeds the {self.limit}-byte limit")

    def _read(self, body: RequestsBody, generation: int) -> None:
        """[MCP-SSE-02] [MCP-SSE-15] [MCP-SSE-18]"""
        try:
            source = capped_events(body.chunks(), self.limit, self._oversized)
            for event in sseclient.SSEClient(source).events():
                self._on_event(event.event or "message", event.data or "", body, generation)
        except (OSError, ValueError) as exc:
            log.debug("MCP server `%s`: SSE stream ended: %s", self.name, type(exc).__name__)
        finally:
            with contextlib.suppress(OSError, ValueError):
                body.close()
            self._endpoint_ready.set()
        if not self._closing.is_set():
            self.router.transport_failed(generation, errors.CAUSE_SSE_CLOSED)

    def _on_event(self, kind: str, data: str, body: RequestsBody, generation: int) -> None:
        if kind.lower() in ENDPOINT_TYPES:
            self._on_endpoint(data, body.resp.url)
            return
        if kind != "message" or not data:
            return
        try:
            value = loads(data)
        except ValueError:
            log.debug("MCP server `%s`: skipping a non-JSON SSE event", self.name)
            return
        self.router.route(value, generation)

    def _on_endpoint(self, data: str, stream_url: str) -> None:
        """[MCP-SSE-05..08] resolve, check the origin, and (re)place the endpoint."""
        text = data.strip()
        target = text
        with contextlib.suppress(ValueError):
            value = loads(text)
            if isinstance(value, dict) and isinstance(value.get("endpoint"), str):
                target = str(value["endpoint"])
        if not target.startswith(("http://", "https://")):
            target = urljoin(stream_url, target)
        error: errors.McpError | None = None
        scheme, host, port = origin(target)
        if self.config.tls_ca_cert_path is not None and scheme != "https":
            # [MCP-SSE-07] checked first: with a CA the stream URL is https, so a plaintext
            # endpoint would otherwise always be reported as another origin (MCP-SSE-06)
            error = errors.McpConnectError(self.name, PLAINTEXT_ENDPOINT)
        elif (scheme, host, port) != origin(self.url):
            shown = f"{scheme}://{host}" + (f":{port}" if urlsplit(target).port else "")
            error = errors.McpConnectError(
                self.name,
                f"MCP server `{self.name}` advertised an SSE message endpoint on a different "
                f"origin ({shown}); refusing to send requests there",
            )
        if self._endpoint_ready.is_set():
            if error is not None:
                log.warning("MCP server `%s`: ignoring a new endpoint: %s", self.name, error)
            else:
                self._endpoint = target
            return
        self._endpoint, self._endpoint_error = (None, error) if error else (target, None)
        self._endpoint_ready.set()

    # --- sending ----------------------------------------------------------------------------

    def _post(self, message: JSONObject, timeout: float) -> RequestsBody:
        session, endpoint = self._session, self._endpoint
        if session is None or endpoint is None:
            raise PreWriteError(errors.McpConnectError(self.name, errors.CAUSE_SSE_CLOSED))
        resp = session.post(
            endpoint,
            data=dumps(message).encode("utf-8"),
            headers=self.headers(),
            stream=True,
            timeout=(min(30.0, timeout), timeout),
        )
        body = RequestsBody(resp)
        if 200 <= body.status < 300:
            sid = (body.header(wire.HEADER_SESSION_ID) or "").strip()
            if sid:
                self._session_id = sid
        return body

    def send_request(
        self, message: JSONObject, request_id: int, slot: Slot[Outcome], deadline: float, op: str
    ) -> None:
        if self._delegate is not None:
            self._delegate.send_request(message, request_id, slot, deadline, op)
            return
        remaining = deadline - time.monotonic()
        ack = min(POST_ACK_S, remaining)
        try:
            body = self._post(message, max(0.001, ack))
        except requests.exceptions.Timeout:
            if ack < POST_ACK_S:
                return  # the call's own deadline passed first: its wait reports it
            self.router.mark_broken(self._generation, lossy=True)
            slot.offer(
                errors.McpOutcomeUnknownError(
                    self.name,
                    f"MCP server `{self.name}` did not acknowledge the POST to its SSE message "
                    f"endpoint within {errors.seconds(POST_ACK_S)}s during {op}; outcome unknown "
                    "and request was not replayed",
                )
            )
            return
        except requests.exceptions.ConnectionError as exc:
            cause = f"connection error: {type(exc).__name__}"
            if pre_write(exc):
                raise PreWriteError(errors.McpConnectError(self.name, cause)) from exc
            self.router.mark_broken(self._generation, lossy=True)
            slot.offer(errors.outcome_unknown(self.name, op, cause))
            return
        except (OSError, ValueError) as exc:
            slot.offer(
                errors.outcome_unknown(self.name, op, f"connection error: {type(exc).__name__}")
            )
            return
        try:
            self._after_post(body, slot, op)
        finally:
            with contextlib.suppress(OSError, ValueError):
                body.close()

    def _after_post(self, body: RequestsBody, slot: Slot[Outcome], op: str) -> None:
        """[MCP-SSE-12] [MCP-SSE-13] the answer in the body, or later on the stream."""
        if body.status in (404, 410):
            self.router.mark_broken(self._generation, lossy=True)
            slot.offer(
                errors.outcome_unknown(self.name, op, f"session expired (HTTP {body.status})")
            )
            return
        if not 200 <= body.status < 300:
            slot.offer(errors.http_status(self.name, body.status))
            return
        try:
            data = httpbody.read_capped(self.name, body, self.limit)
        except errors.McpError as err:
            slot.offer(err)
            return
        except (OSError, ValueError):
            return
        if not data.strip():
            return
        with contextlib.suppress(ValueError):
            if httpbody.is_sse(body.content_type) or httpbody.looks_like_sse(data):
                for event in sseclient.SSEClient(iter([data])).events():
                    self._on_event(
                        event.event or "message", event.data or "", body, self._generation
                    )
            else:
                self.router.route(loads(data), self._generation)

    def send_message(self, message: JSONObject) -> None:
        """[MCP-SSE-14] notifications and answers go to the endpoint too."""
        if self._delegate is not None:
            self._delegate.send_message(message)
            return
        try:
            body = self._post(message, POST_ACK_S)
        except PreWriteError as exc:
            raise exc.error from exc
        try:
            if not 200 <= body.status < 300:
                raise errors.http_status(self.name, body.status)
        finally:
            body.close()

    def after_initialized(self, deadline: float) -> None:
        if self._delegate is not None:
            self._delegate.after_initialized(deadline)

    def set_protocol_version(self, version: str | None) -> None:
        if self._delegate is not None:  # the header is not defined for the legacy transport
            self._delegate.set_protocol_version(version)

    def abort(self, request_id: int) -> None:
        if self._delegate is not None:
            self._delegate.abort(request_id)

    # --- the modern era, only through the Streamable HTTP fallback (MCP-MOD-02) ---------------

    @property
    def modern_capable(self) -> bool:
        return self._delegate is not None

    @property
    def over_http(self) -> bool:
        return self._delegate is not None

    def set_era(self, modern: bool) -> None:
        if self._delegate is not None:
            self._delegate.set_era(modern)

    def set_tool_headers(self, maps: Mapping[str, HeaderMap]) -> None:
        if self._delegate is not None:
            self._delegate.set_tool_headers(maps)

    def open_listen(self, message: JSONObject, deadline: float) -> bool:
        return self._delegate is not None and self._delegate.open_listen(message, deadline)

    def close_listen(self) -> None:
        if self._delegate is not None:
            self._delegate.close_listen()

    # --- closing ----------------------------------------------------------------------------

    def reset(self) -> None:
        if self._delegate is not None:
            self._delegate.reset()
            return
        self._stop_stream()

    def _stop_stream(self) -> None:
        """[MCP-SSE-20] socket shutdown, a bounded join, the endpoint cleared."""
        self._closing.set()
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.shutdown()
        reader, self._reader = self._reader, None
        if reader is not None and reader is not threading.current_thread():
            reader.join(READER_JOIN_S)
        self._endpoint = None

    def close(self) -> None:
        if self._delegate is not None:
            self._delegate.close()
        self._stop_stream()
        if self._session is not None:
            self._session.close()
            self._session = None
