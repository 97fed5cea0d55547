"""The one thread that owns an output stream (acp.md ACP-TR-28, ACP-TR-29; DESIGN §7.3).

Producers serialise on their own thread and enqueue complete lines; the writer writes each
line whole before starting the next, so messages never interleave and per-producer order is
FIFO (ACP-TR-34). On a byte stream (`joins=True`) the lines already waiting are joined into one
write; a frame sink (WebSocket) gets one line per call. A failed write switches the writer to
discard mode and reports the disconnect once (ACP-TR-36). `close()` enqueues a sentinel, so
everything queued before it is still written: that is the "flush the writer" step of shutdown
(ACP-TR-35).

Design: the queues on the per-message path are `queue.SimpleQueue` (implemented in C); the
Python-level `queue.Queue` cost more than the rest of a demo turn (bench/acp_prompt_rtt).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from zeroclaw_ref.core.limits import WRITER_JOIN_SECS
from zeroclaw_ref.wire.framing import encode_line

log = logging.getLogger(__name__)


class _Close:
    pass


_CLOSE = _Close()

Sink = Callable[[bytes], None]

# Lines already queued are joined into one write up to this many bytes; a larger backlog is
# written in several.
MAX_WRITE_BATCH = 1 << 16


class Writer:
    """Serialises every outbound message onto one sink."""

    def __init__(
        self, sink: Sink, on_broken: Callable[[], None] = lambda: None, *, joins: bool = False
    ) -> None:
        """`joins`: the sink is a byte stream, so lines already queued may go out in one
        write; without it every call carries exactly one line (a WebSocket frame each)."""
        self._sink = sink
        self._batch_limit = MAX_WRITE_BATCH if joins else 0
        self._on_broken = on_broken
        self._queue: queue.SimpleQueue[bytes | _Close] = queue.SimpleQueue()
        self._broken = threading.Event()
        self._thread = threading.Thread(target=self._run, name="writer", daemon=True)
        self._thread.start()

    @property
    def broken(self) -> bool:
        return self._broken.is_set()

    def send(self, line: str) -> None:
        """Enqueue one message (compact JSON without its newline)."""
        if not self._broken.is_set():
            self._queue.put(encode_line(line))

    def close(self) -> None:
        """Write everything queued so far, then stop; waits a bounded time."""
        self._queue.put(_CLOSE)
        self._thread.join(WRITER_JOIN_SECS)

    def _run(self) -> None:
        while True:
            batch, closing = self._take()
            if batch and not self._broken.is_set():  # [ACP-TR-36] else drain without writing
                try:
                    self._sink(batch)
                except (OSError, ValueError) as exc:
                    log.warning("output stream closed: %s", exc)
                    self._broken.set()
                    self._on_broken()
            if closing:
                return

    def _take(self) -> tuple[bytes, bool]:
        """Block for one line, then take every line already queued behind it, up to the close.

        Design: a turn usually queues its update, any trim notice and its result before this
        thread gets the CPU (core/affinity.py), so on a byte stream they leave in one write:
        whole lines, in queue order (ACP-TR-29, ACP-TR-34), for a third of the system calls
        and of the reader wake-ups on the client's side.
        """
        item = self._queue.get()
        if isinstance(item, _Close):
            return b"", True
        lines = [item]
        size = len(item)
        while size < self._batch_limit:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Close):
                return b"".join(lines), True
            lines.append(item)
            size += len(item)
        return b"".join(lines), False
