"""Plumbing shared by the HTTP and SSE peers (transcripts.md §8.3, §8.4).

Design: every HTTP connection is served by one stdlib ``BaseHTTPRequestHandler``
on its own thread. A handler that owes the IUT an answer (an open POST, an
event stream) parks on a ``Mailbox``: the runner's thread posts ``Out`` items to
it, and the handler writes them and reports back through ``Out.done``. While it
waits, the handler also watches its socket, so a connection the IUT closes is
noticed at once ([TX-PEER-04] for the SSE stream, ``peer-exchange-closed`` for
an abandoned POST). Nothing here polls ([TX-RUN-11]): waits are a ``selectors``
wait on the socket and a wake-up pipe (not ``select.select``, which cannot watch
descriptors numbered 1024 or more, as a large ``--jobs`` run reaches), or queue
reads with deadlines.

Request bodies are read whole ([TX-PEER-03]) but never without bound: a body
over ``BODY_LIMIT`` bytes, a chunk over ``CHUNK_LIMIT``, a chunked framing the
peer cannot follow or a body cut short raise ``BodyError``. The peer then
refuses the request and the frame that would take the message fails with that
reason; nothing is truncated, and no byte of a refused chunk is ever parsed as
framing.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import queue
import re
import selectors
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.jsonlex import JSON, JsonError, dumps, loads
from ..core.match import MatchContext, Mismatch, match

# Read at call time, so tests can lower them. An MCP message the size of the
# limits is far beyond anything a scenario sends; they only bound the memory an
# IUT gone wrong can make the runner hold.
BODY_LIMIT = 64 * 1024 * 1024
CHUNK_LIMIT = 64 * 1024 * 1024
_LINE_LIMIT = 1024  # a chunk-size line, with any extensions
_HEX = re.compile(rb"[0-9A-Fa-f]+")


class BodyError(Exception):
    """A request body the peer refuses; ``status`` is the HTTP answer it gets."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class Out:
    """One write the runner hands to a waiting handler.

    ``stream`` answers with (or continues) an event stream; ``end`` finishes the
    response after this write; ``drop`` closes the connection without a response.
    """

    body: bytes
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    stream: bool = False
    end: bool = False
    drop: bool = False
    done: queue.Queue[bool] = field(default_factory=queue.Queue)


class Mailbox:
    """Where a handler thread waits for the runner, watching its socket meanwhile."""

    def __init__(self, sock: socket.socket, ids: frozenset[str] = frozenset()) -> None:
        self.sock = sock
        self.ids = ids  # JSON-RPC request ids (as compact JSON) this POST is owed answers for
        self.gone = False  # the IUT closed the connection
        self.answered = False
        self._items: queue.Queue[Out] = queue.Queue()
        self._wake_r, self._wake_w = os.pipe()
        self._watch = True
        self._lock = threading.Lock()
        self._closed = False

    def put(self, out: Out) -> None:
        with self._lock:
            if self._closed or self.gone:  # nobody will write it; a closed pipe's fd may be reused
                out.done.put(False)
                return
            self._items.put(out)
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"x")

    def _left(self) -> None:
        """The IUT closed the connection: fail whatever the runner still hands over."""
        with self._lock:
            self.gone = True
            while True:
                try:
                    self._items.get_nowait().done.put(False)
                except queue.Empty:
                    return

    def alive(self) -> bool:
        """False when the IUT has already closed its end (checked without blocking)."""
        try:
            return self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    def wait(self) -> Out | None:
        """The next item, or None once the IUT has closed the connection."""
        with selectors.DefaultSelector() as sel:
            sel.register(self._wake_r, selectors.EVENT_READ)
            watching = False
            while True:
                with contextlib.suppress(queue.Empty):
                    return self._items.get_nowait()
                try:
                    if self._watch != watching:
                        if self._watch:
                            sel.register(self.sock, selectors.EVENT_READ)
                        else:
                            sel.unregister(self.sock)
                        watching = self._watch
                    ready = {key.fd for key, _ in sel.select()}
                except (OSError, ValueError, KeyError):  # the socket is already closed
                    self._left()
                    return None
                if self._wake_r in ready:
                    with contextlib.suppress(OSError):
                        os.read(self._wake_r, 4096)
                    continue
                try:
                    peeked = self.sock.recv(1, socket.MSG_PEEK)
                except OSError:
                    peeked = b""
                if not peeked:
                    self._left()
                    return None
                # bytes while an answer is owed: not ours to read; stop watching
                self._watch = False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for fd in (self._wake_r, self._wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)


class Handler(http.server.BaseHTTPRequestHandler):
    """Routes each request to the peer that accepted the connection."""

    protocol_version = "HTTP/1.1"
    server: Any  # the owning peer (the stdlib only stores it)

    def log_message(self, format: str, *args: object) -> None:
        return  # the runner's reports carry what matters; nothing goes to stderr

    def do_POST(self) -> None:
        self.server.on_post(self)

    def do_GET(self) -> None:
        self.server.on_get(self)

    def do_DELETE(self) -> None:
        self.server.on_delete(self)


def request_headers(h: Handler) -> dict[str, str]:
    """Request headers by lower-case name; repeated headers joined by ``, ``."""
    found: dict[str, str] = {}
    for name, value in h.headers.items():
        key = name.lower()
        found[key] = f"{found[key]}, {value}" if key in found else value
    return found


def read_body(h: Handler) -> bytes:
    """The request body, by Content-Length or chunked transfer coding.

    Raises:
        BodyError: the body is over ``BODY_LIMIT``, a chunk is over
            ``CHUNK_LIMIT``, the framing is broken or the IUT closed the
            connection inside the body. The connection must then be closed:
            the rest of the body is unread.
    """
    limit = BODY_LIMIT
    if "chunked" in h.headers.get("Transfer-Encoding", "").lower():
        return _read_chunked(h, limit)
    raw = (h.headers.get("Content-Length") or "0").strip()
    if not raw.isdigit():
        raise BodyError(400, f"the Content-Length {raw[:40]!r} is not a byte count")
    length = int(raw)
    if length > limit:
        raise BodyError(413, f"a request body of {length} bytes is over the {limit}-byte limit")
    return _read_exactly(h, length)


def _read_chunked(h: Handler, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = h.rfile.readline(_LINE_LIMIT + 1)
        if not line.endswith(b"\n"):
            raise BodyError(400, "a chunk-size line is too long or cut short")
        digits = line.split(b";")[0].strip()
        if not _HEX.fullmatch(digits):  # int(..., 16) would also take "0x1f", "-1" and "1_0"
            raise BodyError(400, f"the chunk size {digits[:40]!r} is not hexadecimal")
        size = int(digits, 16)
        if size == 0:
            _skip_trailers(h)
            return b"".join(parts)
        # Fail before reading: a truncated chunk would leave the rest of it to be
        # parsed as the next size line, and the framing would be lost.
        if size > CHUNK_LIMIT:
            raise BodyError(413, f"a chunk of {size} bytes is over the {CHUNK_LIMIT}-byte limit")
        total += size
        if total > limit:
            raise BodyError(413, f"the chunked request body is over the {limit}-byte limit")
        parts.append(_read_exactly(h, size))
        if h.rfile.readline(_LINE_LIMIT + 1) not in (b"\r\n", b"\n"):
            raise BodyError(400, "a chunk is longer than its size line says")


def _skip_trailers(h: Handler) -> None:
    """The trailer section after the last chunk, up to its empty line."""
    for _ in range(100):
        line = h.rfile.readline(_LINE_LIMIT + 1)
        if line in (b"\r\n", b"\n", b""):  # an IUT may close right after the last chunk
            return
        if not line.endswith(b"\n"):
            break
    raise BodyError(400, "the trailer section after the last chunk is broken")


def _read_exactly(h: Handler, size: int) -> bytes:
    data = h.rfile.read(size) if size > 0 else b""
    if len(data) != size:
        raise BodyError(400, f"the IUT closed the connection {len(data)} bytes into {size}")
    return data


def parse_message(body: bytes) -> JSON:
    """[TX-PEER-03] one body is one message; bytes that are not JSON stay matchable."""
    text = body.decode("utf-8", "replace")
    try:
        return loads(text, allow_duplicates=True)
    except JsonError:
        return {"$raw": text}


def request_ids(value: JSON) -> frozenset[str]:
    """Ids of the JSON-RPC requests in a message (an object with ``method`` and an id)."""
    items = value if isinstance(value, list) else [value]
    return frozenset(
        dumps(v["id"])
        for v in items
        if isinstance(v, dict) and "method" in v and v.get("id") is not None
    )


def response_ids(value: JSON) -> frozenset[str]:
    """Ids of the JSON-RPC responses in a message (``result`` or ``error``, no ``method``)."""
    items = value if isinstance(value, list) else [value]
    return frozenset(
        dumps(v.get("id"))
        for v in items
        if isinstance(v, dict) and "method" not in v and ("result" in v or "error" in v)
    )


def sse_event(text: str, event: str = "message") -> bytes:
    """One event-stream event whose data is ``text`` (one ``data`` line per line)."""
    lines = [f"event: {event}"] + [f"data: {line}" for line in text.split("\n")]
    return ("\n".join(lines) + "\n\n").encode("utf-8", "surrogatepass")


def respond(
    h: Handler,
    status: int,
    body: bytes = b"",
    headers: tuple[tuple[str, str], ...] = (),
    content_type: str | None = None,
) -> None:
    """A complete response with a Content-Length; configured headers win over defaults."""
    names = {k.lower() for k, _ in headers}
    h.send_response(status)
    if content_type is not None and "content-type" not in names:
        h.send_header("Content-Type", content_type)
    for name, value in headers:
        h.send_header(name, value)
    if "content-length" not in names:
        h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    if body:
        h.wfile.write(body)
    h.wfile.flush()


def start_stream(h: Handler, status: int = 200, headers: tuple[tuple[str, str], ...] = ()) -> None:
    """Response headers of an event stream; the body ends when the connection closes."""
    names = {k.lower() for k, _ in headers}
    h.send_response(status)
    if "content-type" not in names:
        h.send_header("Content-Type", "text/event-stream")
    h.send_header("Cache-Control", "no-cache")
    h.send_header("Transfer-Encoding", "chunked")  # each write reaches the IUT at once
    h.send_header("Connection", "close")
    for name, value in headers:
        h.send_header(name, value)
    h.end_headers()
    h.wfile.flush()
    h.close_connection = True


def write_chunk(h: Handler, data: bytes, last: bool = False) -> None:
    """Write ``data`` as one chunk of an event stream, then the final chunk when ``last``."""
    frame = b"%x\r\n%s\r\n" % (len(data), data) if data else b""
    h.wfile.write(frame + (b"0\r\n\r\n" if last else b""))
    h.wfile.flush()


def shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def http_options(value: JSON) -> tuple[int, tuple[tuple[str, str], ...], Mapping[str, JSON]]:
    """(status, headers, the whole object) of a frame's ``http`` modifier."""
    opts = value if isinstance(value, dict) else {}
    status = opts.get("status", 200)
    raw = opts.get("headers", {})
    headers = tuple((str(k), str(v)) for k, v in raw.items()) if isinstance(raw, dict) else ()
    return (
        (status if isinstance(status, int) and not isinstance(status, bool) else 200),
        headers,
        opts,
    )


def match_headers(
    expected: JSON, actual: Mapping[str, str] | None, ctx: MatchContext
) -> Mismatch | None:
    """[TX-PEER-08] each listed request header is present and matches; others are not checked."""
    if not isinstance(expected, dict) or not isinstance(expected.get("headers"), dict):
        return None
    wanted = expected["headers"]
    assert isinstance(wanted, dict)
    want: dict[str, JSON] = {str(k).lower(): v for k, v in wanted.items()}
    have: dict[str, JSON] = {k: actual[k] for k in want if actual is not None and k in actual}
    miss = match(want, have, ctx)
    if miss is None:
        return None
    return Mismatch("(request headers)" + miss.pointer, miss.reason, miss.expected, miss.actual)


class Listener:
    """A loopback listening socket whose connections are served by ``Handler`` threads."""

    def __init__(self, owner: object, name: str) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._owner = owner
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, name=f"peer-{name}", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, addr = self.sock.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    shutdown(conn)
                    conn.close()
                    continue
                self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn, addr), daemon=True).start()

    def _serve(self, conn: socket.socket, addr: tuple[str, int]) -> None:
        try:
            Handler(conn, addr, self._owner)  # type: ignore[arg-type]
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            with contextlib.suppress(OSError):
                conn.close()

    def drop_all(self) -> None:
        """Close every open connection without a response ([TX-FRAME-08])."""
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            shutdown(conn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        with contextlib.suppress(OSError):
            self.sock.close()
        self.drop_all()
