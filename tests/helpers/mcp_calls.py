"""Small shared steps of the MCP transport tests: a raw `tools/call`, the text of a result, the
§16 text of a call whose outcome is unknown, and the POSTs the fake saw for one tool."""

from __future__ import annotations

from typing import Any

from tests.helpers.fake_mcp_http import FakeMcpHttp, Seen
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.mcp import McpRegistry


def call(reg: McpRegistry, tool: str, timeout: float = 5.0, server: str = "h", **args: Any) -> JSON:
    """`tools/call` of any tool name, listed by the fake or not."""
    params: dict[str, JSON] = {"name": tool, "arguments": args}
    return reg.connection(server).request("tools/call", params, timeout, tool=tool)


def text_of(result: JSON) -> str:
    """The text of the first content item of a `tools/call` result."""
    assert isinstance(result, dict)
    content = result["content"]
    assert isinstance(content, list) and isinstance(content[0], dict)
    return str(content[0]["text"])


def outcome_unknown(tool: str, cause: str, server: str = "h") -> str:
    return (
        f"MCP server `{server}` failed during tool call `{tool}`; outcome unknown and request "
        f"was not replayed: {cause}"
    )


def tool_posts(fake: FakeMcpHttp, tool: str) -> list[Seen]:
    """The `tools/call` POSTs of `tool` that `fake` recorded, in order."""
    return [
        s
        for s in fake.seen("POST")
        if isinstance(s.body, dict) and s.body.get("params", {}).get("name") == tool
    ]
