"""The 2026-07-28 era over Streamable HTTP (mcp.md §14.1, §14.3): the probe, the routing and
`Mcp-Param-*` headers, the dropped tools, no session machinery, refusals explained, listen,
against tests/helpers/fake_mcp_modern_http.py (and the legacy fake_mcp_http.py)."""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import FakeMcpHttp, Handler
from tests.helpers.fake_mcp_modern_http import FakeModernHttp
from tests.unit.mcp.conftest import FAST, Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpRpcError,
    McpTimeoutError,
    accept_with_defaults,
    httpbody,
    mcpheaders,
)
from zeroclaw_ref.mcp import era as eras

MODERN = "2026-07-28"


@pytest.fixture
def modern() -> Iterator[FakeModernHttp]:
    server = FakeModernHttp("--header-tools")
    yield server
    server.close()


def config(url: str, **fields: Any) -> McpServerConfig:
    return McpServerConfig(name="h", transport="http", url=url, **fields)


def text_of(result: Any) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.req("MCP-MOD-02", "MCP-MOD-14", "MCP-MOD-17", "MCP-MOD-10")
def test_a_modern_http_server_gets_routing_headers_and_no_session_machinery(
    connect: Connect, modern: FakeModernHttp
) -> None:
    reg = connect(config(modern.url, headers={"Authorization": "Bearer t"}))
    assert reg.connection("h").era == "modern"
    assert text_of(reg.call_tool("h__echo", {"message": "hi"})) == "Echo: hi"
    reg.close()
    posts = modern.seen("POST")
    assert [p.body["method"] for p in posts][:3] == ["server/discover", "subscriptions/listen",
                                                     "tools/list"]  # fmt: skip
    for post in posts:
        assert post.headers["MCP-Protocol-Version"] == MODERN
        assert post.headers["Mcp-Method"] == post.body["method"]
        assert post.headers["Authorization"] == "Bearer t"
        assert "Mcp-Session-Id" not in post.headers
    call = next(p for p in posts if p.body["method"] == "tools/call")
    assert call.headers["Mcp-Name"] == "echo"
    assert not modern.seen("GET") and not modern.seen("DELETE")  # [MCP-MOD-17]
    assert not {"initialize", "notifications/initialized"} & set(modern.methods())
    assert eras.cached(eras.key(config(modern.url))) == "modern"


@pytest.mark.req("MCP-MOD-02", "MCP-HTTP-41")
def test_a_legacy_json_refusal_of_the_probe_falls_back_to_initialize(
    connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """server-everything answers the probe 400 with a JSON-RPC error of its own (-32000, id
    null): no modern evidence, so the handshake follows on the same keep-alive session."""
    original = Handler.do_POST

    def post(self: Handler) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        message = json.loads(raw)
        if message.get("method") == "server/discover":
            self._record(message)
            body = {"jsonrpc": "2.0", "error": {"code": -32000,
                    "message": "Bad Request: Server not initialized"}, "id": None}  # fmt: skip
            self._plain(400, json.dumps(body).encode(), "application/json")
            return
        real, self.rfile = self.rfile, io.BytesIO(raw)  # the original reads the body again
        try:
            original(self)
        finally:
            self.rfile = real

    monkeypatch.setattr(Handler, "do_POST", post)
    fake = FakeMcpHttp()
    try:
        reg = connect(config(fake.url))
        assert reg.connection("h").era == "legacy"
        methods = [s.body["method"] for s in fake.seen("POST") if "id" in s.body]
        assert methods[:3] == ["server/discover", "initialize", "tools/list"]
    finally:
        fake.close()


@pytest.mark.req("MCP-MOD-02", "MCP-MOD-06")
def test_refusal_bodies_are_read_as_the_response() -> None:
    class Stub(httpbody.Body):
        def __init__(self, data: bytes, ctype: str = "application/json") -> None:
            self.status, self.content_type, self.content_length = 400, ctype, len(data)
            self._data = data

        def chunks(self) -> Iterator[bytes]:
            yield self._data

        def header(self, name: str) -> str | None:
            return None

        def shutdown(self) -> None:
            return

        def close(self) -> None:
            return

    error = {"code": -32022, "message": "no", "data": {"supported": [MODERN]}}
    for rid in (7, None):
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode()
        assert httpbody.jsonrpc_refusal(Stub(body), 7) == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": error,
        }
    assert httpbody.jsonrpc_refusal(Stub(b"Bad Request", "text/plain"), 7) is None
    other = json.dumps({"jsonrpc": "2.0", "id": 8, "error": error}).encode()
    assert httpbody.jsonrpc_refusal(Stub(other), 7) is None
    assert httpbody.jsonrpc_refusal(Stub(b"x" * 5000), 7) is None  # [MCP-SIZE-10] 4096 bytes read


@pytest.mark.req("MCP-MOD-15", "MCP-MOD-16")
def test_annotated_arguments_become_param_headers(connect: Connect, modern: FakeModernHttp) -> None:
    reg = connect(config(modern.url))
    args = {"message": "m", "region": " eu-wést", "count": 3, "dry": False, "note": "x"}
    assert text_of(reg.call_tool("h__routed", args)) == "Echo: m"
    call = [p for p in modern.seen("POST") if p.body["method"] == "tools/call"][-1]
    sentinel = "=?base64?" + base64.b64encode(" eu-wést".encode()).decode() + "?="
    assert call.headers["Mcp-Param-Region"] == sentinel
    assert call.headers["Mcp-Param-Count"] == "3" and call.headers["Mcp-Param-Dry"] == "false"
    assert not any(k.startswith("Mcp-Param-") and k.endswith("Note") for k in call.headers)
    reg.call_tool("h__routed", {"message": "n"})  # absent arguments: no headers
    last = [p for p in modern.seen("POST") if p.body["method"] == "tools/call"][-1]
    assert not [k for k in last.headers if k.startswith("Mcp-Param-")]


@pytest.mark.req("MCP-MOD-15")
def test_the_sentinel_form() -> None:
    assert mcpheaders.encode("plain value") == "plain value"
    for value in (" lead", "trail ", "é", "tab\there", "=?base64?abc?="):
        assert mcpheaders.encode(value) == (
            "=?base64?" + base64.b64encode(value.encode()).decode() + "?="
        )


@pytest.mark.req("MCP-MOD-16")
def test_tools_with_invalid_annotations_are_dropped_on_http_only(
    connect: Connect, modern: FakeModernHttp, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        reg = connect(config(modern.url))
    names = [t.name for t in reg.tools()]
    assert "routed" in names and "badheader" not in names
    assert (
        "MCP server `h`: dropping tool `badheader`: invalid x-mcp-header (property `tags`: "
        "x-mcp-header on a non-primitive property)"
    ) in caplog.text

    def prop(token: str, kind: str = "string") -> dict[str, Any]:
        return {"type": kind, "x-mcp-header": token}

    reasons = {
        "not a token": {"properties": {"a": prop("a b")}},
        "through items": {"properties": {"a": {"type": "array", "items": prop("A")}}},
        "repeated": {"properties": {"a": prop("X"), "b": prop("x")}},
        "through anyOf": {"anyOf": [{"properties": {"a": prop("A")}}]},
        "empty": {"properties": {"a": prop("")}},
        "on a number": {"properties": {"a": prop("N", "number")}},
    }
    for what, schema in reasons.items():
        assert mcpheaders.invalid_reason(schema) is not None, what
    nested = {"properties": {"o": {"type": "object", "properties": {"k": prop("K", "integer")}}}}
    assert mcpheaders.invalid_reason(nested) is None
    assert mcpheaders.param_headers(mcpheaders.header_map(nested), {"o": {"k": 5}}) == {
        "Mcp-Param-K": "5"
    }


@pytest.mark.req("MCP-MOD-06", "MCP-MOD-14")
def test_a_header_mismatch_is_explained(
    connect: Connect, modern: FakeModernHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = connect(config(modern.url))
    real = mcpheaders.request_headers

    def wrong(message: Any, maps: Any) -> dict[str, str]:
        out = real(message, maps)
        if message.get("method") == "tools/call":
            out["Mcp-Name"] = "something-else"
        return out

    monkeypatch.setattr(mcpheaders, "request_headers", wrong)
    with pytest.raises(McpRpcError) as info:
        reg.call_tool("h__echo", {"message": "x"})
    assert str(info.value) == (
        "MCP server `h` refused tool call `echo`: the MCP HTTP headers of the request did not "
        "match its body (error -32020: Mcp-Name header does not match the body)"
    )


@pytest.mark.req("MCP-MOD-13", "MCP-MOD-17")
def test_the_listen_stream_feeds_the_stale_flag_and_closes_with_the_connection(
    connect: Connect, modern: FakeModernHttp
) -> None:
    reg = connect(config(modern.url))
    reg.call_tool("h__change", {})
    wait_for(lambda: reg.connection("h").tools_stale, "the list change on the listen stream")
    assert reg.refresh_if_stale() is True
    assert "h__late_tool" in [t.prefixed_name for t in reg.tools()]
    reg.close()
    wait_for(modern.state.listen_closed.is_set, "the listen stream to close")
    assert not modern.seen("DELETE")


@pytest.mark.req("MCP-MOD-08", "MCP-MOD-14")
def test_input_rounds_over_http(connect: Connect, modern: FakeModernHttp) -> None:
    reg = connect(config(modern.url), handlers=ClientHandlers(elicitation=accept_with_defaults))
    answer = json.loads(text_of(reg.call_tool("h__ask", {})))
    assert answer["answers"] == {"q": {"action": "accept", "content": {"name": "Ada"}}}
    rounds = [p for p in modern.seen("POST") if p.body["method"] == "tools/call"]
    assert [r.headers["Mcp-Name"] for r in rounds] == ["ask", "ask"]
    assert rounds[1].body["params"]["requestState"] == answer["state"]


@pytest.mark.req("MCP-MOD-17", "MCP-CANCEL-03")
def test_a_timed_out_modern_call_is_cancelled_by_closing_its_stream(
    connect: Connect, modern: FakeModernHttp
) -> None:
    reg = connect(config(modern.url, tool_timeout_secs=1), options=FAST)
    with pytest.raises(McpTimeoutError):
        reg.call_tool("h__slow", {})
    assert "notifications/cancelled" not in modern.methods()
    assert not [p for p in modern.seen("POST") if "id" not in p.body]  # no notification POST


@pytest.mark.req("MCP-MOD-13", "MCP-HTTP-36")
def test_an_ended_listen_stream_is_reopened_and_the_lists_refetched(
    connect: Connect, modern: FakeModernHttp
) -> None:
    reg = connect(config(modern.url))
    conn = reg.connection("h")
    modern.state.listen_closed.clear()
    with modern.state.lock:
        (handler, _done), *_ = modern.state.streams
    handler.connection.shutdown(2)  # the server ends the stream (a restart, a proxy timeout)
    wait_for(lambda: modern.methods().count("subscriptions/listen") == 2, "the listen to reopen")
    listens = [p.body for p in modern.seen("POST") if p.body["method"] == "subscriptions/listen"]
    assert listens[1]["id"] > listens[0]["id"]  # a new request id
    assert conn.tools_stale is True  # what changed meanwhile is unknown: listed again
    reg.call_tool("h__change", {})
    assert reg.refresh_if_stale() is True


@pytest.mark.req("MCP-MOD-02", "MCP-SSE-03")
def test_a_server_configured_as_sse_that_only_takes_posts_is_probed_for_the_modern_era(
    connect: Connect, modern: FakeModernHttp, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        reg = connect(McpServerConfig(name="h", transport="sse", url=modern.url))
    assert "refused the SSE stream; using Streamable HTTP" in caplog.text
    assert reg.connection("h").era == "modern"
    assert text_of(reg.call_tool("h__echo", {"message": "s"})) == "Echo: s"
    assert modern.methods()[0] == "server/discover"
