"""What a transport offers a connection, and what a connection offers a transport (DESIGN §7.8).

A connection owns correlation, the lifecycle and recovery; a transport owns bytes. Requests are
answered through `Slot`s: a transport either writes and lets its reader route the response
(stdio), or runs the exchange on a helper thread that routes what the body carries (HTTP). A
transport reports "nothing was transmitted" by raising `PreWriteError` from `send_request`, or
by offering a `PreWriteFailure` to the slot when it learns it later (MCP-REC-03).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

from zeroclaw_ref.core.cancel import Slot
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp.errors import McpError
from zeroclaw_ref.mcp.mcpheaders import HeaderMap


class PreWriteError(Exception):
    """No byte of the message left the client; the caller may reset and try again."""

    def __init__(self, error: McpError) -> None:
        super().__init__(str(error))
        self.error = error


class Retry(Exception):
    """Internal to the connection: the request was not transmitted; reset and try again
    (MCP-REC-03)."""

    def __init__(self, error: McpError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True, slots=True)
class PreWriteFailure:
    """A slot value: the exchange failed before anything was transmitted."""

    error: McpError


# What a request slot receives: the response message, a post-write failure, or a pre-write one.
Outcome: TypeAlias = "JSONObject | McpError | PreWriteFailure"


class Router(ABC):
    """The connection side: transports hand it everything the server sends."""

    @abstractmethod
    def route(self, value: JSON, generation: int) -> None:
        """Dispatch one parsed JSON value (object or batch) read from incarnation `generation`."""

    @abstractmethod
    def transport_failed(self, generation: int, cause: str, stderr_tail: str = "") -> None:
        """The incarnation died: fail every pending request with `cause`; become BROKEN."""

    @abstractmethod
    def mark_broken(self, generation: int, lossy: bool) -> None:
        """The incarnation is unusable (a stale session) but pending requests are not failed."""

    @abstractmethod
    def pending_count(self) -> int:
        """How many client requests await a response (legacy SSE oversized events)."""

    @abstractmethod
    def fail_pending(self, error_text: str) -> None:
        """Fail every pending request with a size-limit error carrying `error_text`."""

    def listen_message(self, generation: int) -> JSONObject | None:
        """A fresh `subscriptions/listen` request (new id) to reopen an ended listen stream of
        incarnation `generation`, or None when there is nothing to reopen (MCP-MOD-13)."""
        return None


class Transport(ABC):
    """One server's byte channel; `serial` transports carry one request at a time."""

    serial: bool = False

    @abstractmethod
    def open(self, generation: int, deadline: float) -> None:
        """Start a fresh incarnation (spawn, open a stream).

        Raises:
            McpError: the incarnation could not be started; the connect or recovery fails.
        """

    @abstractmethod
    def send_request(
        self, message: JSONObject, request_id: int, slot: Slot[Outcome], deadline: float, op: str
    ) -> None:
        """Transmit a request; its outcome arrives in `slot` (through the router or directly).

        Raises:
            PreWriteError: nothing was transmitted.
        """

    @abstractmethod
    def send_message(self, message: JSONObject) -> None:
        """Transmit a notification or a response, outside any serial gate (MCP-RPC-12).

        Raises:
            McpError or OSError: delivery failed; callers log and carry on.
        """

    def abort(self, request_id: int) -> None:  # noqa: B027 - optional hook
        """Stop reading the response stream of `request_id`, if one is open (MCP-CANCEL-03)."""

    def after_initialized(self, deadline: float) -> None:  # noqa: B027 - optional hook
        """Work that follows `notifications/initialized` (the HTTP GET stream, MCP-HTTP-31)."""

    def set_protocol_version(self, version: str | None) -> None:  # noqa: B027 - optional hook
        """The version negotiated by the current incarnation (MCP-VER-03)."""

    @property
    def modern_capable(self) -> bool:
        """Whether the current incarnation can carry the 2026-07-28 era (MCP-MOD-01)."""
        return True

    @property
    def over_http(self) -> bool:
        """Whether requests travel as HTTP POSTs (the modern headers apply, MCP-MOD-14)."""
        return False

    def set_era(self, modern: bool) -> None:  # noqa: B027 - optional hook
        """The era of the current incarnation: modern requests carry the §14.3 headers."""

    def set_tool_headers(self, maps: Mapping[str, HeaderMap]) -> None:  # noqa: B027
        """The `x-mcp-header` maps of the listed tools, by tool name (MCP-MOD-16)."""

    def open_listen(self, message: JSONObject, deadline: float) -> bool:
        """Send a `subscriptions/listen` request whose answer is a long-lived stream; False
        when the server refused it (MCP-MOD-13). By default it is one more line out."""
        self.send_message(message)
        return True

    def close_listen(self) -> None:  # noqa: B027 - optional hook
        """End the listen stream, if one is open (closing or resetting)."""

    @abstractmethod
    def reset(self) -> None:
        """Tear the current incarnation down before `open` starts the next one."""

    @abstractmethod
    def close(self) -> None:
        """Release everything; idempotent."""
