"""McpRegistry: the connections of one agent or session, in grant order (mcp.md §0.5, §1.1,
§8.3, §8.4).

Goals: every public method is thread-safe (MCP-API-06) and never holds the registry lock across
I/O; a server that fails to connect is logged and skipped (MCP-LIFE-04); children are reaped
even when the registry is dropped without `close()` (MCP-LIFE-10, via `weakref.finalize`).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.core.scrub import clean_output
from zeroclaw_ref.mcp import errors
from zeroclaw_ref.mcp.connection import Connection
from zeroclaw_ref.mcp.discovery import McpTool, list_all
from zeroclaw_ref.mcp.handlers import ClientHandlers
from zeroclaw_ref.mcp.lifecycle import State
from zeroclaw_ref.mcp.options import McpOptions
from zeroclaw_ref.mcp.scrubber import scrub
from zeroclaw_ref.mcp.transport import Router, Transport
from zeroclaw_ref.wire import mcp as wire

log = logging.getLogger(__name__)

SEPARATOR = "__"  # [MCP-NAME-01]


def transport_factory(
    config: McpServerConfig, options: McpOptions
) -> Callable[[Router], Transport]:
    """The transport of `config.transport`; HTTP modules are imported only when used."""
    if config.transport == "http":
        from zeroclaw_ref.mcp.http import HttpTransport

        return lambda router: HttpTransport(config, options, router)
    if config.transport == "sse":
        from zeroclaw_ref.mcp.sse import SseTransport

        return lambda router: SseTransport(config, options, router)
    from zeroclaw_ref.mcp.stdio import StdioTransport

    return lambda router: StdioTransport(config, options, router)


def _connect(
    config: McpServerConfig, handlers: ClientHandlers, shared: McpOptions
) -> Connection | str:
    """The connected server, or the scrubbed MCP-ERR-02 text of its failure."""
    options = shared.for_server(config.startup_timeout_secs)
    try:
        connection = Connection(config, transport_factory(config, options), handlers, options)
        connection.connect()
    except errors.McpError as exc:
        # [MCP-LIFE-04] [MCP-ERR-02]
        log.warning("Failed to connect to MCP server `%s`: %s", config.name, exc)
        return clean_output(scrub(f"Failed to connect to MCP server `{config.name}`: {exc}"))
    return connection


def _close_all(connections: list[Connection]) -> None:
    for connection in connections:
        connection.close()


def _split(value: str) -> tuple[str, str]:
    """[MCP-NAME-04] split at the first `__`."""
    server, sep, rest = value.partition(SEPARATOR)
    if not sep:
        raise errors.McpError("", f"missing server prefix in `{value}`")
    return server, rest


class McpRegistry:
    """[MCP-API-03] the MCP surface of one agent or session."""

    def __init__(
        self,
        connections: list[Connection],
        options: McpOptions,
        workspace: Path | None,
        failures: Mapping[str, str] | None = None,
    ) -> None:
        self._connections = list(connections)
        # server name -> why it did not connect (scrubbed), told to the model on a call
        self._failures = dict(failures or {})
        self._by_name = {c.name: c for c in self._connections}
        self.options = options
        self.workspace = workspace
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._closed = False
        self._index: dict[str, McpTool] = {}
        self._order: list[McpTool] = []
        self._rebuild()
        # [MCP-LIFE-10] reap children even when the registry is dropped without close()
        self._finalizer = weakref.finalize(self, _close_all, list(self._connections))

    @classmethod
    def connect_all(
        cls,
        servers: Sequence[McpServerConfig],
        *,
        handlers: ClientHandlers | None = None,
        options: McpOptions | None = None,
        workspace: Path | None = None,
    ) -> McpRegistry:
        """[MCP-API-02] [MCP-LIFE-03] connect every server; handshakes overlap, order is kept."""
        opts = options or McpOptions()
        hooks = handlers or ClientHandlers()
        results: list[Connection | str] = [""] * len(servers)

        def run(index: int, config: McpServerConfig) -> None:
            results[index] = _connect(config, hooks, opts)

        threads = [
            threading.Thread(target=run, args=(i, c), name=f"mcp-connect-{c.name}", daemon=True)
            for i, c in enumerate(servers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        connected = [c for c in results if isinstance(c, Connection)]
        failures = {s.name: r for s, r in zip(servers, results, strict=True) if isinstance(r, str)}
        return cls(connected, opts, workspace, failures)

    # --- context manager and closing ------------------------------------------------------

    def __enter__(self) -> McpRegistry:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """[MCP-LIFE-09] idempotent; closes every connection."""
        with self._lock:
            self._closed = True
        self._finalizer()

    # --- introspection --------------------------------------------------------------------

    def servers(self) -> tuple[str, ...]:
        """The connected servers, in grant order."""
        return tuple(c.name for c in self._connections)

    def connect_failure(self, server: str) -> str | None:
        """Why `server` is not connected (the scrubbed MCP-ERR-02 text), or None when it is
        connected or was never configured: the engine tells the model this instead of an
        unknown tool when one of its tools is called."""
        return self._failures.get(server)

    def connection(self, server: str) -> Connection:
        """The connection of `server` (diagnostics: state, capabilities, protocol version).

        Raises:
            McpError: `unknown MCP server` (MCP-ERR-52).
        """
        connection = self._by_name.get(server)
        if connection is None:
            raise errors.McpError(server, f"unknown MCP server `{server}`")
        if self._closed:
            raise errors.closed(server)
        return connection

    def supports(self, server: str, capability: str) -> bool:
        """True when `server` is connected and declared `capability` (MCP-INIT-08)."""
        connection = self._by_name.get(server)
        return connection is not None and connection.supports(capability)

    def tools(self) -> list[McpTool]:
        """[MCP-NAME-08] servers in grant order, each server's tools in listing order."""
        with self._lock:
            return list(self._order)

    def _rebuild(self) -> None:
        index: dict[str, McpTool] = {}
        for connection in self._connections:
            for tool in connection.tools:
                if tool.prefixed_name in index:
                    log.warning(
                        "MCP tool name `%s` is ambiguous; keeping the first", tool.prefixed_name
                    )
                    continue
                index[tool.prefixed_name] = tool
        with self._lock:
            self._index = index
            self._order = list(index.values())

    # --- calls ----------------------------------------------------------------------------

    def call_tool(
        self, prefixed_name: str, arguments: JSON, *, cancel: CancelToken | None = None
    ) -> JSONObject:
        """[MCP-NAME-03] send `tools/call` with the unprefixed name; return the result object.

        Raises:
            McpToolError: the result has `isError: true` (MCP-RESULT-01).
            McpError: every other failure, with its §16 text.
        """
        with self._lock:
            tool = self._index.get(prefixed_name)
        if tool is None:
            raise errors.McpError("", f"unknown MCP tool `{prefixed_name}`")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise errors.McpProtocolError(tool.server, "MCP tool arguments must be a JSON object")
        forwarded = {k: v for k, v in arguments.items() if k != "approved"}  # [MCP-RESULT-05]
        connection = self.connection(tool.server)
        timeout = self.options.tool_timeout(connection.config.tool_timeout_secs)
        params: JSONObject = {"name": tool.name, "arguments": forwarded}
        result = connection.request(
            wire.METHOD_TOOLS_CALL, params, timeout, tool=tool.name, cancel=cancel
        )
        if not isinstance(result, dict):
            raise errors.McpProtocolError(tool.server, "failed to parse tools/call result")
        if result.get("isError") is True:
            raise _tool_error(tool.server, tool.name, result)
        return result

    def _capable(self, server: str, capability: str) -> Connection:
        connection = self.connection(server)
        if not connection.supports(capability):
            raise errors.McpError(server, f"MCP server `{server}` does not support {capability}")
        return connection

    def _list(self, capability: str, method: str, server: str | None, cursor: str | None) -> JSON:
        """One page of one server (raw result), or every page of every capable server."""
        timeout = self.options.list_timeout_s
        if server is not None:
            connection = self._capable(server, capability)
            params: JSONObject = {} if cursor is None else {"cursor": cursor}
            return connection.request(method, params, timeout)
        if cursor is not None:
            raise errors.McpError(
                "",
                "`cursor` requires a `server` (pagination is per-server); omit `cursor` for an "
                "all-server list",
            )
        collected: list[JSON] = []
        for connection in self._connections:
            if not connection.supports(capability):
                continue
            try:
                items = list_all(
                    connection.name,
                    connection.requester(timeout),
                    method,
                    capability,
                    self.options.max_list_pages,
                )
            except errors.McpError as exc:
                log.debug("skipping %s of `%s`: %s", method, connection.name, exc)
                continue
            collected.extend(_prefixed(connection.name, item, capability) for item in items)
        return {capability: collected}

    def list_resources(self, server: str | None = None, cursor: str | None = None) -> JSON:
        """With `server`: that server's raw `resources/list` result for one page. Without:
        `{"resources": [...]}` from every page of every capable server, each `uri` prefixed.

        Raises:
            McpError: unknown server, unsupported capability, or the request failed.
        """
        return self._list("resources", wire.METHOD_RESOURCES_LIST, server, cursor)

    def list_prompts(self, server: str | None = None, cursor: str | None = None) -> JSON:
        """As `list_resources`, for `prompts/list` (each `name` prefixed in the all-server form)."""
        return self._list("prompts", wire.METHOD_PROMPTS_LIST, server, cursor)

    def read_resource(self, prefixed_uri: str) -> JSON:
        """[MCP-NAME-04] the raw `resources/read` result for `<server>__<uri>`."""
        server, uri = _split(prefixed_uri)
        connection = self._capable(server, "resources")
        timeout = self.options.tool_timeout(connection.config.tool_timeout_secs)  # [MCP-TIME-02]
        return connection.request(wire.METHOD_RESOURCES_READ, {"uri": uri}, timeout)

    def get_prompt(self, prefixed_name: str, arguments: JSONObject | None = None) -> JSON:
        """[MCP-NAME-04] the raw `prompts/get` result for `<server>__<name>`."""
        server, name = _split(prefixed_name)
        connection = self._capable(server, "prompts")
        timeout = self.options.tool_timeout(connection.config.tool_timeout_secs)
        params: JSONObject = {"name": name, "arguments": arguments or {}}
        return connection.request(wire.METHOD_PROMPTS_GET, params, timeout)

    # --- refresh --------------------------------------------------------------------------

    def refresh_if_stale(self) -> bool:
        """[MCP-DISC-17] re-list every stale server; True when any tool list was replaced."""
        changed = False
        with self._refresh_lock:
            for connection in self._connections:
                if not connection.tools_stale:
                    continue
                if connection.state not in (State.READY, State.BROKEN):
                    continue
                if not connection.supports("tools"):
                    connection.tools_stale = False
                    continue
                try:
                    connection.tools = connection.list_tools()
                    changed = True
                except errors.McpError as exc:
                    connection.tools_stale = False
                    log.warning("MCP server `%s`: tool refresh failed: %s", connection.name, exc)
            if changed:
                self._rebuild()
        return changed


def _prefixed(server: str, item: JSON, capability: str) -> JSON:
    if not isinstance(item, dict):
        return item
    key = "uri" if capability == "resources" else "name"
    value = item.get(key)
    if not isinstance(value, str):
        return item
    return {k: (f"{server}{SEPARATOR}{value}" if k == key else v) for k, v in item.items()}


def _tool_error(server: str, tool: str, result: JSONObject) -> errors.McpToolError:
    """[MCP-RESULT-01] the string `text` fields of `content`, joined and scrubbed."""
    content = result.get("content")
    texts = [
        item["text"]
        for item in (content if isinstance(content, list) else [])
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    ]
    detail = "\n".join(t for t in texts if isinstance(t, str))
    detail = scrub(detail) if detail else "(no error detail returned by server)"
    text = f"MCP `{tool}` (server `{server}`) returned isError: {detail}"
    log.warning("%s", text)
    return errors.McpToolError(server, text, result)
