"""Newline framing: bytes in, complete lines out, with an explicit maximum (ACP-TR-06..09).

Sans-IO: `LineDecoder.feed(data)` returns the complete lines found so far. A line longer than
the maximum is not buffered: its bytes are dropped until the next newline and an `Oversized`
marker is returned in its place, so a hostile client cannot make the server hold gigabytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from zeroclaw_ref.core.jsontypes import escape_surrogates


@dataclass(frozen=True, slots=True)
class Oversized:
    """Stands for a line that exceeded the limit; `size` is a lower bound of its length."""

    size: int


class LineDecoder:
    """Split a byte stream on `\\n` (the CR of a CRLF stays on the line and is trimmed later)."""

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._discarding = 0  # bytes dropped of the current oversized line, 0 when not dropping

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        """Append `data`; return every line completed by it, without its newline."""
        out: list[bytes | Oversized] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                self._take(data[start:])
                return out
            self._take(data[start:end])
            if self._discarding:
                out.append(Oversized(self._discarding))
                self._discarding = 0
            else:
                out.append(bytes(self._buffer))
            self._buffer.clear()
            start = end + 1

    def _take(self, chunk: bytes) -> None:
        if self._discarding:
            self._discarding += len(chunk)
        elif len(self._buffer) + len(chunk) > self._max:
            self._discarding = len(self._buffer) + len(chunk)
            self._buffer.clear()
        else:
            self._buffer += chunk

    def finish(self) -> list[bytes | Oversized]:
        """End of input: a final unterminated line still counts as a line."""
        if self._discarding:
            size, self._discarding = self._discarding, 0
            return [Oversized(size)]
        if self._buffer:
            line = bytes(self._buffer)
            self._buffer.clear()
            return [line]
        return []


def encode_line(text: str) -> bytes:
    """[ACP-TR-06] one compact JSON text (no raw LF inside) plus exactly one `\\n`.

    Any Python str is accepted: a lone surrogate (a client's `"\\udfff"` escape decodes to one)
    is written as its `\\uXXXX` escape, which decodes to the very same string, so an echoed id
    or method stays unchanged (ACP-TR-15) and the writer never fails on a value a client sent.
    `dumps` already escapes them; this covers a line built any other way.
    """
    if "\n" in text:
        raise ValueError("a framed message must not contain a raw line feed")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # Design: the common path pays nothing for the rare one
        data = escape_surrogates(text).encode("utf-8")
    return data + b"\n"
