"""Event streams of the Streamable HTTP transport: POST response streams with resumption
(mcp.md §4.5) and the standalone GET stream (§4.6).

Both route every `message` event through the connection (MCP-HTTP-15); neither imports
`requests`: they use the transport's `get` and the `httpbody.Body` view of a response.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zeroclaw_ref.core.cancel import Slot
from zeroclaw_ref.core.jsontypes import JSONObject, loads
from zeroclaw_ref.mcp import errors, httpbody
from zeroclaw_ref.mcp.ssestream import Oversized, SseEvent, SseParser
from zeroclaw_ref.mcp.transport import Outcome, Router

if TYPE_CHECKING:
    from zeroclaw_ref.mcp.http import Exchange, HttpTransport, RequestsBody

log = logging.getLogger(__name__)

DEFAULT_RETRY_MS = 1000  # [MCP-HTTP-25] [MCP-HTTP-36]
MAX_REOPEN_DELAY_S = 30.0  # [MCP-HTTP-36]
MAX_EMPTY_REOPENS = 5  # [MCP-HTTP-36]
NO_STREAM = (400, 404, 405, 406)  # [MCP-HTTP-32]


def deliver(server: str, router: Router, event: SseEvent | Oversized, generation: int) -> None:
    """[MCP-HTTP-21] [MCP-HTTP-22] route one `message` event with data; skip the rest."""
    if isinstance(event, Oversized):
        log.warning("MCP server `%s`: discarded an oversized SSE event", server)
        return
    if event.type != "message":
        log.debug("MCP server `%s`: ignoring SSE event type `%s`", server, event.type)
        return
    if not event.data:
        return
    try:
        value = loads(event.data)
    except ValueError:
        log.debug("MCP server `%s`: skipping a non-JSON SSE event", server)
        return
    router.route(value, generation)


def _continue(parser: SseParser) -> SseParser:
    fresh = SseParser()
    fresh.last_event_id, fresh.retry_ms = parser.last_event_id, parser.retry_ms
    return fresh


def read_post_stream(
    transport: HttpTransport,
    body: RequestsBody,
    exchange: Exchange,
    slot: Slot[Outcome],
    deadline: float,
    op: str,
    generation: int,
    prefetched: bytes | None = None,
) -> Outcome | None:
    """[MCP-HTTP-15] [MCP-HTTP-25..30] read until our reply arrives, resuming if needed.

    Returns the failure to report, or None when the reply was routed (or the caller gave up).
    Raises:
        McpSizeLimitError: the stream exceeded the response limit (MCP-SIZE-06).
    """
    name = transport.name
    parser = SseParser()
    resumptions = 0
    while True:
        ended_by = _read_stream(transport, body, parser, slot, generation, prefetched)
        prefetched = None
        if exchange.aborted.is_set() or slot.filled:
            return None
        if parser.last_event_id is None or transport.modern:  # [MCP-MOD-17] no resumption
            return _no_reply(name, op, ended_by)
        if resumptions >= transport.options.max_resumptions:
            return errors.outcome_unknown(name, op, errors.CAUSE_NO_SSE_RESPONSE)
        resumptions += 1
        resumed = _resume(transport, body, exchange, parser, deadline, op)
        if isinstance(resumed, _GiveUp):
            return resumed.outcome
        body, parser = resumed, _continue(parser)


def _read_stream(
    transport: HttpTransport,
    body: RequestsBody,
    parser: SseParser,
    slot: Slot[Outcome],
    generation: int,
    prefetched: bytes | None,
) -> Exception | None:
    """Feed one response stream (or the bytes already read from it) to `parser`, routing each
    event, until it ends or our reply was routed; returns the error that ended it, if any."""
    name = transport.name
    try:
        if prefetched is not None:
            chunks = iter([prefetched])
        else:
            chunks = httpbody.sse_limit_checks(name, body, transport.limit)
        for chunk in chunks:
            for event in parser.feed(chunk):
                deliver(name, transport.router, event, generation)
            if slot.filled:
                return None  # [MCP-SIZE-07] stop counting: the stream is closed now
    except (OSError, ValueError) as exc:
        return exc
    return None


def _no_reply(name: str, op: str, ended_by: Exception | None) -> Outcome:
    """The stream ended without our reply and cannot be resumed."""
    if ended_by is not None:  # [MCP-HTTP-30]
        cause = getattr(ended_by, "name", None) or type(ended_by).__name__
        return errors.outcome_unknown(name, op, f"connection error: {cause}")
    return errors.outcome_unknown(name, op, errors.CAUSE_NO_SSE_RESPONSE)  # [MCP-HTTP-29]


@dataclass(frozen=True, slots=True)
class _GiveUp:
    """Resumption stopped; `outcome` is the failure to report (None: nothing to report)."""

    outcome: Outcome | None


def _resume(
    transport: HttpTransport,
    body: RequestsBody,
    exchange: Exchange,
    parser: SseParser,
    deadline: float,
    op: str,
) -> RequestsBody | _GiveUp:
    """[MCP-HTTP-26] wait the server's retry time, then GET the stream again from its last
    event id; the new body replaces the old one in `exchange`."""
    name = transport.name
    wait_s = (parser.retry_ms if parser.retry_ms is not None else DEFAULT_RETRY_MS) / 1000
    if time.monotonic() + wait_s > deadline:
        return _GiveUp(None)  # [MCP-HTTP-27] the caller's wait ends with the timeout text
    if exchange.aborted.wait(wait_s):
        return _GiveUp(None)
    remaining = max(0.001, deadline - time.monotonic())
    try:
        fresh = transport.get((min(30.0, remaining), remaining), parser.last_event_id)
    except (OSError, ValueError) as exc:
        return _GiveUp(errors.outcome_unknown(name, op, f"connection error: {type(exc).__name__}"))
    body.close()
    exchange.body = fresh
    if exchange.aborted.is_set():
        return _GiveUp(None)
    if not 200 <= fresh.status < 300 or not httpbody.is_sse(fresh.content_type):
        return _GiveUp(errors.outcome_unknown(name, op, errors.CAUSE_NO_SSE_RESPONSE))
    return fresh


class GetListener:
    """[MCP-HTTP-31..36] the standalone GET stream, read on its own daemon thread."""

    def __init__(self, transport: HttpTransport, generation: int) -> None:
        self._transport = transport
        self._generation = generation
        self._stop = threading.Event()
        self._body: RequestsBody | None = None
        self.is_open = False

    def start(self, wait_s: float) -> bool:
        """Open the stream, waiting at most `wait_s` for its headers; False for "no stream"."""
        body = self._open(wait_s, None)
        if body is None:
            return False
        threading.Thread(
            target=self._run, name=f"mcp-{self._transport.name}-get", daemon=True
        ).start()
        return True

    def _open(self, wait_s: float, last_id: str | None) -> RequestsBody | None:
        name = self._transport.name
        try:
            body = self._transport.get((min(30.0, wait_s), wait_s), last_id)
        except (OSError, ValueError) as exc:
            log.warning("MCP server `%s`: GET stream failed: %s", name, type(exc).__name__)
            return None
        status = body.status
        ok = 200 <= status < 300
        if status in NO_STREAM or (ok and not httpbody.is_sse(body.content_type)):
            log.debug("MCP server `%s`: no GET stream (HTTP %d)", name, status)
            self._transport.no_get_stream = True
            body.close()
            return None
        if not ok:
            log.warning("MCP server `%s`: GET stream answered HTTP %d", name, status)
            body.close()
            return None
        body.clear_timeout()
        self._body = body
        self.is_open = True
        if self._stop.is_set():
            body.shutdown()
        return body

    def _run(self) -> None:
        transport = self._transport
        parser = SseParser(event_limit=transport.limit)
        empty = 0
        while self._body is not None:
            body = self._body
            seen = parser.events_seen
            try:
                _pump(transport, parser, body, self._generation)
            finally:
                self.is_open = False
                self._body = None
                body.close()
            if self._stop.is_set():
                return
            retry = (parser.retry_ms or DEFAULT_RETRY_MS) / 1000
            empty = 0 if parser.events_seen > seen else empty + 1
            if empty >= MAX_EMPTY_REOPENS:  # the 5th empty reopened stream was the last
                log.debug("MCP server `%s`: giving up on the GET stream", transport.name)
                return
            delay = min(retry * (2**empty if empty else 1), MAX_REOPEN_DELAY_S)
            if self._stop.wait(delay):
                return
            self._open(transport.options.init_timeout_s, parser.last_event_id)
            limit, last, retry_ms = transport.limit, parser.last_event_id, parser.retry_ms
            parser = SseParser(event_limit=limit)
            parser.last_event_id, parser.retry_ms = last, retry_ms

    def stop(self) -> None:
        """Abort the stream by socket shutdown (MCP-HTTP-46); the reader closes it."""
        self._stop.set()
        body = self._body
        if body is not None:
            body.shutdown()


def _pump(transport: HttpTransport, parser: SseParser, body: RequestsBody, generation: int) -> None:
    """Hand every event of `body` on as it arrives, until the stream ends or breaks (a broken
    stream is the caller's cue to reopen it, so the error itself is not reported)."""
    try:
        for chunk in body.chunks():
            for event in parser.feed(chunk):
                deliver(transport.name, transport.router, event, generation)
    except (OSError, ValueError):
        pass


class ListenStream:
    """[MCP-MOD-13] the event stream of a modern `subscriptions/listen` POST, read on its own
    daemon thread like the GET stream (it never holds the serial gate, MCP-RPC-11); reopened
    with a new request id after the §4.6 delays when it ends, until stopped."""

    def __init__(self, transport: HttpTransport, generation: int) -> None:
        self._transport = transport
        self._generation = generation
        self._stop = threading.Event()
        self._body: RequestsBody | None = None

    def start(self, message: JSONObject, deadline: float) -> bool:
        """POST `message`, waiting until `deadline` for the answer's headers; False when the
        server did not open a stream."""
        if not self._open(message, deadline):
            return False
        threading.Thread(
            target=self._run, name=f"mcp-{self._transport.name}-listen", daemon=True
        ).start()
        return True

    def _open(self, message: JSONObject, deadline: float) -> bool:
        transport = self._transport
        wait_s = max(0.001, deadline - time.monotonic())
        try:
            body = transport.post(message, wait_s, stream_session=True)
        except (OSError, ValueError) as exc:
            log.debug("MCP server `%s`: listen failed: %s", transport.name, type(exc).__name__)
            return False
        if not 200 <= body.status < 300 or not httpbody.is_sse(body.content_type):
            log.debug("MCP server `%s`: no listen stream (HTTP %d)", transport.name, body.status)
            body.close()
            return False
        body.clear_timeout()
        self._body = body
        if self._stop.is_set():
            body.shutdown()
        return True

    def _run(self) -> None:
        transport = self._transport
        parser = SseParser(event_limit=transport.limit)
        empty = 0
        while self._body is not None:
            body = self._body
            seen = parser.events_seen
            try:
                _pump(transport, parser, body, self._generation)
            finally:
                self._body = None
                body.close()
            # (the acknowledgement is an event too: a stream that only acknowledged is empty)
            empty = 0 if parser.events_seen > seen + 1 else empty + 1
            if self._stop.is_set() or empty >= MAX_EMPTY_REOPENS:
                return
            retry = (parser.retry_ms or DEFAULT_RETRY_MS) / 1000
            if self._stop.wait(min(retry * (2 ** (empty - 1) if empty else 1), MAX_REOPEN_DELAY_S)):
                return
            message = transport.router.listen_message(self._generation)
            if message is None:
                return
            self._open(message, time.monotonic() + transport.options.init_timeout_s)
            parser = SseParser(event_limit=transport.limit)

    def stop(self) -> None:
        """End the stream by socket shutdown (MCP-HTTP-46); its reader closes it."""
        self._stop.set()
        body = self._body
        if body is not None:
            body.shutdown()
