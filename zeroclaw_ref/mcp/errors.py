"""The McpError family and every exception text of mcp.md §16 (MCP-API-05, MCP-ERR-01).

Each class carries the server name; `str(err)` is exactly the §16 text. Text builders live
next to the classes so that every site renders placeholders the same way (MCP-TIME-07).
"""

from __future__ import annotations

from typing import Final

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.wire import mcp as wire

# [MCP-ERR-27..32] <cause> values of the outcome-unknown text
CAUSE_NO_SSE_RESPONSE: Final = "MCP server returned no response in SSE stream"
CAUSE_SSE_CLOSED: Final = "SSE stream closed"
# [MCP-ERR-18]
NO_RESPONSE: Final = "MCP server returned no response"


class McpError(Exception):
    """Base of every MCP client failure; `server` names the server ("" when none applies)."""

    def __init__(self, server: str, text: str) -> None:
        super().__init__(text)
        self.server = server
        self.text = text

    def __str__(self) -> str:
        return self.text


class McpConnectError(McpError):
    """The transport could not be created or opened (spawn, TLS setup, refused stream)."""


class McpProtocolError(McpError):
    """The server answered something the client cannot use (bad result, bad version...)."""


class McpRpcError(McpError):
    """A JSON-RPC `error` response (MCP-RPC-08); the server's message is kept unmodified."""

    def __init__(self, server: str, text: str, code: int, message: str, data: JSON) -> None:
        super().__init__(server, text)
        self.code = code
        self.message = message
        self.data = data


class McpToolError(McpError):
    """A result with `isError: true` (MCP-RESULT-01); `result` is the raw result object."""

    def __init__(self, server: str, text: str, result: JSONObject) -> None:
        super().__init__(server, text)
        self.result = result


class McpTimeoutError(McpError):
    """A deadline expired (MCP-TIME-05, MCP-TIME-06, MCP-INIT-05)."""


class McpOutcomeUnknownError(McpError):
    """A request may have been written and no response will come (MCP-REC-02)."""

    def __init__(self, server: str, text: str, stderr_tail: str = "") -> None:
        super().__init__(server, text)
        # [MCP-STDIO-22] the full retained stderr tail of a dead stdio child
        self.stderr_tail = stderr_tail


class McpCancelledError(McpError):
    """The caller's cancel token fired (MCP-CANCEL-05, MCP-CANCEL-06)."""


class McpUnavailableError(McpError):
    """The connection is POISONED (MCP-REC-07)."""


class McpSizeLimitError(McpError):
    """A response exceeded `max_response_bytes` (§6.2)."""


class McpClosedError(McpError):
    """The connection or registry is closed (MCP-LIFE-08)."""


def seconds(t: float) -> str:
    """[MCP-TIME-07] `format(t, "g")`: 180, 600, 0.5."""
    return format(t, "g")


def op_text(method: str, tool: str | None = None) -> str:
    """[MCP-TIME-07] ``tool call `<tool>` `` for tools/call, `` `<method>` `` otherwise."""
    if method == wire.METHOD_TOOLS_CALL and tool is not None:
        return f"tool call `{tool}`"
    return f"`{method}`"


def unreachable(server: str, exc_name: str, url: str) -> McpConnectError:
    """MCP-ERR-32's cause for a connect that reached nothing, naming the endpoint without its
    credentials (userinfo, query), so an operator sees which URL is down."""
    from zeroclaw_ref.core.scrub import url_without_credentials

    return McpConnectError(
        server, f"connection error: {exc_name} (cannot reach {url_without_credentials(url)})"
    )


def closed(server: str) -> McpClosedError:
    """[MCP-ERR-08]"""
    return McpClosedError(server, f"MCP server `{server}` is closed")


def broken(server: str) -> McpConnectError:
    """[MCP-HTTP-40] the session broke before the request was written: a connect error, so the
    request goes through recovery like any other that found the connection down."""
    return McpConnectError(server, f"MCP server `{server}` is broken")


def timed_out_before(server: str, t: float, op: str) -> McpTimeoutError:
    """[MCP-ERR-21]"""
    return McpTimeoutError(
        server, f"MCP server `{server}` timed out after {seconds(t)}s before writing {op}"
    )


def timed_out_during(server: str, t: float, op: str) -> McpTimeoutError:
    """[MCP-ERR-22]"""
    return McpTimeoutError(
        server,
        f"MCP server `{server}` timed out after {seconds(t)}s during {op}; "
        "outcome unknown and request was not replayed",
    )


def outcome_unknown(server: str, op: str, cause: str, tail: str = "") -> McpOutcomeUnknownError:
    """[MCP-ERR-23]"""
    text = (
        f"MCP server `{server}` failed during {op}; outcome unknown and request was not "
        f"replayed: {cause}"
    )
    return McpOutcomeUnknownError(server, text, tail)


def unavailable(server: str) -> McpUnavailableError:
    """[MCP-ERR-24]"""
    return McpUnavailableError(
        server,
        f"MCP server `{server}` is unavailable: a prior request's outcome became unknown and "
        "recovery failed; not writing on an unrecovered session",
    )


def cancelled_before(server: str, op: str) -> McpCancelledError:
    """[MCP-ERR-25]"""
    return McpCancelledError(server, f"MCP server `{server}` call cancelled before writing {op}")


def cancelled_during(server: str, op: str) -> McpCancelledError:
    """[MCP-ERR-26]"""
    return McpCancelledError(
        server,
        f"MCP server `{server}` call cancelled during {op}; outcome unknown and request was "
        "not replayed",
    )


def rpc_error(server: str, method: str, tool: str | None, error: JSONObject) -> McpRpcError:
    """[MCP-RPC-08] [MCP-ERR-15] [MCP-ERR-16] the message is passed through unmodified."""
    code_value = error.get("code")
    code = code_value if isinstance(code_value, int) and not isinstance(code_value, bool) else 0
    message_value = error.get("message")
    message = message_value if isinstance(message_value, str) else ""
    if method == wire.METHOD_TOOLS_CALL and tool is not None:
        text = f"MCP tool `{tool}` error {code}: {message}"
    else:
        text = f"MCP `{method}` error {code}: {message}"
    return McpRpcError(server, text, code, message, error.get("data"))


def http_status(server: str, status: int) -> McpProtocolError:
    """[MCP-ERR-20]"""
    return McpProtocolError(server, f"MCP server returned HTTP {status}")
