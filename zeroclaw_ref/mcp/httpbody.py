"""Reading HTTP response bodies under the limits of mcp.md §6.2, independent of `requests`.

`Body` is the narrow view of a streamed response that the readers need; `mcp/http.py` adapts
`requests` responses to it. Readers raise `McpError`s with the exact §16 texts and treat
`OSError`/`ValueError` from a shut-down stream as its end (MCP-HTTP-47).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Final

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, loads
from zeroclaw_ref.mcp import errors
from zeroclaw_ref.mcp.scrubber import scrub

DEFAULT_LIMIT: Final = 16_078_168  # [MCP-SIZE-01]
DIAGNOSTIC_BYTES: Final = 4096  # [MCP-SIZE-10]
CHUNK: Final = 65_536
_SSE_STARTS: Final = ("data:", "event:", "id:", "retry:", ":")
# [MCP-HTTP-38] words that, next to "session", mark a 400 as a stale session
_STALE_WORDS: Final = ("not found", "unknown", "no valid", "invalid", "expired", "terminated")


def response_limit(configured: int | None) -> int:
    """[MCP-SIZE-01] `max_response_bytes` when set above zero, else the default."""
    return configured if configured is not None and configured > 0 else DEFAULT_LIMIT


class Body(ABC):
    """A streamed HTTP response as the readers see it."""

    status: int
    content_type: str
    content_length: int | None

    @abstractmethod
    def chunks(self) -> Iterator[bytes]:
        """The raw body bytes as they arrive (no decoding)."""

    @abstractmethod
    def header(self, name: str) -> str | None:
        """A response header, matched case-insensitively."""

    @abstractmethod
    def shutdown(self) -> None:
        """[MCP-HTTP-46] abort a read running on another thread: socket shutdown only."""

    @abstractmethod
    def close(self) -> None:
        """Release the response; only the reading thread calls this."""

    def set_read_timeout(self, seconds: float | None) -> None:  # noqa: B027 - optional hook
        """Bound every further read (None: no bound); a body without a socket ignores it."""


def is_sse(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() == "text/event-stream"


def is_json(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def looks_like_sse(head: bytes) -> bool:
    """[MCP-HTTP-16] sniff a body whose content type says neither JSON nor SSE."""
    text = head.decode("utf-8", errors="replace").removeprefix("\ufeff")
    return text.startswith(_SSE_STARTS) or "\ndata:" in text or "\nevent:" in text


def read_capped(server: str, body: Body, limit: int) -> bytes:
    """[MCP-SIZE-03] [MCP-SIZE-04] the whole body, failing as soon as it exceeds `limit`."""
    if body.content_length is not None and body.content_length > limit:
        raise errors.McpSizeLimitError(
            server,
            f"MCP response body Content-Length {body.content_length} exceeds the {limit}-byte "
            "limit",
        )
    data = bytearray()
    for chunk in body.chunks():
        data += chunk
        if len(data) > limit:
            raise errors.McpSizeLimitError(
                server, f"MCP response body exceeds the {limit}-byte limit"
            )
    return bytes(data)


def parse_json_body(server: str, data: bytes) -> JSON:
    """[MCP-SIZE-05] [MCP-HTTP-19] decode and parse a JSON body."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.McpProtocolError(server, "MCP response body was not valid UTF-8") from exc
    try:
        return loads(text)
    except ValueError as exc:
        raise errors.McpProtocolError(server, f"invalid JSON-RPC response: {scrub(text)}") from exc


def stale_400(body: Body) -> bool:
    """[MCP-HTTP-38] [MCP-SIZE-10] a 400 that names an unknown or expired session."""
    head = bytearray()
    try:
        for chunk in body.chunks():
            head += chunk
            if len(head) >= DIAGNOSTIC_BYTES:
                break
    except (OSError, ValueError):
        pass
    text = head[:DIAGNOSTIC_BYTES].decode("utf-8", errors="replace").lower()
    return "session" in text and any(word in text for word in _STALE_WORDS)


def sse_limit_checks(server: str, body: Body, limit: int) -> Iterator[bytes]:
    """[MCP-SIZE-06] the chunks of a POST or resumption stream under a running byte total."""
    if body.content_length is not None and body.content_length > limit:
        raise errors.McpSizeLimitError(
            server,
            f"MCP SSE response Content-Length {body.content_length} exceeds the {limit}-byte limit",
        )
    total = 0
    for chunk in body.chunks():
        total += len(chunk)
        if total > limit:
            raise errors.McpSizeLimitError(
                server, f"MCP SSE response body exceeds the {limit}-byte limit"
            )
        yield chunk


def jsonrpc_refusal(body: Body, request_id: int) -> JSONObject | None:
    """[MCP-MOD-02] [MCP-MOD-06] a modern server refuses a request with HTTP 400 and a JSON-RPC
    error body: that error, as the response to `request_id`, or None when the body is not one
    (a legacy server's plain 4xx). At most DIAGNOSTIC_BYTES are read (MCP-SIZE-10)."""
    if not is_json(body.content_type):
        return None
    head = bytearray()
    try:
        for chunk in body.chunks():
            head += chunk
            if len(head) > DIAGNOSTIC_BYTES:
                return None
        value = loads(bytes(head))
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or "method" in value or not isinstance(value.get("error"), dict):
        return None
    rid = value.get("id")
    if rid is not None and (type(rid) is not int or rid != request_id):
        return None
    return {"jsonrpc": "2.0", "id": request_id, "error": value["error"]}
