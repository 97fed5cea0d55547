"""Registry surface: resources, prompts, naming and argument checks (mcp.md §0.5, §8.4)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.internals import stdio_pid
from tests.helpers.json_at import at, objects_at
from tests.helpers.mcp_calls import text_of
from tests.unit.mcp.conftest import Connect, stdio_config
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp import McpError, McpOptions, McpProtocolError, McpRegistry
from zeroclaw_ref.mcp.connection import Connection
from zeroclaw_ref.mcp.discovery import McpTool
from zeroclaw_ref.mcp.lifecycle import State


@pytest.mark.req("MCP-API-03", "MCP-NAME-01", "MCP-NAME-02")
def test_tool_records_carry_the_specified_fields(connect: Connect) -> None:
    reg = connect(stdio_config())
    tool = reg.tools()[0]
    assert isinstance(tool, McpTool)
    assert (tool.prefixed_name, tool.server, tool.name) == ("peer__echo", "peer", "echo")
    assert tool.description == "the echo tool" and tool.input_schema["type"] == "object"
    assert tool.raw["name"] == "echo"


@pytest.mark.req("MCP-NAME-04", "MCP-ERR-52", "MCP-ERR-53", "MCP-TIME-02")
def test_resources_and_prompts_by_prefixed_name(connect: Connect) -> None:
    reg = connect(stdio_config())
    page = reg.list_resources("peer")
    assert isinstance(page, dict) and page["nextCursor"] == "2"
    assert reg.list_resources("peer", "2") == {
        "resources": [{"uri": "test://doc/2", "name": "doc2", "mimeType": "text/plain"}]
    }
    every = reg.list_resources()
    assert isinstance(every, dict)
    assert [r["uri"] for r in objects_at(every, "resources")] == [
        "peer__test://doc/0",
        "peer__test://doc/1",
        "peer__test://doc/2",
    ]
    read = reg.read_resource("peer__test://doc/1")
    assert read == {
        "contents": [
            {"uri": "test://doc/1", "mimeType": "text/plain", "text": "body of test://doc/1"}
        ]
    }
    got = reg.get_prompt("peer__greet", {"who": "Ada"})
    assert at(got, "messages", 0, "content", "text") == "hello Ada"
    assert at(reg.list_prompts(), "prompts", 0, "name") == "peer__greet"
    with pytest.raises(McpError, match=r"^missing server prefix in `nothing`$"):
        reg.read_resource("nothing")
    with pytest.raises(McpError, match=r"^unknown MCP server `other`$"):
        reg.get_prompt("other__x")
    with pytest.raises(McpError, match=r"^`cursor` requires a `server`"):
        reg.list_prompts(cursor="c")


@pytest.mark.req("MCP-TIME-02", "MCP-TIME-03")
@pytest.mark.parametrize("configured", [3.0, None], ids=["server-timeout", "default"])
def test_reads_and_prompts_are_bounded_like_tool_calls(
    connect: Connect, monkeypatch: pytest.MonkeyPatch, configured: float | None
) -> None:
    """The deadline each request is given, seen where the registry hands it to the
    connection: `resources/read` and `prompts/get` get the server's tool timeout (its own
    `tool_timeout_secs`, else the default), the listings get the list timeout."""
    given: dict[str, float] = {}
    real = Connection.request

    def spy(
        self: Connection, method: str, params: JSONObject | None, timeout: float, **kw: Any
    ) -> JSON:
        given[method] = timeout
        return real(self, method, params, timeout, **kw)

    options = McpOptions(init_timeout_s=10, list_timeout_s=9, default_tool_timeout_s=7)
    reg = connect(stdio_config(tool_timeout_secs=configured), options=options)
    monkeypatch.setattr(Connection, "request", spy)
    reg.call_tool("peer__echo", {"message": "m"})
    reg.read_resource("peer__test://doc/1")
    reg.get_prompt("peer__greet", {"who": "Ada"})
    reg.list_prompts("peer")
    tool = given["tools/call"]
    assert tool == (configured or 7.0)
    assert (given["resources/read"], given["prompts/get"]) == (tool, tool)
    assert given["prompts/list"] == 9


@pytest.mark.req("MCP-RESULT-05", "MCP-RESULT-06", "MCP-NAME-03", "MCP-ERR-59")
def test_call_arguments_are_checked_locally(connect: Connect) -> None:
    reg = connect(stdio_config())
    with pytest.raises(McpProtocolError, match=r"^MCP tool arguments must be a JSON object$"):
        reg.call_tool("peer__echo", [1, 2])
    assert reg.call_tool("peer__echo", None)["content"] == [{"type": "text", "text": "Echo: "}]
    out = reg.call_tool("peer__echo", {"message": "m", "approved": True})
    assert out["content"] == [{"type": "text", "text": "Echo: m"}]
    with pytest.raises(McpError, match=r"^unknown MCP tool `peer__nope`$"):
        reg.call_tool("peer__nope", {})


@pytest.mark.req("MCP-API-02", "MCP-API-03")
def test_an_empty_registry_is_still_a_context_manager() -> None:
    with McpRegistry.connect_all([]) as reg:
        assert reg.tools() == [] and reg.servers() == ()
        assert reg.refresh_if_stale() is False


@pytest.mark.req("MCP-LIFE-06")
def test_each_registry_owns_its_own_connections(connect: Connect) -> None:
    config = stdio_config()
    first, second = connect(config), connect(config)
    one, two = first.connection("peer"), second.connection("peer")
    assert one is not two and one.transport is not two.transport
    pids = {stdio_pid(first), stdio_pid(second)}
    assert len(pids) == 2 and None not in pids
    first.close()
    assert one.state is State.CLOSED and two.state is State.READY
    assert text_of(second.call_tool("peer__echo", {"message": "mine"})) == "Echo: mine"
