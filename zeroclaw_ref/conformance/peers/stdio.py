"""Fake MCP server peers on the runner's side (transcripts.md §8).

stdio peers live here: the IUT starts the relay script (relay.py, beside this file), which
connects back to a loopback socket opened here and forwards lines both ways
([TX-PEER-05]). A respawned relay continues the same channel ([TX-PEER-06]).
HTTP and SSE peers ([TX-PEER-07] to [TX-PEER-09]) live in httppeers.py.

Relay protocol (internal, [TX-PEER-06]): one JSON object per line. The relay
first sends its token and receives ``{"on_eof": ...}``; then it sends
``{"b64": <stdin line>}`` and ``{"eof": true}``, and the runner sends
``{"b64": <bytes>, "stream": ...}``, ``{"close": true}`` and ``{"kill": <status or null>}``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import queue
import secrets
import socket
import threading
import time

from ..core.header import Channel
from ..core.jsonlex import JSON, JsonError, loads
from .httppeers import HttpPeer, SsePeer
from .inbox import Inbox

CONNECT_WAIT = 5.0


class PeerError(Exception):
    """A peer that cannot be provided (for example an unimplemented transport)."""


class StdioPeer(Inbox):
    """The runner's end of one stdio peer channel (stdio lines carry no headers)."""

    def __init__(self, channel: Channel, timeout_scale: float) -> None:
        super().__init__()
        self.channel = channel
        self.scale = timeout_scale
        self.token = secrets.token_hex(16)
        self.eofs: queue.Queue[None] = queue.Queue()
        self._server = socket.create_server(("127.0.0.1", 0))
        port = self._server.getsockname()[1]
        self.placeholder = "PEER_" + channel.name.upper()
        self.value = f"127.0.0.1:{port}:{self.token}"
        self._lock = threading.Condition()
        self._current: socket.socket | None = None
        self._all: list[socket.socket] = []
        self._stopped = False
        threading.Thread(target=self._accept, name=f"peer-{channel.name}", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        try:
            if reader.readline().strip().decode("ascii", "replace") != self.token:
                conn.close()
                return
            on_eof = self.channel.options.get("on_eof", "exit")
            conn.sendall(json.dumps({"on_eof": on_eof}).encode() + b"\n")
            with self._lock:
                self._all.append(conn)
                self._current = conn  # [TX-PEER-06] later sends go to the newest process
                self._lock.notify_all()
            for raw in reader:
                self._incoming(json.loads(raw))
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                if self._current is conn:
                    self._current = None
            with contextlib.suppress(OSError):
                conn.close()

    def _incoming(self, event: dict[str, str | bool]) -> None:
        if event.get("eof"):
            self.eofs.put(None)  # [TX-PEER-04] a transport event, not a message
            return
        data = base64.b64decode(str(event.get("b64", "")))
        text = data.decode("utf-8", "replace").rstrip("\n").removesuffix("\r")
        try:
            value = loads(text, allow_duplicates=True)
        except JsonError:
            # [TX-PEER-03] bytes that are not JSON stay matchable
            value = {"$raw": text}
        self._queue(value)

    def _connection(self) -> socket.socket | None:
        deadline = time.monotonic() + CONNECT_WAIT * self.scale
        with self._lock:
            while self._current is None and not self._stopped:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._lock.wait(remaining)
            return self._current

    def _command(self, command: dict[str, JSON]) -> bool:
        conn = self._connection()
        if conn is None:
            return False
        try:
            conn.sendall(json.dumps(command).encode() + b"\n")
        except OSError:
            return False
        return True

    def send(self, data: bytes, stream: str) -> bool:
        """Write bytes to the peer's stdout (or stderr); False when no relay is connected."""
        return self._command({"b64": base64.b64encode(data).decode(), "stream": stream})

    def close_output(self) -> bool:
        """[TX-FRAME-06] the IUT sees EOF from this server; later sends go to a respawn."""
        conn = self._connection()
        ok = self._command({"close": True})
        with self._lock:
            if self._current is conn:
                self._current = None
        return ok

    def kill(self, status: int | None) -> bool:
        """[TX-FRAME-08] SIGKILL the relay, or make it exit with ``status``."""
        conn = self._connection()
        ok = self._command({"kill": status})
        with self._lock:
            if self._current is conn:
                self._current = None
        return ok

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
            conns = list(self._all)
        with contextlib.suppress(OSError):
            self._server.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                conn.close()


Peer = StdioPeer | HttpPeer | SsePeer


def start_peer(channel: Channel, timeout_scale: float) -> Peer:
    """Start the peer for a declared channel ([TX-PEER-01]).

    Raises:
        PeerError: the transport is not implemented by this runner.
    """
    if channel.transport == "http":
        return HttpPeer(channel, timeout_scale)
    if channel.transport == "sse":
        return SsePeer(channel, timeout_scale)
    if channel.transport != "stdio":
        raise PeerError(f"channel {channel.name!r}: unknown transport {channel.transport}")
    return StdioPeer(channel, timeout_scale)
