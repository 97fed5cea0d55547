"""`mcp_resources`, `mcp_prompts` and the untrusted-content wrappers (mcp.md §10.1, §10.2)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.mcp.adapters import McpPromptsTool, McpResourcesTool
from zeroclaw_ref.mcp.untrusted import escape_attr, prompt_wrapper, resource_wrapper
from zeroclaw_ref.tools.base import ToolContext, ToolResult

CTX = ToolContext(cancel=CancelToken())
DOC = {"uri": "demo://doc.md", "name": "doc.md", "mimeType": "text/markdown"}


@pytest.fixture
def fake() -> FakeMcp:
    return FakeMcp(
        {
            "everything": FakeServer(
                resources=[DOC, {"uri": "demo://b", "name": "b", "description": "Bé"}],
                prompts=[
                    {"name": "simple", "title": "ignored"},
                    {
                        "name": "args",
                        "description": "d",
                        "arguments": [{"name": "city", "required": True, "extra": 1}],
                    },
                ],
                contents={
                    "demo://doc.md": {
                        "contents": [
                            {"uri": "demo://doc.md", "mimeType": "text/markdown", "text": "# Hi"},
                            {"uri": "demo://x", "blob": "QUJD", "mimeType": "image/png"},
                            {"uri": "demo://y", "blob": "QQ=="},
                        ]
                    }
                },
                rendered={
                    "args": {
                        "messages": [
                            {"role": "user", "content": {"type": "text", "text": "Weather?"}},
                            {"role": "assistant", "content": {"type": "image", "data": "QQ"}},
                        ]
                    }
                },
                page_size=1,
            ),
            "plain": FakeServer(tools=[("t", "d")]),  # no resources, no prompts
            "docs": FakeServer(resources=[{"uri": "file:///a", "name": "a"}], prompts=[]),
        }
    )


def _run(tool: McpResourcesTool | McpPromptsTool, arguments: JSON) -> ToolResult:
    return tool.execute(arguments, CTX)


def _error(tool: McpResourcesTool | McpPromptsTool, arguments: JSON) -> str | None:
    result = _run(tool, arguments)
    assert not result.success
    return result.error


@pytest.mark.req("MCP-RES-03", "MCP-RES-04", "MCP-ERR-60", "MCP-ERR-61", "MCP-ERR-62")
@pytest.mark.req("MCP-ERR-63", "MCP-ERR-64")
def test_argument_errors_have_their_exact_texts(fake: FakeMcp) -> None:
    res, pro = McpResourcesTool(fake), McpPromptsTool(fake)
    assert _error(res, ["list"]) == "arguments must be an object"
    assert _error(pro, None) == "arguments must be an object"
    assert _error(res, {}) == "missing required `action` (list|read)"
    assert _error(pro, {"action": 3}) == "missing required `action` (list|get)"
    assert _error(res, {"action": "get"}) == "unknown action `get` (expected list|read)"
    assert _error(pro, {"action": "read"}) == "unknown action `read` (expected list|get)"
    assert _error(res, {"action": "read"}) == "`read` requires a non-empty `uri`"
    assert _error(res, {"action": "read", "uri": ""}) == "`read` requires a non-empty `uri`"
    assert _error(pro, {"action": "get"}) == "`get` requires a non-empty `name`"
    assert fake.calls == []


@pytest.mark.req("MCP-RES-05", "MCP-RES-08", "MCP-RES-16", "MCP-DISC-14")
def test_a_per_server_list_returns_one_page_and_its_cursor(fake: FakeMcp) -> None:
    tool = McpResourcesTool(fake)
    first = _run(tool, {"action": "list", "server": "everything", "approved": True})
    assert first.output == json.dumps(
        {
            "resources": [
                {"uri": "everything__demo://doc.md", "name": "doc.md", "mimeType": "text/markdown"}
            ],
            "next_cursor": "1",
        },
        indent=2,
    )
    second = _run(tool, {"action": "list", "server": "everything", "cursor": "1"})
    assert json.loads(second.output) == {
        "resources": [{"uri": "everything__demo://b", "name": "b", "description": "Bé"}],
        "next_cursor": None,
    }
    assert "Bé" in second.output  # [MCP-RES-16] non-ASCII is not escaped


@pytest.mark.req("MCP-RES-06", "MCP-RES-02")
def test_an_all_server_list_collects_every_capable_server_in_grant_order(fake: FakeMcp) -> None:
    listed = json.loads(_run(McpResourcesTool(fake), {"action": "list"}).output)
    assert [d["uri"] for d in listed] == [
        "everything__demo://doc.md", "everything__demo://b", "docs__file:///a",
    ]  # fmt: skip


@pytest.mark.req("MCP-RES-07", "MCP-ERR-65")
def test_a_cursor_without_a_server_is_refused(fake: FakeMcp) -> None:
    assert _error(McpPromptsTool(fake), {"action": "list", "cursor": "1"}) == (
        "`cursor` requires a `server` (pagination is per-server); omit `cursor` for an "
        "all-server list"
    )


@pytest.mark.req("MCP-RES-02", "MCP-ERR-54", "MCP-ERR-55", "MCP-RES-15")
def test_a_server_without_the_capability_fails_as_a_value(fake: FakeMcp) -> None:
    assert _error(McpResourcesTool(fake), {"action": "list", "server": "plain"}) == (
        "MCP server `plain` does not support resources"
    )
    assert _error(McpPromptsTool(fake), {"action": "get", "name": "plain__x"}) == (
        "MCP server `plain` does not support prompts"
    )


@pytest.mark.req("MCP-RES-10")
def test_prompt_definitions_carry_their_arguments(fake: FakeMcp) -> None:
    listed = json.loads(_run(McpPromptsTool(fake), {"action": "list"}).output)
    assert listed == [
        {"name": "everything__simple", "arguments": []},
        {
            "name": "everything__args",
            "description": "d",
            "arguments": [{"name": "city", "required": True}],
        },
    ]


@pytest.mark.req("MCP-RES-09", "MCP-CTX-01", "MCP-CTX-02", "MCP-CTX-03")
def test_a_read_is_wrapped_as_untrusted_content(fake: FakeMcp) -> None:
    result = _run(McpResourcesTool(fake), {"action": "read", "uri": "everything__demo://doc.md"})
    assert result.output == (
        '<mcp-resource server="everything" uri="everything__demo://doc.md" mime="text/markdown"'
        ' trust="untrusted-external">\n'
        "# Hi\n"
        "[binary blob, 4 bytes, mime=image/png]\n"
        "[binary blob, 4 bytes, mime=application/octet-stream]\n"
        "</mcp-resource>"
    )
    assert fake.calls == [("resources/read", "everything__demo://doc.md")]


@pytest.mark.req("MCP-RES-11", "MCP-RES-12", "MCP-CTX-04")
def test_a_prompt_is_rendered_as_untrusted_content(fake: FakeMcp) -> None:
    result = _run(
        McpPromptsTool(fake),
        {"action": "get", "name": "everything__args", "arguments": {"city": 7}},
    )
    assert result.output == (
        '<mcp-prompt server="everything" name="everything__args" trust="untrusted-external">\n'
        "[user] Weather?\n"
        '[assistant] {"type":"image","data":"QQ"}\n'
        "</mcp-prompt>"
    )
    # values are forwarded as received, even when they are not strings
    assert fake.calls[-1] == (
        "prompts/get",
        {"name": "everything__args", "arguments": {"city": 7}},
    )
    _run(McpPromptsTool(fake), {"action": "get", "name": "everything__args"})
    assert fake.calls[-1] == ("prompts/get", {"name": "everything__args", "arguments": {}})


@pytest.mark.req("MCP-RES-12", "MCP-ERR-68")
def test_prompt_arguments_must_be_an_object(fake: FakeMcp) -> None:
    arguments: JSON = {"action": "get", "name": "everything__args", "arguments": ["x"]}
    assert _error(McpPromptsTool(fake), arguments) == "prompt arguments must be an object"


@pytest.mark.req("MCP-RES-13", "MCP-ERR-56")
def test_uninterpretable_results_fail_to_parse(fake: FakeMcp) -> None:
    server = fake.servers["everything"]
    server.contents["bad"] = {"contents": "nope"}
    server.rendered["bad"] = {"messages": {}}
    assert _error(McpResourcesTool(fake), {"action": "read", "uri": "everything__bad"}) == (
        "failed to parse resources/read result"
    )
    assert _error(McpPromptsTool(fake), {"action": "get", "name": "everything__bad"}) == (
        "failed to parse prompts/get result"
    )


@pytest.mark.req("MCP-RES-14", "MCP-RESULT-01", "MCP-ERR-57", "MCP-ERR-58")
def test_an_is_error_result_fails_with_the_method_in_place_of_the_tool(fake: FakeMcp) -> None:
    server = fake.servers["everything"]
    server.contents["e"] = {
        "isError": True,
        "content": [{"type": "text", "text": "see https://x.example/cb?token=abc now"}],
    }
    server.contents["quiet"] = {"isError": True, "content": []}
    assert _error(McpResourcesTool(fake), {"action": "read", "uri": "everything__e"}) == (
        "MCP `resources/read` (server `everything`) returned isError: see https://x.example/cb now"
    )
    assert _error(McpResourcesTool(fake), {"action": "read", "uri": "everything__quiet"}) == (
        "MCP `resources/read` (server `everything`) returned isError: "
        "(no error detail returned by server)"
    )


@pytest.mark.req("MCP-CTX-05")
def test_attribute_values_escape_only_amp_quote_and_lt() -> None:
    assert escape_attr("a&b\"c<d>e'") == "a&amp;b&quot;c&lt;d>e'"
    wrapped = resource_wrapper('s"', "s__x<&", [])
    assert wrapped.startswith('<mcp-resource server="s&quot;" uri="s__x&lt;&amp;" mime=""')


@pytest.mark.req("MCP-CTX-06", "MCP-CTX-01")
def test_wrapped_text_is_scrubbed() -> None:
    body = resource_wrapper("s", "s__u", [{"text": "key sk-proj-AbC.12:z and ghp_"}])
    assert "key [REDACTED] and ghp_\n" in body
    prompt = prompt_wrapper("s", "s__p", [{"role": "user", "content": {"text": "a" * 600}}])
    assert "[user] " + "a" * 500 + "...\n" in prompt
