"""A JSON-RPC peer: method-table dispatch inbound, correlated requests outbound (acp.md §1).

Goals: one place converts handler outcomes into replies (a result, an `RpcError`, or an
unexpected exception, which is logged with its traceback and never put on the wire); one table
of pending outbound requests, keyed by the `zc-out-<N>` ids of ACP-TR-23.

Plan: `dispatch(line)` runs on the reader thread. A handler returns a JSON result, raises
`RpcError`, or returns `DEFERRED` after taking ownership of the `Call` to answer it later from
another thread (a prompt's result comes from the session worker). Notifications are processed
exactly like requests, with every reply suppressed (ACP-TR-14, ACP-TR-20).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from zeroclaw_ref.core.cancel import CANCELLED, Slot
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.wire.acp import OUTBOUND_ID_PREFIX
from zeroclaw_ref.wire.errors import RpcError
from zeroclaw_ref.wire.framing import Oversized
from zeroclaw_ref.wire.jsonrpc import (
    Invalid,
    Request,
    Response,
    classify,
    error_line,
    notification_line,
    request_line,
    response_line,
)

log = logging.getLogger(__name__)


class Deferred:
    """The type of `DEFERRED`: a handler returns it to answer its call later, from another
    thread, through `Call.respond` or `Call.fail` (a prompt turn, for one)."""

    def __repr__(self) -> str:
        return "DEFERRED"


DEFERRED: Final = Deferred()


class Call:
    """One inbound request or notification, answerable exactly once from any thread."""

    def __init__(self, endpoint: Endpoint, msg_id: JSON, method: str, params: JSONObject) -> None:
        self.endpoint = endpoint
        self.id = msg_id
        self.method = method
        self.params = params
        self._answered = False
        self._lock = threading.Lock()

    @property
    def is_notification(self) -> bool:
        return self.id is None

    def reply(self, result: JSON) -> None:
        """Send the result (nothing for a notification, ACP-TR-20)."""
        if self._claim() and not self.is_notification:
            self.endpoint.send_line(response_line(self.id, result))

    def fail(self, error: RpcError) -> None:
        """Send the error (nothing for a notification, ACP-TR-14)."""
        if self._claim() and not self.is_notification:
            self.endpoint.send_line(error_line(self.id, error))

    def _claim(self) -> bool:
        with self._lock:
            answered, self._answered = self._answered, True
        if answered:
            log.error("%s answered twice; second answer dropped", self.method)
        return not answered


Handler = Callable[[Call], "JSON | Deferred"]


@dataclass(frozen=True, slots=True)
class Outbound:
    """A pending outbound request: its id and the slot its answer arrives in."""

    id: str
    slot: Slot[Response]


class Endpoint:
    """Dispatches inbound lines against `methods` and correlates outbound requests."""

    def __init__(self, methods: Mapping[str, Handler], send_line: Callable[[str], None]) -> None:
        self._methods = methods
        self.send_line = send_line
        self._counter = itertools.count()  # [ACP-TR-23] per connection, from 0
        self._pending: dict[str, Slot[Response]] = {}
        self._lock = threading.Lock()

    # --- inbound ---------------------------------------------------------------------------

    def dispatch(self, line: bytes | Oversized) -> None:
        """Handle one framed line: parse, classify, run its handler, send any reply."""
        if isinstance(line, Oversized):
            self.send_line(
                error_line(
                    None, RpcError.parse_error(f"line exceeds the size limit ({line.size}+ bytes)")
                )
            )
            return
        line = line.strip()  # [ACP-TR-07] also removes a trailing CR
        if not line:
            return
        message = classify(line)
        if isinstance(message, Invalid):
            if message.reply is not None:
                # [ACP-TR-12] parse errors are answered with a null id; [ACP-TR-13] keeps it.
                self.send_line(error_line(message.id, message.reply))
            return
        if isinstance(message, Response):
            self._resolve(message)
            return
        msg_id = message.id if isinstance(message, Request) else None
        self._call(Call(self, msg_id, message.method, message.params))

    def _call(self, call: Call) -> None:
        handler = self._methods.get(call.method)  # [ACP-TR-17] exact, case-sensitive
        if handler is None:
            # [ACP-TR-18] requests get −32601; [ACP-TR-19] notifications ($/…, _…) are ignored.
            call.fail(RpcError.method_not_found(call.method))
            return
        try:
            result = handler(call)
        except RpcError as exc:
            call.fail(exc)
            return
        except Exception:
            # Design: a handler bug must not kill the reader or leak a traceback onto stdout.
            log.exception("handler for %s failed", call.method)
            call.fail(RpcError.internal_error(f"Internal error while handling {call.method}"))
            return
        if not isinstance(result, Deferred):
            call.reply(result)

    # --- outbound --------------------------------------------------------------------------

    def request(self, method: str, params: JSONObject) -> Outbound:
        """Send a request to the peer; its answer (or CANCELLED) arrives in the slot."""
        slot: Slot[Response] = Slot()
        with self._lock:
            msg_id = f"{OUTBOUND_ID_PREFIX}{next(self._counter)}"
            self._pending[msg_id] = slot
        self.send_line(request_line(msg_id, method, params))
        return Outbound(msg_id, slot)

    def notify(self, method: str, params: JSONObject) -> None:
        self.send_line(notification_line(method, params))

    def abandon(self, msg_id: str) -> None:
        """[ACP-TR-26] resolve a pending request locally; a later answer is discarded."""
        with self._lock:
            slot = self._pending.pop(msg_id, None)
        if slot is not None:
            slot.offer(CANCELLED)

    def abandon_all(self) -> None:
        """[ACP-TR-35] resolve every pending request as no decision."""
        with self._lock:
            slots = list(self._pending.values())
            self._pending.clear()
        for slot in slots:
            slot.offer(CANCELLED)

    def _resolve(self, response: Response) -> None:
        # [ACP-TR-24] ids compare as strings; a non-string id compares as its JSON text, so the
        # number 0 never matches "zc-out-0". Unknown ids are dropped silently.
        key = response.id if isinstance(response.id, str) else dumps(response.id)
        with self._lock:
            slot = self._pending.pop(key, None)
        if slot is not None:
            slot.offer(response)
