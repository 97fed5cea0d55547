"""A 2026-07-28 MCP server on the official SDK (PyPI `mcp` 2.3.0), the modern test peer of
issue 16 (mcp.md §14): the stateless era seen from a real implementation, not our fakes.

Two eras, two transports:

    python tests/peers/python_mcp_modern_peer.py --journal J                 # stdio, dual-era
    python tests/peers/python_mcp_modern_peer.py --era modern --journal J    # stdio, modern only
    python tests/peers/python_mcp_modern_peer.py --transport http --port N --journal J [--era ..]

`dual` is the SDK as it ships: the first request decides the era (`initialize` opens a
handshake connection, an enveloped request a modern one). `modern` refuses the handshake the
way a server that never learnt it does: `initialize` on stdio, and over HTTP every POST whose
`MCP-Protocol-Version` is not 2026-07-28, get `-32022` with `data.supported`; HTTP GET and
DELETE are 405. The HTTP modes bind 127.0.0.1 only.

Tools:

- `echo {message}`: text `Echo: <message>`.
- `ask_name`: modern: an `input_required` result asking (form elicitation) for `name`, with
  the `requestState` `STATE` (quotes, spaces and non-ASCII, so only a byte-exact echo matches);
  the retry answers `Hello, <name>!` (or `No name (<action>)`), and an isError result when the
  state came back changed or without answers. Legacy: a server→client `elicitation/create`.
- `ask_twice`: modern: two rounds (a name, then a colour), states `round-1` then `round-2`.
- `grow`: adds a tool `extra_<n>` and announces the change: on the listen streams
  (`subscriptions/listen`, modern) and as `notifications/tools/list_changed` (legacy).
- `region {region, count}`: both annotated `x-mcp-header` (`Region`, `Count`).

`tools/list` results carry `ttlMs` = `--ttl-ms` (default one minute) and `cacheScope`
`private`. `--journal FILE` appends one JSON line per request this process sees: `method`, `id`,
the envelope `meta` (or null), `era`, and the MRTR params; over HTTP also one line per HTTP
request with its method and the MCP headers.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError

MODERN = "2026-07-28"
UNSUPPORTED_VERSION = -32022
INVALID_PARAMS = -32602
META_VERSION = "io.modelcontextprotocol/protocolVersion"
STATE = 'peer-state: "ünïcode" {1}  two  spaces'
ROUND_STATES = ("round-1", "round-2")
DEFAULT_TTL_MS = 60_000

Ctx = ServerRequestContext[Any, Any]

BUS = InMemorySubscriptionBus()
EXTRA: list[str] = []  # names of the tools `grow` added
_journal_lock = threading.Lock()
_journal_path: list[str] = []
_ttl_ms: list[int] = [DEFAULT_TTL_MS]


def journal(entry: dict[str, Any]) -> None:
    if not _journal_path:
        return
    with _journal_lock, Path(_journal_path[0]).open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _text(text: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def _schema(**props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def _modern(ctx: Ctx) -> bool:
    return ctx.protocol_version == MODERN


def _elicit(message: str, field: str) -> types.ElicitRequest:
    schema = _schema(**{field: {"type": "string", "title": field}})
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def _answer(responses: dict[str, Any] | None, key: str, field: str) -> tuple[str, str | None]:
    """(action, value) of the elicitation answer under `key`."""
    answer = (responses or {}).get(key)
    if not isinstance(answer, types.ElicitResult):
        return ("missing", None)
    value = (answer.content or {}).get(field)
    return (answer.action, value if isinstance(value, str) else None)


# --- tools ------------------------------------------------------------------------------


async def _echo(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
    return _text(f"Echo: {(params.arguments or {}).get('message', '')}")


async def _ask_name(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
    if not _modern(ctx):
        schema = _schema(name={"type": "string", "title": "Your name"})
        answer = await ctx.session.elicit_form(
            "What is your name?", schema, related_request_id=ctx.request_id
        )
        name = (answer.content or {}).get("name") if answer.action == "accept" else None
        return _text(f"Hello, {name}!" if name else f"No name ({answer.action})")
    if params.input_responses is None:
        return types.InputRequiredResult(
            input_requests={"name": _elicit("What is your name?", "name")}, request_state=STATE
        )
    if params.request_state != STATE:
        return _text(f"requestState changed: {params.request_state!r}", error=True)
    action, name = _answer(params.input_responses, "name", "name")
    return _text(f"Hello, {name}!" if action == "accept" and name else f"No name ({action})")


async def _ask_twice(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
    if not _modern(ctx):
        return _text("ask_twice needs the 2026-07-28 era", error=True)
    if params.input_responses is None:
        request = _elicit("Name?", "name")
        return types.InputRequiredResult(
            input_requests={"name": request}, request_state=ROUND_STATES[0]
        )
    if params.request_state == ROUND_STATES[0]:
        _, name = _answer(params.input_responses, "name", "name")
        request = _elicit("Colour?", "colour")
        return types.InputRequiredResult(
            input_requests={"colour": request}, request_state=f"{ROUND_STATES[1]}:{name}"
        )
    state = params.request_state or ""
    if not state.startswith(ROUND_STATES[1] + ":"):
        return _text(f"unexpected requestState {state!r}", error=True)
    _, colour = _answer(params.input_responses, "colour", "colour")
    return _text(f"{state.split(':', 1)[1]} likes {colour}")


async def _grow(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
    name = f"extra_{len(EXTRA)}"
    EXTRA.append(name)
    await BUS.publish(ToolsListChanged())  # the listen streams (modern)
    if not _modern(ctx):
        await ctx.session.send_tool_list_changed()
    return _text(f"added {name}")


async def _region(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
    args = params.arguments or {}
    return _text(f"region={args.get('region')} count={args.get('count')}")


async def _extra(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
    return _text(f"{params.name} ran")


Handler = Callable[[Ctx, types.CallToolRequestParams], Awaitable[Any]]
TOOLS: list[tuple[types.Tool, Handler]] = [
    (
        types.Tool(
            name="echo",
            description="Echo a message",
            input_schema={**_schema(message={"type": "string"}), "required": ["message"]},
        ),
        _echo,
    ),
    (types.Tool(name="ask_name", description="Ask a name", input_schema=_schema()), _ask_name),
    (types.Tool(name="ask_twice", description="Two rounds", input_schema=_schema()), _ask_twice),
    (types.Tool(name="grow", description="Add a tool", input_schema=_schema()), _grow),
    (
        types.Tool(
            name="region",
            description="Header-annotated parameters",
            input_schema=_schema(
                region={"type": "string", "x-mcp-header": "Region"},
                count={"type": "integer", "x-mcp-header": "Count"},
            ),
        ),
        _region,
    ),
]
HANDLERS: dict[str, Handler] = {tool.name: handler for tool, handler in TOOLS}


async def list_tools(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    extra = [
        types.Tool(name=name, description="Added by grow", input_schema=_schema()) for name in EXTRA
    ]
    return types.ListToolsResult(
        tools=[tool for tool, _ in TOOLS] + extra, ttl_ms=_ttl_ms[0], cache_scope="private"
    )


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
    handler = HANDLERS.get(params.name) or (_extra if params.name in EXTRA else None)
    if handler is None:
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
    return await handler(ctx, params)


def _observe(era_setting: str) -> Callable[[Ctx, Callable[[Ctx], Awaitable[Any]]], Any]:
    async def observe(ctx: Ctx, call_next: Callable[[Ctx], Awaitable[Any]]) -> Any:
        """Middleware: journal every request; in modern-only mode refuse the handshake."""
        raw = dict(ctx.params or {})
        meta = raw.get("_meta")
        enveloped = isinstance(meta, dict) and META_VERSION in meta
        journal(
            {
                "method": ctx.method,
                "id": ctx.request_id,
                "era": "modern" if enveloped else "legacy",
                "meta": meta if enveloped else None,
                "inputResponses": raw.get("inputResponses"),
                "requestState": raw.get("requestState"),
                "name": raw.get("name"),
            }
        )
        if era_setting == "modern" and ctx.method == "initialize":
            requested = raw.get("protocolVersion")
            raise MCPError(
                UNSUPPORTED_VERSION,
                "Unsupported protocol version: this server speaks only 2026-07-28",
                {"supported": [MODERN], "requested": requested},
            )
        return await call_next(ctx)

    return observe


def build_server(era_setting: str) -> Server[Any]:
    server: Server[Any] = Server(
        "python-mcp-modern-peer",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(BUS),
    )
    server.middleware.append(_observe(era_setting))
    return server


# --- transports -------------------------------------------------------------------------


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.lowlevel.server import NotificationOptions
    from mcp.server.stdio import stdio_server

    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


MCP_HEADERS = ("mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id")


def _journal_http(app: Any, era_setting: str) -> Any:
    """ASGI wrapper: journal each HTTP request's MCP headers; in modern-only mode answer every
    non-modern POST with -32022 and refuse GET and DELETE."""

    async def wrapper(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        shown = {k: v for k, v in headers.items() if k in MCP_HEADERS or k.startswith("mcp-param-")}
        journal({"http": scope["method"], "headers": shown})
        version = headers.get("mcp-protocol-version")
        if era_setting != "modern" or (scope["method"] == "POST" and version == MODERN):
            await app(scope, receive, send)
            return
        if scope["method"] != "POST":
            await _respond(send, 405, b"")
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        rid = request.get("id") if isinstance(request, dict) else None
        error = {
            "code": UNSUPPORTED_VERSION,
            "message": "Unsupported protocol version: this server speaks only 2026-07-28",
            "data": {"supported": [MODERN], "requested": version},
        }
        payload = {"jsonrpc": "2.0", "id": rid, "error": error}
        await _respond(send, 400, json.dumps(payload).encode("utf-8"))

    return wrapper


async def _respond(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json")] if body else []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve_http(server: Server[Any], port: int, era_setting: str) -> None:
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(_journal_http(app, era_setting), host="127.0.0.1", port=port, log_level="warning")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--era", choices=["dual", "modern"], default="dual")
    parser.add_argument("--port", type=int, default=8124)
    parser.add_argument("--journal", default="", help="append one JSON line per request")
    parser.add_argument("--ttl-ms", type=int, default=DEFAULT_TTL_MS)
    args = parser.parse_args(argv)
    if args.journal:
        _journal_path.append(args.journal)
    _ttl_ms[0] = args.ttl_ms
    server = build_server(args.era)
    if args.transport == "stdio":
        anyio.run(serve_stdio, server)
    else:
        serve_http(server, args.port, args.era)


if __name__ == "__main__":
    main()
