"""The values every gateway route shares: the parsed request, the reply and the process state.

Design: a route is a plain function `HttpRequest -> Reply | None` listed in `server.ROUTES`;
`None` means the route took the connection over (the WebSocket upgrade). Keeping these values
here lets `server.py`, `api.py`, `pairing.py` and `ws.py` import them without a cycle.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.config.store import ConfigStore
from zeroclaw_ref.core.clock import Clock
from zeroclaw_ref.core.ids import IdFactory
from zeroclaw_ref.core.jsontypes import JSON, dumps
from zeroclaw_ref.core.limits import MAX_INBOUND_LINE_BYTES

if TYPE_CHECKING:
    from .pairing import Pairing


@dataclass(frozen=True, slots=True)
class GatewayDeps:
    """What the command line hands the gateway.

    `choose_agent` is the POL-PATH-02 default rule (it lives with the CLI, which the gateway may
    not import); `announce` writes one line to standard error (the pairing code, ACP-GW-11).
    """

    config: ConfigStore
    ids: IdFactory
    clock: Clock
    choose_agent: Callable[[ConfigSnapshot, str | None], str]
    announce: Callable[[str], None]
    # [ACP-GW-09] a frame carries one JSON-RPC message, bounded like a stdio line (ACP-TR-08).
    max_message_bytes: int = MAX_INBOUND_LINE_BYTES


@dataclass(slots=True)
class GatewayState:
    """Process-wide state: dependencies, the pairing code and the live WebSocket connections."""

    deps: GatewayDeps
    pairing: Pairing
    live: set[LiveConnection] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, connection: LiveConnection) -> None:
        with self.lock:
            self.live.add(connection)

    def discard(self, connection: LiveConnection) -> None:
        with self.lock:
            self.live.discard(connection)

    def connections(self) -> list[LiveConnection]:
        with self.lock:
            return list(self.live)


class LiveConnection:
    """A WebSocket connection as the gateway sees it: something it can abort and wait for."""

    def __init__(self) -> None:
        self.finished = threading.Event()

    def abort(self) -> None:
        """Drop the connection (gateway shutdown); the reader then runs its own cleanup."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One authenticated (or pairing) request; `path` has the prefix removed."""

    verb: str
    path: str
    query: Mapping[str, str]
    headers: Message
    body: bytes
    client_host: str
    config: ConfigSnapshot
    state: GatewayState
    handler: BaseHTTPRequestHandler


@dataclass(frozen=True, slots=True)
class Reply:
    """A complete HTTP answer."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(cls, status: int, value: JSON) -> Reply:
        return cls(status, dumps(value).encode("utf-8"))

    @classmethod
    def error(cls, status: int, text: str) -> Reply:
        return cls.json(status, {"error": text})


Route = Callable[[HttpRequest], Reply | None]
