"""One server's connection: handshake, correlation, timeouts, cancellation and recovery
(mcp.md §1, §2, §7).

Goals: every request has its own one-shot `Slot`, so a response, a transport failure, a timeout
and a caller cancellation race to resolve it exactly once (MCP-STDIO-11); a request that may
have been written is never sent again (MCP-REC-01). Plan: `request` makes sure the connection is
READY (running recovery lazily in the caller's thread, MCP-REC-06), then `exchange` allocates
an id, transmits and waits. Pre-write failures loop back through recovery at most
`max_reconnect_attempts` times (MCP-REC-03). Server requests run on a small pool (MCP-S2C-06).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.cancel import CancelToken, Slot, WaitCancelled, WaitTimedOut
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.mcp import era as eras
from zeroclaw_ref.mcp import errors, handshake, listen, mcpheaders, modern, mrtr
from zeroclaw_ref.mcp import handlers as client_handlers
from zeroclaw_ref.mcp.discovery import McpTool, Requester, list_all, parse_tools
from zeroclaw_ref.mcp.lifecycle import Event, State, next_state
from zeroclaw_ref.mcp.listcache import ListCache
from zeroclaw_ref.mcp.options import McpOptions
from zeroclaw_ref.mcp.transport import (
    Outcome,
    PreWriteError,
    PreWriteFailure,
    Retry,
    Router,
    Transport,
)
from zeroclaw_ref.wire import mcp as wire

log = logging.getLogger(__name__)

PROTOCOL_VERSION = modern.HANDSHAKE_VERSIONS[0]
SUPPORTED_VERSIONS = modern.HANDSHAKE_VERSIONS  # [MCP-VER-01]
# Requests of the handshake itself: never cancelled (MCP-INIT-11), never lossy.
_HANDSHAKE = frozenset({wire.METHOD_INITIALIZE, wire.METHOD_SERVER_DISCOVER})


@dataclass(slots=True)
class _Pending:
    slot: Slot[Outcome]
    op: str
    method: str


_Retry = Retry


class Connection(Router):
    """The client side of one server in one registry; survives respawns until closed."""

    def __init__(
        self,
        config: McpServerConfig,
        make_transport: Callable[[Router], Transport],
        handlers: client_handlers.ClientHandlers,
        options: McpOptions,
    ) -> None:
        self.name = config.name
        self.config = config
        self.options = options
        self.handlers = handlers
        self._transport = make_transport(self)
        transport = self._transport
        self._lock = threading.Lock()
        self._recover_lock = threading.Lock()
        self._gate = threading.Lock() if transport.serial else None
        self._state = State.CONNECTING
        self._lossy = False  # [MCP-REC-07] BROKEN because a request's outcome became unknown
        self._next_id = 1  # [MCP-RPC-02] never reset, across respawns included
        self._generation = 0
        self._pending: dict[int, _Pending] = {}
        self._inflight: dict[str, bool] = {}  # server request id (JSON text) -> cancelled
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, options.handler_workers), thread_name_prefix=f"mcp-{self.name}"
        )
        self.protocol_version: str | None = None
        self.server_capabilities: JSONObject = {}
        self.server_info: JSON = None
        self.instructions: str | None = None
        self.tools: list[McpTool] = []
        self.tools_stale = False
        # [MCP-MOD-01] [MCP-MOD-03] the era asked for, the cache key, and the era in use
        self.era_setting: eras.Setting = eras.setting(config, options.era)
        self.era_key = eras.key(config)
        self.era: eras.Era = "legacy"
        self.modern_version = modern.MODERN_VERSION
        self.cache = ListCache(self.era_key)  # [MCP-MOD-12]
        self._listen_id: int | None = None

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def state(self) -> State:
        """[MCP-LIFE-07] the current state, for diagnostics."""
        return self._state

    def _fire(self, event: Event) -> State:
        with self._lock:
            self._state = next_state(self._state, event)
            return self._state

    @property
    def transport(self) -> Transport:
        return self._transport

    def supports(self, capability: str) -> bool:
        """[MCP-INIT-08] a capability counts when present with a non-null value."""
        return self.server_capabilities.get(capability) is not None

    def connect(self) -> None:
        """First connect: open, handshake, discover tools, then READY (MCP-INIT-12).

        Raises:
            McpError: the connect failed; the connection is closed and must be dropped.
        """
        deadline = time.monotonic() + self.options.init_timeout_s
        try:
            self._open_and_handshake(deadline, self.options.init_timeout_s)
            if self.supports("tools"):
                self.tools = self.list_tools()
            else:
                log.info("MCP server `%s` declared no tools capability", self.name)
            self._fire(Event.HANDSHAKE_OK)
        except BaseException:
            self.close()
            raise

    def requester(self, timeout: float) -> Requester:
        """A `(method, params) -> result` callable bound to this connection and timeout."""
        return lambda method, params: self.request(method, params, timeout)

    def list_tools(self) -> list[McpTool]:
        """[MCP-DISC-16] clear the stale flag, then list every page.

        Raises:
            McpError: the listing failed; the caller keeps the previous list.
        """
        self.tools_stale = False
        opts = self.options
        entries = list_all(
            self.name,
            self.requester(opts.list_timeout_s),
            wire.METHOD_TOOLS_LIST,
            "tools",
            opts.max_list_pages,
        )
        tools = parse_tools(self.name, entries)
        if self.era != "modern":
            return tools
        if self._transport.over_http:
            tools = mcpheaders.keep_valid(self.name, tools)
        maps = {t.name: mcpheaders.header_map(t.input_schema) for t in tools}
        self._transport.set_tool_headers({k: v for k, v in maps.items() if v})
        return tools

    def close(self) -> None:
        """[MCP-LIFE-09] idempotent; pending requests fail with McpClosedError."""
        with self._lock:
            if self._state is State.CLOSED:
                return
            self._state = next_state(self._state, Event.CLOSE)
            pending = list(self._pending.values())
            self._pending.clear()
        for entry in pending:
            entry.slot.offer(errors.closed(self.name))
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._end_listen()
        self._transport.close()

    # --- handshake ------------------------------------------------------------------------

    def _open_and_handshake(self, deadline: float, init_t: float) -> None:
        with self._lock:
            self._generation += 1
            generation = self._generation
        self._transport.open(generation, deadline)
        handshake.run(self, deadline, init_t)

    def respawn(self, deadline: float) -> None:
        """[MCP-MOD-04] a fresh incarnation of the transport (a new child on stdio)."""
        self._transport.reset()
        with self._lock:
            self._generation += 1
            generation = self._generation
        self._transport.open(generation, deadline)

    def adopt_legacy(self, result: JSONObject, version: str, detected: bool) -> None:
        """[MCP-INIT-08] [MCP-INIT-09] what a successful `initialize` told us."""
        caps = result.get("capabilities")
        self._adopt("legacy", version, caps, result.get("serverInfo"), result.get("instructions"))
        self._remember(detected)

    def adopt_modern(
        self, found: modern.Discovered, version: str, detected: bool, deadline: float
    ) -> None:
        """[MCP-MOD-05] a modern session: every later request carries the envelope."""
        self.modern_version = version
        self._transport.set_protocol_version(version)
        self._adopt("modern", version, found.capabilities, found.server_info, found.instructions)
        self._remember(detected)
        self.cache.clear()
        self._listen_id = listen.start(self, deadline)  # [MCP-MOD-13]

    def _adopt(
        self, era: eras.Era, version: str, caps: JSON, info: JSON, instructions: JSON
    ) -> None:
        self.era = era
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        self.server_info = info
        # [MCP-INIT-09] kept for diagnostics only; never injected into a prompt
        self.instructions = instructions if isinstance(instructions, str) else None
        self.protocol_version = version
        log.info("MCP server `%s` serverInfo %s", self.name, dumps(self.server_info))

    def _remember(self, detected: bool) -> None:
        version = self.protocol_version or ""
        if detected:
            eras.remember(self.name, self.era_key, self.era, version)
        eras.observe(self.era_key, self.era, version, detected=detected)

    def use_version(self, version: str) -> None:
        """[MCP-MOD-06] a modern version the server asked for in a -32022 answer."""
        self.modern_version = version
        self.protocol_version = version
        self._transport.set_protocol_version(version)

    def envelope(self) -> JSONObject:
        """[MCP-MOD-05] the `_meta` members of the next modern request."""
        return modern.envelope(self.name, self.handlers, self.modern_version)

    def allocate_id(self) -> int:
        """[MCP-RPC-02] a request id from the connection's counter (the listen request)."""
        with self._lock:
            request_id = self._next_id
            self._next_id += 1
            return request_id

    def run_handler(self, method: str, params: JSONObject) -> Future[client_handlers.Reply]:
        """[MCP-MOD-08] answer one input request on the handler pool (MCP-S2C-06).

        Raises:
            McpClosedError: the connection closed meanwhile.
        """
        try:
            return self._pool.submit(
                client_handlers.answer_request, self.name, self.handlers, method, params
            )
        except RuntimeError as exc:
            raise errors.closed(self.name) from exc

    def _end_listen(self) -> None:
        """Close the listen stream: its POST on HTTP, a cancellation on stdio (MCP-MOD-13)."""
        listen_id, self._listen_id = self._listen_id, None
        if listen_id is not None:
            listen.stop(self, listen_id)

    # --- requests -------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: JSONObject | None,
        timeout: float,
        *,
        tool: str | None = None,
        cancel: CancelToken | None = None,
    ) -> JSON:
        """Send one request and return its `result` (None when the response has none).

        Raises:
            McpError: any failure, with the exact §16 text; nothing was replayed.
        """
        deadline = time.monotonic() + timeout
        op = errors.op_text(method, tool)
        self._ensure_ready(deadline, timeout, op)
        if self.era == "modern":
            return mrtr.request(self, method, params, deadline, timeout, op, cancel)
        return self.send(method, params, deadline, timeout, op, cancel)

    def send(
        self,
        method: str,
        params: JSONObject | None,
        deadline: float,
        timeout: float,
        op: str,
        cancel: CancelToken | None,
    ) -> JSON:
        """One request with its pre-write retries (MCP-REC-03); nothing written is replayed.

        Raises:
            McpError: as `request`.
        """
        last: errors.McpError | None = None
        for _ in range(self.options.max_reconnect_attempts + 1):
            self._ensure_ready(deadline, timeout, op)
            try:
                return self.exchange(method, params, deadline, timeout, op, cancel)
            except _Retry as retry:
                last = retry.error
                log.info("MCP server `%s`: %s; resetting before a new attempt", self.name, last)
                with self._lock:
                    if self._state is State.READY:
                        self._state = next_state(self._state, Event.TRANSPORT_FAILED)
        assert last is not None
        raise last  # [MCP-REC-04]

    def _ensure_ready(self, deadline: float, timeout: float, op: str) -> None:
        state = self._state
        if state is State.READY:
            return
        if state is State.CLOSED:
            raise errors.closed(self.name)
        if state is State.POISONED:
            raise errors.unavailable(self.name)
        if state is State.CONNECTING:
            return  # only the handshake and first discovery run in this state
        self._recover(deadline, timeout, op)

    def _recover(self, deadline: float, timeout: float, op: str) -> None:
        """[MCP-REC-06..09] reset plus full handshake; concurrent callers wait for one run."""
        if not self._recover_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise errors.timed_out_before(self.name, timeout, op)
        try:
            if self._state is not State.BROKEN:
                self._ensure_ready(deadline, timeout, op)
                return
            remaining = deadline - time.monotonic()
            init_t = min(self.options.init_timeout_s, remaining)
            if init_t <= 0:
                raise errors.timed_out_before(self.name, timeout, op)
            try:
                self._transport.reset()
                self._open_and_handshake(time.monotonic() + init_t, init_t)
            except errors.McpError as exc:
                if self._lossy:
                    self._fire(Event.RECOVERY_FAILED_LOSSY)
                    raise errors.unavailable(self.name) from exc
                self._fire(Event.RECOVERY_FAILED)
                if time.monotonic() >= deadline:
                    raise errors.timed_out_before(self.name, timeout, op) from exc
                raise
            with self._lock:
                self._lossy = False
                self.tools_stale = True  # [MCP-REC-09]
            self.cache.clear()
            self._fire(Event.RECOVERED)
        finally:
            self._recover_lock.release()

    def exchange(
        self,
        method: str,
        params: JSONObject | None,
        deadline: float,
        timeout: float,
        op: str | None,
        cancel: CancelToken | None,
    ) -> JSON:
        op = op or errors.op_text(method)
        if cancel is not None and cancel.is_set():
            raise errors.cancelled_before(self.name, op)  # [MCP-CANCEL-05]
        gate = self._gate
        # [MCP-RPC-11] [MCP-TIME-04] the gate wait counts against the deadline
        if gate is not None and not gate.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise errors.timed_out_before(self.name, timeout, op)
        try:
            return self._transmit_and_wait(method, params, deadline, timeout, op, cancel)
        finally:
            if gate is not None:
                gate.release()

    def _transmit_and_wait(
        self,
        method: str,
        params: JSONObject | None,
        deadline: float,
        timeout: float,
        op: str,
        cancel: CancelToken | None,
    ) -> JSON:
        """One attempt: allocate an id, write the request, wait for its one outcome."""
        if cancel is not None and cancel.is_set():
            raise errors.cancelled_before(self.name, op)
        if time.monotonic() >= deadline:
            raise errors.timed_out_before(self.name, timeout, op)  # [MCP-TIME-05]
        slot: Slot[Outcome] = Slot()
        request_id = self._register(slot, op, method)
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._transport.send_request(message, request_id, slot, deadline, op)
        except PreWriteError as exc:
            self._forget(request_id)
            raise _Retry(exc.error) from exc
        outcome = slot.wait(max(0.0, deadline - time.monotonic()), cancel)
        if isinstance(outcome, WaitTimedOut):
            self._abandon(request_id, method, f"timed out after {errors.seconds(timeout)}s")
            raise errors.timed_out_during(self.name, timeout, op)  # [MCP-TIME-06]
        if isinstance(outcome, WaitCancelled):
            self._abandon(request_id, method, "cancelled by client")
            raise errors.cancelled_during(self.name, op)  # [MCP-CANCEL-06]
        self._forget(request_id)
        return self._result(method, params, outcome)

    def _register(self, slot: Slot[Outcome], op: str, method: str) -> int:
        """[MCP-RPC-02] the next id, with its slot; refused when the connection cannot take a
        request now."""
        with self._lock:
            if self._state is State.CLOSED:
                raise errors.closed(self.name)
            if self._state is State.POISONED:
                raise errors.unavailable(self.name)
            if self._state is State.BROKEN and method not in _HANDSHAKE:
                # [MCP-HTTP-40] broke while this request waited at the gate: it was never
                # written, so it goes through recovery and then onto the new session
                raise _Retry(errors.broken(self.name))
            request_id = self._next_id
            self._next_id += 1
            self._pending[request_id] = _Pending(slot, op, method)
        return request_id

    def _result(self, method: str, params: JSONObject | None, outcome: Outcome) -> JSON:
        """The `result` of a response, or the failure the outcome stands for."""
        if isinstance(outcome, PreWriteFailure):
            raise _Retry(outcome.error)
        if isinstance(outcome, errors.McpError):
            raise outcome
        error = outcome.get("error")
        if error is not None:
            tool = params.get("name") if params else None
            detail = error if isinstance(error, dict) else {}
            raise errors.rpc_error(
                self.name, method, tool if isinstance(tool, str) else None, detail
            )
        return outcome.get("result")

    def _forget(self, request_id: int) -> None:
        with self._lock:
            self._pending.pop(request_id, None)

    def _abandon(self, request_id: int, method: str, reason: str) -> None:
        """[MCP-CANCEL-01..04] stop waiting; abort the stream; tell the server (not initialize)."""
        self._forget(request_id)
        self._transport.abort(request_id)
        if method in _HANDSHAKE:
            return  # [MCP-INIT-11] the probe is treated like initialize
        if self.era == "modern" and self._transport.over_http:
            return  # [MCP-MOD-17] closing the response stream was the cancellation
        note: JSONObject = {
            "jsonrpc": "2.0",
            "method": wire.NOTIFY_CANCELLED,
            "params": {"requestId": request_id, "reason": reason},
        }
        try:
            self._transport.send_message(note)
        except (errors.McpError, OSError) as exc:
            log.debug("MCP server `%s`: cancellation not delivered: %s", self.name, exc)

    # --- Router: what transports hand us --------------------------------------------------

    def route(self, value: JSON, generation: int) -> None:
        """[MCP-RPC-06] [MCP-RPC-07] classify and dispatch one value (object or batch)."""
        if generation != self._generation:
            return  # [MCP-STDIO-10] a reader of an ended incarnation
        if isinstance(value, list):
            for item in value:
                self.route(item, generation)
            return
        if not isinstance(value, dict):
            log.debug("MCP server `%s`: skipping a non-object message", self.name)
            return
        method = value.get("method")
        if isinstance(method, str):
            params = value.get("params")
            args = params if isinstance(params, dict) else None
            if value.get("id") is not None:
                self._on_request(value["id"], method, args or {}, generation)
            else:
                self._on_notification(method, args)
            return
        if "id" in value:
            self._on_response(value)
            return
        log.debug("MCP server `%s`: skipping an invalid message", self.name)

    def _on_response(self, message: JSONObject) -> None:
        """[MCP-RPC-03] [MCP-RPC-04] exact id match; unknown ids are dropped."""
        rid = message.get("id")
        entry = None
        if type(rid) is int:
            with self._lock:
                entry = self._pending.pop(rid, None)
        if entry is None:
            log.debug("MCP server `%s`: dropping a response for unknown id %s", self.name, rid)
            return
        entry.slot.offer(message)

    def _on_request(self, rid: JSON, method: str, params: JSONObject, generation: int) -> None:
        """[MCP-RPC-05] [MCP-S2C-06] a server request never completes a client request."""
        key = dumps(rid)
        with self._lock:
            self._inflight[key] = False
        try:
            self._pool.submit(self._answer, rid, key, method, params)
        except RuntimeError:
            log.debug("MCP server `%s`: closed; not answering `%s`", self.name, method)

    def _answer(self, rid: JSON, key: str, method: str, params: JSONObject) -> None:
        reply = client_handlers.answer_request(self.name, self.handlers, method, params)
        with self._lock:
            cancelled = self._inflight.pop(key, False)
        if cancelled:
            return  # [MCP-S2C-08]
        try:
            self._transport.send_message(reply.to_message(rid))
        except (errors.McpError, OSError) as exc:
            log.debug("MCP server `%s`: answer to `%s` not delivered: %s", self.name, method, exc)

    def _on_notification(self, method: str, params: JSONObject | None) -> None:
        """[MCP-NOTE-01..03] [MCP-DISC-15] [MCP-DISC-20]"""
        self.cache.evict(method)  # [MCP-MOD-12] a changed list is fetched anew
        if method == wire.NOTIFY_TOOLS_LIST_CHANGED:
            self.tools_stale = True
        elif method == wire.NOTIFY_MESSAGE:
            client_handlers.log_server_message(self.name, params)
        elif method == wire.NOTIFY_CANCELLED:
            target = params.get("requestId") if params else None
            with self._lock:
                key = dumps(target)
                if key in self._inflight:
                    self._inflight[key] = True
        elif method != wire.NOTIFY_PROGRESS:
            log.debug("MCP server `%s`: notification `%s`", self.name, method)
        client_handlers.notify_hook(self.name, self.handlers, method, params)

    def transport_failed(self, generation: int, cause: str, stderr_tail: str = "") -> None:
        """[MCP-STDIO-19] fail every pending request at once; the connection becomes BROKEN."""
        with self._lock:
            if generation != self._generation or self._state is State.CLOSED:
                return
            pending = list(self._pending.values())
            self._pending.clear()
            if any(p.method not in _HANDSHAKE for p in pending):
                self._lossy = True
            self._state = next_state(self._state, Event.TRANSPORT_FAILED)
        for entry in pending:
            entry.slot.offer(errors.outcome_unknown(self.name, entry.op, cause, stderr_tail))

    def mark_broken(self, generation: int, lossy: bool) -> None:
        with self._lock:
            if generation != self._generation or self._state is State.CLOSED:
                return
            self._lossy = self._lossy or lossy
            self._state = next_state(self._state, Event.TRANSPORT_FAILED)

    def listen_message(self, generation: int) -> JSONObject | None:
        """[MCP-MOD-13] reopen an ended listen stream with a new id; what changed while it
        was down is unknown, so every list counts as changed."""
        with self._lock:
            current = generation == self._generation and self._state is State.READY
        if not current or self.era != "modern" or self._listen_id is None:
            return None
        request_id = self.allocate_id()
        message = listen.request(self, request_id)
        if message is None:
            return None
        self._listen_id = request_id
        for note in (
            wire.NOTIFY_TOOLS_LIST_CHANGED,
            wire.NOTIFY_RESOURCES_LIST_CHANGED,
            wire.NOTIFY_PROMPTS_LIST_CHANGED,
        ):
            self.cache.evict(note)
        self.tools_stale = True
        return message

    def pending_count(self) -> int:
        with self._lock:
            return len(self._pending)

    def fail_pending(self, error_text: str) -> None:
        with self._lock:
            pending = list(self._pending.values())
            self._pending.clear()
        for entry in pending:
            entry.slot.offer(errors.McpSizeLimitError(self.name, error_text))
