"""The blocking read loop: bytes from a stream, framed into lines, handed to a callback.

It runs on the thread that owns the stream (the main thread for stdio, DESIGN §7.2), never
closes a handle it does not own, and treats end of input, a read error and an interrupting
signal alike: it simply returns (ACP-TR-35, ACP-TR-37).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from zeroclaw_ref.wire.framing import LineDecoder, Oversized

log = logging.getLogger(__name__)

READ_CHUNK = 1 << 16


class StopReading(Exception):
    """Raised by a signal handler to end the blocking read (SIGINT, SIGTERM)."""


def read_lines(
    read: Callable[[int], bytes],
    on_line: Callable[[bytes | Oversized], None],
    max_line_bytes: int,
) -> None:
    """Feed `on_line` with every line of the stream until EOF, an error or `StopReading`."""
    decoder = LineDecoder(max_line_bytes)
    try:
        while True:
            data = read(READ_CHUNK)
            if not data:
                break
            for line in decoder.feed(data):
                on_line(line)
    except StopReading:
        return
    except OSError as exc:
        log.warning("input stream failed: %s", exc)
        return
    for line in decoder.finish():
        on_line(line)
