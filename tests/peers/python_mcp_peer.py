"""A Python MCP server on the official SDK (PyPI `mcp` 2.3.0), the test peer of mcp.md §15.2.

MCP-PEER-05: the npm servers lack the awkward cases (pagination, audio, a crash mid-call, a
stderr flood, a call that never returns, an expired session...), so this peer offers them on
every transport the client speaks. It is test-only code: asyncio (through anyio) is fine here,
never in zeroclaw_ref/.

Run it as a script:

    python tests/peers/python_mcp_peer.py                                  # stdio
    python tests/peers/python_mcp_peer.py --transport http --port 8123     # POST/GET /mcp
    python tests/peers/python_mcp_peer.py --transport http-json --port N   # JSON responses
    python tests/peers/python_mcp_peer.py --transport http-stateless --port N
    python tests/peers/python_mcp_peer.py --transport sse --port N         # GET /sse

The network modes bind 127.0.0.1 only.

Tools (`tools/list` pages hold ten tools; the cursor is opaque and a cursor this server did not
hand out is answered with JSON-RPC error -32602):

- `echo {message}`: text `Echo: <message>`.
- `add {a, b}`: the sum as text, and `structuredContent` `{"sum": ...}`.
- `image`: a 1x1 PNG image item; `audio`: a short WAV audio item.
- `embedded`: an embedded resource with a `blob` (`file:///reports/peer-report.txt`).
- `link`: a `resource_link` to `peer://hello`.
- `fail`: an `isError: true` result whose text is `deliberate failure`.
- `big {size}`: one text item of `size` (default 2 MiB) `x` characters, a single long line.
- `crash`: writes `CRASH_LINE` to stderr, then the process exits with code 3 mid-call.
- `stderr_spam {size}`: writes `size` (default 2 MiB) bytes of lines to stderr, then the last
  line `SPAM_DONE`, then answers; a client that does not drain stderr deadlocks here.
- `slow {seconds}`: sleeps (default one hour) unless cancelled; a `notifications/cancelled`
  interrupts it.
- `ask_name`: sends a form-mode `elicitation/create` for `name` (default `Ada`), whatever the
  client declared, and answers `Hello, <name>!` on accept, or `No name (<action>)` otherwise;
  an error answer (or no channel to send it on) gives an `isError` result.
- `journal`: JSON text of what this process saw: the request ids of `slow` calls, the params
  of every `notifications/cancelled`, the `slow` calls interrupted, the count of `initialize`
  requests and the capabilities each declared, and for each `ask_name` the channel its
  elicitation took (`request` or `standalone`).
- `filler_00` ... `filler_29`: thirty trivial tools, so that the list spans five pages.

Also a resource `peer://hello` (text) and a prompt `greet {name}`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

INVALID_PARAMS = -32602
PAGE_SIZE = 10
FILLERS = 30
TWO_MIB = 2 * 1024 * 1024
CRASH_LINE = "peer: fatal: cannot open state database"
SPAM_DONE = "peer: stderr spam done"
EMBEDDED_URI = "file:///reports/peer-report.txt"
EMBEDDED_BYTES = b"peer report: all systems nominal\n"
HELLO_URI = "peer://hello"
HELLO_TEXT = "Hello from the Python MCP peer"

Ctx = ServerRequestContext[Any, Any]
Args = dict[str, Any]

# What this process has seen, reported by the `journal` tool (shared by every HTTP session).
JOURNAL: dict[str, Any] = {
    "slow_started": [],
    "cancelled": [],
    "slow_interrupted": [],
    "inits": 0,
    "init_capabilities": [],
    "elicited_on": [],
}


def _png() -> bytes:
    """A valid 1x1 greyscale PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0\0"))
        + chunk(b"IEND", b"")
    )


def _wav() -> bytes:
    """A tiny PCM WAV file (eight silent samples)."""
    samples = b"\0\0" * 8
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])


def _schema(**props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props}


# --- tools ------------------------------------------------------------------------------


async def _echo(ctx: Ctx, args: Args) -> types.CallToolResult:
    return _text(f"Echo: {args.get('message', '')}")


async def _add(ctx: Ctx, args: Args) -> types.CallToolResult:
    total = args.get("a", 0) + args.get("b", 0)
    return types.CallToolResult(
        content=[types.TextContent(text=str(total))], structured_content={"sum": total}
    )


async def _image(ctx: Ctx, args: Args) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(text="a tiny image"),
            types.ImageContent(data=_b64(_png()), mime_type="image/png"),
        ]
    )


async def _audio(ctx: Ctx, args: Args) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(text="a short sound"),
            types.AudioContent(data=_b64(_wav()), mime_type="audio/wav"),
        ]
    )


async def _embedded(ctx: Ctx, args: Args) -> types.CallToolResult:
    blob = types.BlobResourceContents(
        uri=EMBEDDED_URI, mime_type="text/plain", blob=_b64(EMBEDDED_BYTES)
    )
    return types.CallToolResult(content=[types.EmbeddedResource(resource=blob)])


async def _link(ctx: Ctx, args: Args) -> types.CallToolResult:
    link = types.ResourceLink(name="hello", uri=HELLO_URI, mime_type="text/plain")
    return types.CallToolResult(content=[link])


async def _fail(ctx: Ctx, args: Args) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text="deliberate failure")], is_error=True
    )


async def _big(ctx: Ctx, args: Args) -> types.CallToolResult:
    return _text("x" * int(args.get("size", TWO_MIB)))


async def _crash(ctx: Ctx, args: Args) -> types.CallToolResult:
    os.write(2, f"{CRASH_LINE}\n".encode())
    os._exit(3)


async def _stderr_spam(ctx: Ctx, args: Args) -> types.CallToolResult:
    size = int(args.get("size", TWO_MIB))
    line = b"s" * 1023 + b"\n"
    written = 0
    # Blocking writes on purpose: if nobody drains the pipe, the whole server stalls here.
    while written < size:
        chunk = line * min(64, (size - written) // len(line) + 1)
        view = memoryview(chunk)
        while view:
            view = view[os.write(2, view) :]
        written += len(chunk)
    os.write(2, f"{SPAM_DONE}\n".encode())
    return _text(f"wrote {written} bytes to stderr")


async def _slow(ctx: Ctx, args: Args) -> types.CallToolResult:
    JOURNAL["slow_started"].append(ctx.request_id)
    try:
        await anyio.sleep(float(args.get("seconds", 3600)))
    except anyio.get_cancelled_exc_class():
        JOURNAL["slow_interrupted"].append(ctx.request_id)
        raise
    return _text("slow done")


async def _ask_name(ctx: Ctx, args: Args) -> types.CallToolResult:
    schema = _schema(name={"type": "string", "title": "Your name", "default": "Ada"})
    # On the request's own stream when it has one (an SSE response, stdio, legacy SSE), else on
    # the standalone GET stream (the JSON-response mode); stateless mode has neither.
    related = ctx.request_id if ctx.session.can_send_request else None
    JOURNAL["elicited_on"].append("request" if related is not None else "standalone")
    try:
        answer = await ctx.session.elicit_form(
            "What is your name?", schema, related_request_id=related
        )
    except MCPError as exc:
        return types.CallToolResult(
            content=[types.TextContent(text=f"elicitation failed: {exc.code} {exc.message}")],
            is_error=True,
        )
    if answer.action == "accept" and answer.content and answer.content.get("name"):
        return _text(f"Hello, {answer.content['name']}!")
    return _text(f"No name ({answer.action})")


async def _journal(ctx: Ctx, args: Args) -> types.CallToolResult:
    return _text(json.dumps(JOURNAL))


def _filler(index: int) -> Callable[[Ctx, Args], Awaitable[types.CallToolResult]]:
    async def run(ctx: Ctx, args: Args) -> types.CallToolResult:
        return _text(f"filler {index}")

    return run


Handler = Callable[[Ctx, Args], Awaitable[types.CallToolResult]]
TOOLS: list[tuple[types.Tool, Handler]] = [
    (
        types.Tool(
            name="echo",
            description="Echo a message",
            input_schema={**_schema(message={"type": "string"}), "required": ["message"]},
        ),
        _echo,
    ),
    (
        types.Tool(
            name="add",
            description="Add two numbers",
            input_schema={**_schema(a={"type": "number"}, b={"type": "number"})},
        ),
        _add,
    ),
    (types.Tool(name="image", description="A PNG image", input_schema=_schema()), _image),
    (types.Tool(name="audio", description="A WAV sound", input_schema=_schema()), _audio),
    (types.Tool(name="embedded", description="A blob", input_schema=_schema()), _embedded),
    (types.Tool(name="link", description="A resource link", input_schema=_schema()), _link),
    (types.Tool(name="fail", description="Always isError", input_schema=_schema()), _fail),
    (
        types.Tool(
            name="big",
            description="A huge one-line text",
            input_schema=_schema(size={"type": "integer"}),
        ),
        _big,
    ),
    (types.Tool(name="crash", description="Exit with code 3", input_schema=_schema()), _crash),
    (
        types.Tool(
            name="stderr_spam",
            description="Flood stderr",
            input_schema=_schema(size={"type": "integer"}),
        ),
        _stderr_spam,
    ),
    (
        types.Tool(
            name="slow",
            description="Never answers",
            input_schema=_schema(seconds={"type": "number"}),
        ),
        _slow,
    ),
    (types.Tool(name="ask_name", description="Elicit a name", input_schema=_schema()), _ask_name),
    (types.Tool(name="journal", description="What the peer saw", input_schema=_schema()), _journal),
    *(
        (
            types.Tool(name=f"filler_{i:02d}", description=f"Filler {i}", input_schema=_schema()),
            _filler(i),
        )
        for i in range(FILLERS)
    ),
]
HANDLERS: dict[str, Handler] = {tool.name: handler for tool, handler in TOOLS}


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"peer-page:{offset}".encode()).decode("ascii")


def _offset(cursor: str | None) -> int:
    """The offset a cursor of ours stands for; anything else is -32602 (MCP-PEER-05)."""
    if cursor is None:
        return 0
    valid = {_cursor(n): n for n in range(PAGE_SIZE, len(TOOLS), PAGE_SIZE)}
    if cursor not in valid:
        raise MCPError(INVALID_PARAMS, "Invalid cursor", {"cursor": cursor})
    return valid[cursor]


# --- request handlers -------------------------------------------------------------------


async def list_tools(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    start = _offset(params.cursor if params is not None else None)
    end = start + PAGE_SIZE
    page = [tool for tool, _ in TOOLS[start:end]]
    return types.ListToolsResult(tools=page, next_cursor=_cursor(end) if end < len(TOOLS) else None)


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    handler = HANDLERS.get(params.name)
    if handler is None:
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
    return await handler(ctx, dict(params.arguments or {}))


async def list_resources(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    hello = types.Resource(name="hello", uri=HELLO_URI, mime_type="text/plain")
    return types.ListResourcesResult(resources=[hello])


async def read_resource(
    ctx: Ctx, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    if str(params.uri) != HELLO_URI:
        raise MCPError(INVALID_PARAMS, f"Unknown resource: {params.uri}")
    text = types.TextResourceContents(uri=HELLO_URI, mime_type="text/plain", text=HELLO_TEXT)
    return types.ReadResourceResult(contents=[text])


async def list_prompts(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    arg = types.PromptArgument(name="name", description="Who to greet", required=True)
    return types.ListPromptsResult(
        prompts=[types.Prompt(name="greet", description="Greet someone", arguments=[arg])]
    )


async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name != "greet":
        raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
    name = (params.arguments or {}).get("name", "friend")
    message = types.PromptMessage(
        role="user", content=types.TextContent(text=f"Please greet {name}.")
    )
    return types.GetPromptResult(description="A greeting", messages=[message])


async def observe(ctx: Ctx, call_next: Callable[[Ctx], Awaitable[Any]]) -> Any:
    """Middleware: count handshakes (with the client's capabilities) and keep the raw params
    of every cancellation."""
    if ctx.method == "initialize":
        JOURNAL["inits"] += 1
        JOURNAL["init_capabilities"].append((ctx.params or {}).get("capabilities"))
    elif ctx.method == "notifications/cancelled":
        JOURNAL["cancelled"].append(dict(ctx.params or {}))
    return await call_next(ctx)


def build_server() -> Server[Any]:
    server: Server[Any] = Server(
        "python-mcp-peer",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    server.middleware.append(observe)
    return server


# --- transports -------------------------------------------------------------------------


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def sse_app(server: Server[Any]) -> Any:
    """Legacy HTTP+SSE: `GET /sse` opens the stream, POSTs go to `/messages/?session_id=...`."""
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    transport = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        async with transport.connect_sse(
            request.scope,
            request.receive,
            request._send,  # the SDK's documented way to hand the ASGI send over
        ) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return Response()

    routes = [
        Route("/sse", endpoint=handle_sse, methods=["GET"]),
        Mount("/messages/", app=transport.handle_post_message),
    ]
    return Starlette(routes=routes)


def serve_http(server: Server[Any], transport: str, port: int) -> None:
    import uvicorn

    if transport == "sse":
        app = sse_app(server)
    else:
        app = server.streamable_http_app(
            json_response=transport == "http-json",
            stateless_http=transport == "http-stateless",
            host="127.0.0.1",
        )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--transport",
        choices=["stdio", "http", "http-json", "http-stateless", "sse"],
        default="stdio",
    )
    parser.add_argument("--port", type=int, default=8123, help="network modes: the 127.0.0.1 port")
    args = parser.parse_args(argv)
    server = build_server()
    if args.transport == "stdio":
        anyio.run(serve_stdio, server)
    else:
        serve_http(server, args.transport, args.port)


if __name__ == "__main__":
    main()
