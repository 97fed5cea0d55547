"""List-change notifications in the 2026-07-28 era: one `subscriptions/listen` request per
session (mcp.md §14.2, MCP-MOD-13).

A modern server sends `notifications/tools/list_changed` only on a listen stream the client
opened, so a modern session opens one for every list the server says can change; its
notifications reach the same handler as legacy ones (MCP-DISC-15). On stdio the request is one
more line whose answer only comes when the subscription ends; on HTTP it is a POST whose event
stream stays open (http.py). Closing the connection ends it: a cancellation on stdio, the
stream closed on HTTP.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp import errors, modern
from zeroclaw_ref.mcp.transport import PreWriteError
from zeroclaw_ref.wire import mcp as wire

if TYPE_CHECKING:
    from zeroclaw_ref.mcp.connection import Connection

log = logging.getLogger(__name__)

# server capability -> the listen filter member that asks for its list-change notifications
_FILTERS = (
    ("tools", "toolsListChanged"),
    ("resources", "resourcesListChanged"),
    ("prompts", "promptsListChanged"),
)


def wanted(capabilities: JSONObject) -> JSONObject:
    """The filter for every list the server declares `listChanged` for (empty: no listen)."""
    out: JSONObject = {}
    for capability, member in _FILTERS:
        declared: JSON = capabilities.get(capability)
        if isinstance(declared, dict) and declared.get("listChanged") is True:
            out[member] = True
    return out


def request(conn: Connection, request_id: int) -> JSONObject | None:
    """The listen request for the connection's current session, or None when not wanted."""
    notifications = wanted(conn.server_capabilities)
    if not notifications:
        return None
    params = modern.with_envelope({"notifications": notifications}, conn.envelope())
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": wire.METHOD_SUBSCRIPTIONS_LISTEN,
        "params": params,
    }


def start(conn: Connection, deadline: float) -> int | None:
    """[MCP-MOD-13] open the listen stream; its id, or None when none is open."""
    if not wanted(conn.server_capabilities):
        return None
    request_id = conn.allocate_id()
    message = request(conn, request_id)
    assert message is not None
    try:
        opened = conn.transport.open_listen(message, deadline)
    except PreWriteError as exc:
        log.debug("MCP server `%s`: listen not sent: %s", conn.name, exc)
        return None
    except (errors.McpError, OSError, ValueError) as exc:
        log.debug("MCP server `%s`: listen failed: %s", conn.name, exc)
        return None
    if not opened:
        log.debug("MCP server `%s` refused %s", conn.name, wire.METHOD_SUBSCRIPTIONS_LISTEN)
        return None
    return request_id


def stop(conn: Connection, request_id: int) -> None:
    """End the stream: stdio says so with a cancellation; HTTP closes its response."""
    if not conn.transport.over_http:
        note: JSONObject = {
            "jsonrpc": "2.0",
            "method": wire.NOTIFY_CANCELLED,
            "params": {"requestId": request_id, "reason": "client closing"},
        }
        try:
            conn.transport.send_message(note)
        except (errors.McpError, OSError, PreWriteError) as exc:
            log.debug("MCP server `%s`: listen cancellation not sent: %s", conn.name, exc)
    conn.transport.close_listen()
