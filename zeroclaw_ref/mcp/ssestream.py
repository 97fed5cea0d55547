"""An incremental event-stream parser for Streamable HTTP bodies and GET streams (mcp.md §4.4).

Design: the client's own parser rather than `sseclient-py`, because an event without `data`
must still record its `id` and `retry` (MCP-HTTP-21, MCP-HTTP-24). Sans-IO: `feed(bytes)`
returns the events completed so far. With `event_limit` set (long-lived streams, MCP-SIZE-08)
an event larger than the limit is discarded up to its blank line and reported as `Oversized`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_EOL: Final = re.compile(rb"\r\n|\r|\n")
_BOM: Final = "\ufeff"


@dataclass(frozen=True, slots=True)
class SseEvent:
    """A dispatched event; `data` is None when the event had no `data` line."""

    type: str
    data: str | None


@dataclass(frozen=True, slots=True)
class Oversized:
    """An event discarded for exceeding the per-event limit; `type` as far as it was seen."""

    type: str


class SseParser:
    """[MCP-HTTP-20] WHATWG event-stream rules, fed incrementally."""

    def __init__(self, event_limit: int | None = None) -> None:
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self.events_seen = 0
        self._limit = event_limit
        self._buf = bytearray()
        self._skip_lf = False
        self._first = True
        self._type = ""
        self._data: list[str] = []
        self._event_bytes = 0
        self._discarding = False

    def feed(self, chunk: bytes) -> list[SseEvent | Oversized]:
        """Consume `chunk`; return the events it completed."""
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        self._buf += chunk
        out: list[SseEvent | Oversized] = []
        start = 0
        while (match := _EOL.search(self._buf, start)) is not None:
            if match.group() == b"\r" and match.end() == len(self._buf):
                self._skip_lf = True  # a CR at the end of a chunk may be half of a CRLF
            raw = bytes(self._buf[start : match.start()])
            size = match.end() - start
            start = match.end()
            event = self._line(raw, size)
            if event is not None:
                out.append(event)
        del self._buf[:start]
        if self._limit is not None and len(self._buf) + self._event_bytes > self._limit:
            self._buf.clear()  # an endless line: drop it without buffering (MCP-SIZE-08)
            self._discarding = True
        return out

    def _line(self, raw: bytes, size: int) -> SseEvent | Oversized | None:
        line = raw.decode("utf-8", errors="replace")
        if self._first:
            line, self._first = line.removeprefix(_BOM), False
        if not line:
            return self._dispatch()
        self._event_bytes += size
        if self._limit is not None and self._event_bytes > self._limit:
            self._discarding = True
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self.retry_ms = int(value)
        elif self._discarding:
            if name == "event":
                self._type = value
        elif name == "data":
            self._data.append(value)
        elif name == "event":
            self._type = value
        return None

    def _dispatch(self) -> SseEvent | Oversized | None:
        kind = self._type or "message"
        had_lines = self._event_bytes > 0
        data = "\n".join(self._data) if self._data else None
        discarding = self._discarding
        self._type, self._data, self._event_bytes, self._discarding = "", [], 0, False
        if discarding:
            return Oversized(kind)
        if not had_lines:
            return None
        self.events_seen += 1
        return SseEvent(kind, data)
