"""Discovery (`mcp/discovery.py`, mcp.md §2.3, §8): extra tool fields, opaque cursors, refreshes
from the first page, list changes during a listing, and methods the client never sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.mcp_server import RICH_FIELDS, more_tools_config
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp import format_result_for_model
from zeroclaw_ref.mcp.adapters import McpToolAdapter
from zeroclaw_ref.mcp.discovery import list_all


def _recorded(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


# --- discovery ---------------------------------------------------------------------------


@pytest.mark.req("MCP-DISC-07")
def test_extra_tool_fields_are_kept_but_change_nothing_the_model_sees(connect: Connect) -> None:
    reg = connect(more_tools_config("--rich-tools", name="rich"), more_tools_config(name="plain"))
    tools = {t.prefixed_name: t for t in reg.tools()}
    rich, plain = tools["rich__structured"], tools["plain__structured"]
    for key, value in RICH_FIELDS.items():
        assert rich.raw[key] == value
    assert (rich.description, rich.input_schema) == (plain.description, plain.input_schema)
    shown = McpToolAdapter(rich, reg, None)
    baseline = McpToolAdapter(plain, reg, None)
    assert (shown.description, shown.parameters) == (baseline.description, baseline.parameters)
    # structuredContent is not checked against the (violated) outputSchema
    result = reg.call_tool("rich__structured", {})
    assert result["structuredContent"] == {"n": 1}
    text, _ = format_result_for_model(result, None)
    assert json.loads(text)["structuredContent"] == {"n": 1}


@pytest.mark.req("MCP-DISC-13")
def test_cursors_are_opaque_and_every_listing_starts_afresh() -> None:
    cursors = [" page two ", '{"after": 3}', "ζ/3=="]
    sent: list[JSONObject] = []

    def requester(method: str, params: JSONObject) -> JSON:
        sent.append(dict(params))
        position = 0 if "cursor" not in params else cursors.index(str(params["cursor"])) + 1
        result: JSONObject = {"tools": [{"name": f"t{position}"}]}
        if position < len(cursors):
            result["nextCursor"] = cursors[position]
        return result

    assert len(list_all("s", requester, "tools/list", "tools", 100)) == 4
    assert sent == [{}] + [{"cursor": c} for c in cursors]  # passed back verbatim
    sent.clear()
    list_all("s", requester, "tools/list", "tools", 100)
    assert sent[0] == {}  # a later listing never resumes from an old cursor


@pytest.mark.req("MCP-DISC-13")
def test_a_refresh_lists_from_the_first_page(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(
        more_tools_config("--record", str(record), "--page-size", "10", "--fillers", "15")
    )
    reg.call_tool("peer__change_tools", {})
    wait_for(lambda: reg.connection("peer").tools_stale, "list_changed")
    assert reg.refresh_if_stale() is True
    listings = [m["params"] for m in _recorded(record) if m.get("method") == "tools/list"]
    starts = [i for i, params in enumerate(listings) if params == {}]
    assert len(starts) == 2 and len(listings) == 2 * starts[1]
    assert listings[: starts[1]] == listings[starts[1] :]  # the same walk, from the start


@pytest.mark.req("MCP-DISC-16")
def test_a_list_changed_during_a_listing_leaves_the_list_stale(connect: Connect) -> None:
    reg = connect(more_tools_config("--notify-during-list"))
    conn = reg.connection("peer")
    assert conn.tools_stale is True  # arrived while the connect's listing ran
    assert reg.refresh_if_stale() is True
    assert conn.tools_stale is True  # arrived again during the refresh's listing
    assert "peer__echo" in [t.prefixed_name for t in reg.tools()]


@pytest.mark.req("MCP-DISC-20")
def test_resource_and_prompt_list_changes_send_nothing(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(more_tools_config("--record", str(record)))
    before = len(_recorded(record))
    assert _text(reg.call_tool("peer__notify_lists", {})) == "lists changed"
    assert reg.connection("peer").tools_stale is False
    assert reg.refresh_if_stale() is False
    reg.call_tool("peer__echo", {"message": "after"})
    later = _recorded(record)[before:]
    assert [m["params"]["name"] for m in later] == ["notify_lists", "echo"]


@pytest.mark.req("MCP-NOTE-04")
def test_the_client_never_sends_unsupported_methods_or_progress_tokens(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(more_tools_config("--record", str(record)))
    reg.call_tool("peer__echo", {"message": "x"})
    reg.call_tool("peer__notify", {})  # the server logs and reports progress
    reg.list_resources()
    reg.list_resources("peer")
    reg.read_resource("peer__test://doc/1")
    reg.list_prompts()
    reg.get_prompt("peer__greet", {"who": "Ada"})
    reg.call_tool("peer__change_tools", {})
    wait_for(lambda: reg.connection("peer").tools_stale, "list_changed")
    reg.refresh_if_stale()
    sent = _recorded(record)
    methods = {m.get("method") for m in sent}
    assert {"resources/read", "prompts/get", "tools/call"} <= methods
    assert not methods & {"logging/setLevel", "resources/subscribe", "completion/complete"}
    assert "progressToken" not in json.dumps(sent)
