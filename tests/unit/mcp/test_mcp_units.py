"""Pure parts of the MCP client: texts, options, lifecycle table, handlers, scrubber, paging."""

from __future__ import annotations

import logging

import pytest

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpError,
    McpOptions,
    accept_with_defaults,
    errors,
    handlers,
)
from zeroclaw_ref.mcp.discovery import list_all, parse_tools
from zeroclaw_ref.mcp.lifecycle import TRANSITIONS, Event, LifecycleError, State, next_state
from zeroclaw_ref.mcp.scrubber import scrub, scrub_secrets
from zeroclaw_ref.mcp.stdio import excerpt, exit_status
from zeroclaw_ref.wire.mcp import METHOD_TOOLS_LIST as TOOLS_LIST


@pytest.mark.req("MCP-API-04")
def test_options_have_the_specified_defaults() -> None:
    o = McpOptions()
    assert (o.init_timeout_s, o.list_timeout_s, o.default_tool_timeout_s) == (30, 30, 180)
    assert (o.max_tool_timeout_s, o.max_reconnect_attempts) == (600, 2)
    assert (o.stdio_max_message_bytes, o.stderr_tail_bytes) == (67_108_864, 65_536)
    assert (o.close_grace_s, o.max_list_pages, o.max_resumptions) == (2, 100, 10)
    assert (o.handler_workers, o.era, o.probe_timeout_s) == (4, "auto", 5)


@pytest.mark.req("MCP-TIME-01")
def test_tool_timeout_defaults_to_180_and_is_capped_at_600() -> None:
    o = McpOptions()
    assert o.tool_timeout(None) == 180
    assert o.tool_timeout(20) == 20
    assert o.tool_timeout(9999) == 600


@pytest.mark.req("MCP-API-05", "MCP-ERR-01", "MCP-TIME-07")
def test_error_texts_are_exact() -> None:
    op = errors.op_text("tools/call", "crash")
    assert op == "tool call `crash`"
    assert errors.op_text("resources/read") == "`resources/read`"
    assert str(errors.closed("s")) == "MCP server `s` is closed"
    assert str(errors.timed_out_before("s", 0.5, op)) == (
        "MCP server `s` timed out after 0.5s before writing tool call `crash`"
    )
    assert str(errors.timed_out_during("s", 180, "`prompts/get`")) == (
        "MCP server `s` timed out after 180s during `prompts/get`; outcome unknown and request "
        "was not replayed"
    )
    assert str(errors.outcome_unknown("s", op, "SSE stream closed")) == (
        "MCP server `s` failed during tool call `crash`; outcome unknown and request was not "
        "replayed: SSE stream closed"
    )
    assert str(errors.unavailable("s")) == (
        "MCP server `s` is unavailable: a prior request's outcome became unknown and recovery "
        "failed; not writing on an unrecovered session"
    )
    assert str(errors.cancelled_before("s", op)) == (
        "MCP server `s` call cancelled before writing tool call `crash`"
    )
    assert str(errors.cancelled_during("s", op)) == (
        "MCP server `s` call cancelled during tool call `crash`; outcome unknown and request "
        "was not replayed"
    )
    assert str(errors.http_status("s", 503)) == "MCP server returned HTTP 503"
    err = errors.closed("srv")
    assert isinstance(err, McpError) and err.server == "srv"


@pytest.mark.req("MCP-RPC-08", "MCP-CTX-08")
def test_rpc_error_texts_keep_the_message_unmodified() -> None:
    err = errors.rpc_error("s", "tools/call", "t", {"code": -32602, "message": "bad ?x=1 sk-abc"})
    assert str(err) == "MCP tool `t` error -32602: bad ?x=1 sk-abc"
    assert (err.code, err.message, err.data) == (-32602, "bad ?x=1 sk-abc", None)
    other = errors.rpc_error("s", "prompts/get", None, {"code": 1, "message": "m", "data": [1]})
    assert str(other) == "MCP `prompts/get` error 1: m" and other.data == [1]


@pytest.mark.req("MCP-LIFE-07")
def test_lifecycle_moves_only_through_the_table() -> None:
    assert next_state(State.CONNECTING, Event.HANDSHAKE_OK) is State.READY
    assert next_state(State.READY, Event.TRANSPORT_FAILED) is State.BROKEN
    assert next_state(State.BROKEN, Event.RECOVERED) is State.READY
    assert next_state(State.BROKEN, Event.RECOVERY_FAILED) is State.BROKEN
    assert next_state(State.BROKEN, Event.RECOVERY_FAILED_LOSSY) is State.POISONED
    assert all(TRANSITIONS[(s, Event.CLOSE)] is State.CLOSED for s in State)
    with pytest.raises(LifecycleError):
        next_state(State.READY, Event.RECOVERED)
    with pytest.raises(LifecycleError):
        next_state(State.POISONED, Event.RECOVERED)


@pytest.mark.req("MCP-INIT-03", "MCP-INIT-04", "MCP-S2C-04")
def test_capabilities_follow_the_installed_handlers() -> None:
    assert handlers.capabilities(ClientHandlers()) == {}
    full = ClientHandlers(roots=list, sampling=dict, elicitation=dict)
    assert handlers.capabilities(full) == {"roots": {}, "sampling": {}, "elicitation": {}}
    url = ClientHandlers(elicitation=dict, elicitation_url_mode=True)
    assert handlers.capabilities(url) == {"elicitation": {"form": {}, "url": {}}}


@pytest.mark.req("MCP-S2C-01", "MCP-S2C-03", "MCP-S2C-05", "MCP-S2C-07")
def test_server_requests_are_answered_by_the_table(caplog: pytest.LogCaptureFixture) -> None:
    none = ClientHandlers()
    assert handlers.answer_request("s", none, "ping", {}).result == {}
    assert handlers.answer_request("s", none, "roots/list", {}).code == -32601
    assert handlers.answer_request("s", none, "sampling/createMessage", {}).code == -32601
    assert handlers.answer_request("s", none, "elicitation/create", {}).result == {
        "action": "decline"
    }
    url = handlers.answer_request("s", none, "elicitation/create", {"mode": "url"})
    assert (url.code, url.message) == (-32602, "Invalid params")
    unknown = handlers.answer_request("s", none, "x/y", {})
    assert unknown.to_message(0) == {
        "jsonrpc": "2.0",
        "id": 0,
        "error": {"code": -32601, "message": "Method not found"},
    }

    def boom(_p: JSONObject) -> JSONObject:
        raise RuntimeError("no")

    with caplog.at_level(logging.WARNING):
        bad = handlers.answer_request(
            "s", ClientHandlers(sampling=boom), "sampling/createMessage", {}
        )
    assert (bad.code, bad.message) == (-32603, "Internal error")
    assert "sampling/createMessage" in caplog.text
    roots = ClientHandlers(roots=lambda: [{"uri": "file:///w", "name": "w"}])
    assert handlers.answer_request("s", roots, "roots/list", {}).result == {
        "roots": [{"uri": "file:///w", "name": "w"}]
    }


@pytest.mark.req("MCP-S2C-09")
def test_accept_with_defaults_fills_only_defaults() -> None:
    params: JSONObject = {
        "requestedSchema": {
            "properties": {"name": {"type": "string", "default": "Ada"}, "age": {"type": "number"}}
        }
    }
    assert accept_with_defaults(params) == {"action": "accept", "content": {"name": "Ada"}}
    assert accept_with_defaults({}) == {"action": "accept", "content": {}}


@pytest.mark.req("MCP-CTX-06", "MCP-CTX-07")
def test_scrubber_steps() -> None:
    assert scrub("see https://x.example/cb?token=abc next") == "see https://x.example/cb next"
    assert scrub("key sk-proj-AbC.12:z and ghp_") == "key [REDACTED] and ghp_"
    assert scrub("a" * 600) == "a" * 500 + "..."
    assert scrub_secrets("task-1234") == "ta[REDACTED]"
    assert scrub("é" * 300) == "é" * 300  # characters, not bytes, decide whether to cut
    assert scrub("é" * 600) == "é" * 250 + "..."


@pytest.mark.req("MCP-STDIO-20", "MCP-STDIO-21")
def test_exit_status_and_stderr_excerpt() -> None:
    assert exit_status(3) == "exit code 3"
    assert exit_status(-9) == "signal 9"
    assert exit_status(None) == "exit status unknown"
    assert excerpt(b"") == "(empty)"
    assert excerpt(b"  boom https://h/x?k=v sk-secret \n") == "boom https://h/x [REDACTED]"
    tail = ("é" * 400).encode()
    assert excerpt(tail) == "é" * 250


def _pages(pages: dict[str | None, JSONObject]) -> tuple[list[JSONObject], object]:
    sent: list[JSONObject] = []

    def requester(method: str, params: JSONObject) -> JSON:
        sent.append(params)
        cursor = params.get("cursor")
        return pages[cursor if isinstance(cursor, str) else None]

    return sent, requester


@pytest.mark.req("MCP-DISC-02", "MCP-DISC-10")
def test_listing_follows_cursors() -> None:
    sent, requester = _pages(
        {None: {"tools": [1, 2], "nextCursor": "a"}, "a": {"tools": [3], "nextCursor": ""}}
    )
    assert list_all("s", requester, TOOLS_LIST, "tools", 100) == [1, 2, 3]  # type: ignore[arg-type]
    assert sent == [{}, {"cursor": "a"}]


@pytest.mark.req("MCP-DISC-11", "MCP-DISC-12", "MCP-ERR-13", "MCP-ERR-14")
def test_listing_guards(caplog: pytest.LogCaptureFixture) -> None:
    _, loop = _pages(
        {None: {"tools": [1], "nextCursor": "a"}, "a": {"tools": [2], "nextCursor": "a"}}
    )
    with caplog.at_level(logging.WARNING):
        assert list_all("s", loop, TOOLS_LIST, "tools", 100) == [1, 2]  # type: ignore[arg-type]
    assert (
        "MCP server `s` repeated a pagination cursor in `tools/list`; keeping 2 items from 2 pages"
        in caplog.text
    )
    counter = iter(range(1000))

    def endless(method: str, params: JSONObject) -> JSON:
        return {"tools": [0], "nextCursor": f"c{next(counter)}"}

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert len(list_all("s", endless, TOOLS_LIST, "tools", 3)) == 3
    assert (
        "MCP server `s` returned more than 3 pages in `tools/list`; keeping 3 items" in caplog.text
    )


@pytest.mark.req("MCP-DISC-03", "MCP-RES-13")
def test_unusable_listings_fail_with_their_texts() -> None:
    with pytest.raises(McpError, match=r"^tools/list returned no result from `s`$"):
        list_all("s", lambda m, p: None, TOOLS_LIST, "tools", 10)
    with pytest.raises(McpError, match=r"^failed to parse tools/list from `s`$"):
        list_all("s", lambda m, p: {"tools": {}}, TOOLS_LIST, "tools", 10)
    with pytest.raises(McpError, match=r"^failed to parse resources/list result$"):
        list_all("s", lambda m, p: [], "resources/list", "resources", 10)


@pytest.mark.req(
    "MCP-DISC-04", "MCP-DISC-05", "MCP-DISC-06", "MCP-DISC-08", "MCP-ERR-11", "MCP-ERR-12"
)
def test_tool_parsing_skips_bad_entries_and_keeps_schemas(caplog: pytest.LogCaptureFixture) -> None:
    schema: JSONObject = {"$schema": "x", "type": "object", "$defs": {"a": {}}, "allOf": []}
    entries: list[JSON] = [
        "junk",
        {"name": ""},
        {"name": "noschema"},
        {"name": "t", "inputSchema": {"type": "object"}, "description": "old"},
        {"name": "u", "inputSchema": schema, "description": 7, "title": "U"},
        {"name": "t", "inputSchema": {"type": "object"}, "description": "new"},
    ]
    with caplog.at_level(logging.WARNING):
        tools = parse_tools("s", entries)
    assert [t.prefixed_name for t in tools] == ["s__u", "s__t"]
    assert tools[1].description == "new"
    assert tools[0].description == "MCP tool" and tools[0].raw["title"] == "U"
    assert list(tools[0].input_schema) == ["$schema", "type", "$defs", "allOf"]
    assert tools[0].input_schema is schema
    assert caplog.text.count("MCP server `s`: skipping a tools/list entry without a name") == 2
    assert "MCP server `s`: skipping tool `noschema` without an inputSchema object" in caplog.text
