"""MCP tools as `Tool` objects (mcp.md §8.4, §11.1; policy.md POL-APPROVE-14)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer, FakeTool, schema
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp.adapters import ATTACHMENTS_KEY, McpToolAdapter, is_mcp_error
from zeroclaw_ref.mcp.errors import McpError, McpToolError
from zeroclaw_ref.tools.base import ToolContext

CTX = ToolContext(cancel=CancelToken())


def _plain(result: JSONObject, workspace: Path | None) -> tuple[str, Sequence[object]]:
    return f"formatted {sorted(result)} in {workspace}", []


def _adapter(fake: FakeMcp, name: str = "fs__read_file") -> McpToolAdapter:
    record = next(t for t in fake.tools() if t.prefixed_name == name)
    return McpToolAdapter(record, fake, Path("/ws"), _plain)


@pytest.fixture
def fake() -> FakeMcp:
    return FakeMcp({"fs": FakeServer(tools=[("read_file", "Read a file")])})


@pytest.mark.req("MCP-NAME-01", "MCP-NAME-05", "MCP-DISC-05")
def test_the_tool_is_exposed_under_its_prefixed_name_with_the_verbatim_schema() -> None:
    odd: JSONObject = {"$schema": "x", "type": "object", "$defs": {"a": {}}, "allOf": []}
    record = FakeTool("Srv-1__Do.It", "Srv-1", "Do.It", "does it", odd, {})
    tool = McpToolAdapter(record, FakeMcp({}), None, _plain)
    assert (tool.name, tool.description) == ("Srv-1__Do.It", "does it")
    assert tool.parameters is odd
    assert list(tool.parameters) == ["$schema", "type", "$defs", "allOf"]
    assert tool.act is True


@pytest.mark.req("MCP-DISC-06")
def test_a_missing_description_is_shown_as_mcp_tool() -> None:
    @dataclass(frozen=True)
    class NoDescription:
        prefixed_name: str = "s__t"
        server: str = "s"
        name: str = "t"
        description: str | None = None
        input_schema: JSONObject = field(default_factory=lambda: {"type": "object"})

    assert McpToolAdapter(NoDescription(), FakeMcp({}), None, _plain).description == "MCP tool"


@pytest.mark.req("MCP-RESULT-05", "MCP-POL-05", "POL-APPROVE-14")
def test_the_approved_key_is_removed_before_forwarding(fake: FakeMcp) -> None:
    result = _adapter(fake).execute({"path": "/a", "approved": True}, CTX)
    assert result.success
    assert fake.calls == [("fs__read_file", {"path": "/a"})]


@pytest.mark.req("MCP-RESULT-06")
@pytest.mark.parametrize("arguments", [None, {}])
def test_absent_or_null_arguments_are_sent_as_an_empty_object(
    fake: FakeMcp, arguments: JSON
) -> None:
    assert _adapter(fake).execute(arguments, CTX).success
    assert fake.calls == [("fs__read_file", {})]


@pytest.mark.req("MCP-RESULT-06", "MCP-ERR-59")
@pytest.mark.parametrize("arguments", [[1], "x", 3, True])
def test_non_object_arguments_fail_locally_without_contacting_the_server(
    fake: FakeMcp, arguments: JSON
) -> None:
    result = _adapter(fake).execute(arguments, CTX)
    assert (result.success, result.error) == (False, "MCP tool arguments must be a JSON object")
    assert fake.calls == []


@pytest.mark.req("MCP-RESULT-02", "MCP-RESULT-03", "MCP-RES-15")
def test_a_client_error_becomes_a_failed_result_with_its_exact_text(fake: FakeMcp) -> None:
    tool = _adapter(fake)
    del fake.servers["fs"]  # the tool vanished: the client refuses the call
    result = tool.execute({}, CTX)
    assert (result.success, result.error) == (False, "unknown MCP tool `fs__read_file`")
    text = "MCP `read_file` (server `fs`) returned isError: boom"

    class Failing(FakeMcp):
        def call_tool(
            self, prefixed_name: str, arguments: JSONObject, *, cancel: CancelToken | None = None
        ) -> JSON:
            raise McpToolError("fs", text, {"isError": True})

    failing = Failing({"fs": FakeServer(tools=[("read_file", "")])})
    result = _adapter(failing).execute({}, CTX)
    assert result.model_text() == f"Error: {text}"


def test_a_bug_that_is_not_an_mcp_error_still_raises(fake: FakeMcp) -> None:
    class Broken(FakeMcp):
        def call_tool(
            self, prefixed_name: str, arguments: JSONObject, *, cancel: CancelToken | None = None
        ) -> JSON:
            raise KeyError("bug")

    with pytest.raises(KeyError):
        _adapter(Broken({"fs": FakeServer(tools=[("read_file", "")])})).execute({}, CTX)
    assert is_mcp_error(McpToolError("s", "t", {})) and not is_mcp_error(ValueError())


@pytest.mark.req("MCP-RESULT-04")
def test_a_result_that_is_not_an_object_fails(fake: FakeMcp) -> None:
    fake.result = ["not", "an", "object"]
    result = _adapter(fake).execute({}, CTX)
    assert result.error == "failed to parse tools/call result"


@pytest.mark.req("MCP-RESULT-19", "MCP-RESULT-20")
def test_images_reach_the_engine_only_as_declared_attachments(fake: FakeMcp) -> None:
    def with_images(result: JSONObject, workspace: Path | None) -> tuple[str, Sequence[object]]:
        return "out", [{"path": "/ws/uploads/a.png", "mime_type": "image/png"}, {"bogus": 1}]

    record = fake.tools()[0]
    result = McpToolAdapter(record, fake, Path("/ws"), with_images).execute({}, CTX)
    assert result.output == "out"
    assert result.data == {
        ATTACHMENTS_KEY: [{"path": "/ws/uploads/a.png", "mime_type": "image/png"}]
    }
    plain = _adapter(fake).execute({}, CTX)
    assert plain.data is None and plain.output.startswith("formatted ['content'] in /ws")


def test_the_call_carries_the_turn_cancel_token() -> None:
    seen: list[CancelToken | None] = []

    class Recording(FakeMcp):
        def call_tool(
            self, prefixed_name: str, arguments: JSONObject, *, cancel: CancelToken | None = None
        ) -> JSON:
            seen.append(cancel)
            return {"content": []}

    fake = Recording({"s": FakeServer(tools=[("t", "d")], schemas={"t": schema()})})
    _adapter(fake, "s__t").execute({}, CTX)
    assert seen == [CTX.cancel]


def test_mcp_errors_carry_their_text() -> None:
    assert str(McpError("s", "MCP server `s` is closed")) == "MCP server `s` is closed"
