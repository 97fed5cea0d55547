"""Listing with full pagination, and the tool records built from `tools/list` (mcp.md §8).

Design: listings go through a tiny `Requester` port rather than the connection class, so that
this module stays free of the lifecycle and is testable with a scripted requester.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp import errors
from zeroclaw_ref.wire import mcp as wire

log = logging.getLogger(__name__)

DEFAULT_DESCRIPTION = "MCP tool"


@dataclass(frozen=True, slots=True)
class McpTool:
    """[MCP-API-03] one discovered tool; `raw` is the tool object exactly as received."""

    prefixed_name: str
    server: str
    name: str
    description: str
    input_schema: JSONObject
    raw: JSONObject


@dataclass(frozen=True, slots=True)
class Page:
    """One listing page: the items and the cursor of the next page (None at the end)."""

    items: list[JSON]
    next_cursor: str | None


# (method, params) -> result; raises McpError. Bound by the caller to one connection + timeout.
Requester = Callable[[str, JSONObject], JSON]


def _next_cursor(server: str, method: str, result: JSONObject) -> str | None:
    """[MCP-DISC-10] a non-empty string continues; absent/null/empty end; other types warn."""
    cursor = result.get("nextCursor")
    if isinstance(cursor, str):
        return cursor or None
    if cursor is not None:
        log.warning("MCP server `%s` returned a non-string nextCursor in `%s`", server, method)
    return None


def fetch_page(
    server: str, requester: Requester, method: str, key: str, cursor: str | None
) -> Page:
    """[MCP-DISC-02] one page: params `{}` first, then `{"cursor": ...}`.

    Raises:
        McpError: the request failed or the result is unusable (MCP-DISC-03, MCP-RES-13).
    """
    params: JSONObject = {} if cursor is None else {"cursor": cursor}
    result = requester(method, params)
    if result is None and method == wire.METHOD_TOOLS_LIST:
        raise errors.McpProtocolError(server, f"tools/list returned no result from `{server}`")
    items = result.get(key) if isinstance(result, dict) else None
    if not isinstance(result, dict) or not isinstance(items, list):
        if method == wire.METHOD_TOOLS_LIST:
            raise errors.McpProtocolError(server, f"failed to parse tools/list from `{server}`")
        raise errors.McpProtocolError(server, f"failed to parse {method} result")
    return Page(items, _next_cursor(server, method, result))


def list_all(
    server: str, requester: Requester, method: str, key: str, max_pages: int
) -> list[JSON]:
    """[MCP-DISC-10..14] follow cursors, guarding against repeats and endless listings.

    Raises:
        McpError: any page failed; no partial result is returned (MCP-DISC-09).
    """
    items: list[JSON] = []
    sent: set[str] = set()
    cursor: str | None = None
    pages = 0
    while True:
        if pages >= max_pages:
            log.warning(
                "MCP server `%s` returned more than %d pages in `%s`; keeping %d items",
                server, max_pages, method, len(items),
            )  # fmt: skip
            return items
        page = fetch_page(server, requester, method, key, cursor)
        pages += 1
        items.extend(page.items)
        if page.next_cursor is None:
            return items
        if page.next_cursor in sent:
            log.warning(
                "MCP server `%s` repeated a pagination cursor in `%s`; keeping %d items from "
                "%d pages",
                server, method, len(items), pages,
            )  # fmt: skip
            return items
        if cursor is not None:
            sent.add(cursor)
        sent.add(page.next_cursor)
        cursor = page.next_cursor


def parse_tools(server: str, entries: list[JSON]) -> list[McpTool]:
    """[MCP-DISC-04..08] [MCP-NAME-01] records in listing order; a repeated name wins late."""
    by_name: dict[str, McpTool] = {}
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(name, str) or not name:
            log.warning("MCP server `%s`: skipping a tools/list entry without a name", server)
            continue
        schema = entry.get("inputSchema")
        if not isinstance(schema, dict):
            log.warning(
                "MCP server `%s`: skipping tool `%s` without an inputSchema object", server, name
            )
            continue
        description = entry.get("description")
        if name in by_name:
            log.warning("MCP server `%s` listed tool `%s` twice; keeping the later", server, name)
            del by_name[name]
        by_name[name] = McpTool(
            prefixed_name=f"{server}__{name}",
            server=server,
            name=name,
            description=description if isinstance(description, str) else DEFAULT_DESCRIPTION,
            input_schema=schema,
            raw=entry,
        )
    return list(by_name.values())
