"""A 2026-07-28 echo server on the official MCP Python SDK 2.3.0, for the modern echo cases.

    python bench/peers/mcp_modern_echo_server.py stdio
    python bench/peers/mcp_modern_echo_server.py http <port>      # POST http://127.0.0.1:<port>/mcp

The SDK's lowlevel `Server` serves both eras (the client's first request decides); the modern
cases check that each client really ended in 2026-07-28. One tool, `echo {message}` answering
`Echo: <message>` as server-everything's does, so the cases share the clients' checks.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

Ctx = ServerRequestContext[Any, Any]
ECHO = types.Tool(
    name="echo",
    description="Echo a message",
    input_schema={"type": "object", "properties": {"message": {"type": "string"}}},
)


async def list_tools(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO])


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    message = (params.arguments or {}).get("message", "")
    return types.CallToolResult(content=[types.TextContent(text=f"Echo: {message}")])


def build() -> Server[Any]:
    server: Server[Any] = Server(
        "bench-modern-echo", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    server.middleware.clear()  # no tracing middleware: the same work for every client
    return server


async def _stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str]) -> int:
    server = build()
    if argv[0] == "stdio":
        anyio.run(_stdio, server)
        return 0
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=int(argv[1]), log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
