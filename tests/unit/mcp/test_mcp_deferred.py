"""Deferred loading: the section, `tool_search` and the activated set (mcp.md §9.1, §9.2), and a
built-in name winning over the same prefixed MCP name (§8.4)."""

from __future__ import annotations

import logging

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine.mcp_step import McpState, McpStepInput
from zeroclaw_ref.mcp.adapters import McpToolAdapter
from zeroclaw_ref.mcp.sections import ActivatedToolSet, ToolSearchTool, deferred_section, mcp_block
from zeroclaw_ref.policy.access import ToolAccessPolicy
from zeroclaw_ref.tools.base import ToolContext

CTX = ToolContext(cancel=CancelToken())
SECTION = (
    "## Deferred Tools\n\n"
    "The tools listed below are available but NOT yet loaded. To use any of them you MUST first "
    'call the `tool_search` tool to fetch their full schemas. Use "select:name1,name2" for '
    "exact tools or keywords to search. Once activated, the tools become callable for the rest "
    "of the conversation.\n\n"
    "<available-deferred-tools>\n"
    "filesystem__read_file\nfilesystem__write_file\n"
    "</available-deferred-tools>\n"
)


def _stubs() -> tuple[McpToolAdapter, ...]:
    fake = FakeMcp(
        {
            "filesystem": FakeServer(
                tools=[
                    ("read_file", 'Read the "complete" contents of a file'),
                    ("write_file", "Write a file"),
                    ("search_files", "Search files by name"),
                ],
                schemas={"read_file": {"type": "object", "properties": {"path": {"type": "string"}},
                                       "required": ["path"], "x": "é"}},
            ),
            "web": FakeServer(tools=[("search", "Search the web")]),
        }
    )  # fmt: skip
    return tuple(McpToolAdapter(r, fake, None) for r in fake.tools())


def _search(arguments: JSON) -> tuple[str, tuple[str, ...], bool]:
    activated = ActivatedToolSet()
    stubs = _stubs()
    result = ToolSearchTool(lambda: stubs, activated).execute(arguments, CTX)
    return (
        (result.output if result.success else result.error or ""),
        activated.names(),
        result.success,
    )


@pytest.mark.req("MCP-DEFER-04")
def test_the_deferred_section_is_the_fixed_text_with_one_name_per_line() -> None:
    assert deferred_section(["filesystem__read_file", "filesystem__write_file"]) == SECTION
    assert deferred_section([]) == ""


@pytest.mark.req("MCP-PIN-05")
def test_the_combined_block_keeps_its_separator_even_when_one_part_is_empty() -> None:
    assert mcp_block("D", "") == "D\n\n"
    assert mcp_block("", "P") == "\n\nP"
    assert mcp_block("", "") == ""


@pytest.mark.req("MCP-DEFER-09", "MCP-ERR-71")
@pytest.mark.parametrize("arguments", [{}, {"query": "  "}, {"query": 3}, "select:x"])
def test_a_missing_query_fails(arguments: JSON) -> None:
    assert _search(arguments) == ("query parameter is required", (), False)


@pytest.mark.req("MCP-DEFER-11", "MCP-DEFER-13", "MCP-DEFER-14", "MCP-ERR-73")
def test_select_mode_returns_full_schemas_and_the_names_not_found() -> None:
    output, activated, ok = _search(
        {"query": "select: filesystem__read_file ,,filesystem__nope,web__search"}
    )
    assert ok
    assert output == (
        "<functions>\n"
        '<function>{"name": "filesystem__read_file", "description": "Read the \\"complete\\" '
        'contents of a file", "parameters": {"type":"object","properties":{"path":{"type":'
        '"string"}},"required":["path"],"x":"é"}}</function>\n'
        '<function>{"name": "web__search", "description": "Search the web", "parameters": '
        '{"type":"object","properties":{"path":{"type":"string"}}}}</function>\n'
        "</functions>\n"
        "\nNot found: filesystem__nope"
    )
    assert activated == ("filesystem__read_file", "web__search")


@pytest.mark.req("MCP-DEFER-12", "MCP-DEFER-10")
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"query": "SEARCH files"}, ("filesystem__search_files", "filesystem__read_file",
                                     "filesystem__write_file", "web__search")),
        ({"query": "search files", "max_results": 2},
         ("filesystem__search_files", "filesystem__read_file")),
        ({"query": "search files", "max_results": True}, None),
        ({"query": "search files", "max_results": 2.0}, None),
        ({"query": "search files", "max_results": -1}, None),
        ({"query": "search", "max_results": 0}, ()),
    ],
)  # fmt: skip
def test_keyword_mode_ranks_by_matching_terms_then_registry_order(
    arguments: JSONObject, expected: tuple[str, ...] | None
) -> None:
    _, activated, ok = _search(arguments)
    assert ok
    default = ("filesystem__search_files", "filesystem__read_file", "filesystem__write_file",
               "web__search")  # fmt: skip
    assert activated == (default if expected is None else expected)


@pytest.mark.req("MCP-DEFER-14", "MCP-ERR-72")
def test_keyword_mode_without_a_match_succeeds_with_the_fixed_text() -> None:
    assert _search({"query": "zebra"}) == ("No matching deferred tools found.", (), True)


@pytest.mark.req("MCP-DEFER-15")
def test_activation_is_idempotent_and_the_hook_fires_once_per_tool() -> None:
    fired: list[str] = []
    activated = ActivatedToolSet(fired.append)
    stubs = _stubs()
    search = ToolSearchTool(lambda: stubs, activated)
    search.execute({"query": "select:web__search"}, CTX)
    search.execute({"query": "select:web__search,web__search"}, CTX)
    assert fired == ["web__search"] and activated.names() == ("web__search",)


@pytest.mark.req("MCP-DEFER-16")
def test_a_call_resolves_by_exact_name_or_a_unique_suffix() -> None:
    activated = ActivatedToolSet()
    for stub in _stubs():
        activated.activate(stub)
    resolved = activated.resolve("read_file")
    assert resolved is not None and resolved.name == "filesystem__read_file"
    assert activated.resolve("search") is not None  # only web__search ends in __search
    assert activated.resolve("x__read_file") is None
    extra = McpToolAdapter(
        FakeMcp({"other": FakeServer(tools=[("read_file", "")])}).tools()[0], FakeMcp({}), None
    )
    activated.activate(extra)
    assert activated.resolve("read_file") is None  # ambiguous suffix resolves to nothing


@pytest.mark.req("MCP-DISC-19", "MCP-DEFER-17")
def test_a_refresh_removes_vanished_tools_from_the_activated_set() -> None:
    activated = ActivatedToolSet()
    stubs = _stubs()
    for stub in stubs:
        activated.activate(stub)
    activated.retain(stubs[1:2])
    assert activated.names() == ("filesystem__write_file",)


OPEN = ToolAccessPolicy(None, frozenset(), None)


def _fake() -> FakeMcp:
    return FakeMcp(
        {
            "fs": FakeServer(
                tools=[("read_file", "Read a file"), ("write_file", "Write a file")],
                resources=[],
                prompts=[],
            ),
            "web": FakeServer(tools=[("search", "Search the web for files")]),
        }
    )


def _state(
    access: ToolAccessPolicy, deferred: bool, reserved: frozenset[str] = frozenset()
) -> McpState:
    step = McpStepInput(
        servers=(), deferred_loading=deferred, listing=False, groups=(), workspace=None
    )
    return McpState(_fake(), access, step, reserved)


# --- naming and deferred stubs -----------------------------------------------------------


@pytest.mark.req("MCP-NAME-06")
def test_a_built_in_name_wins_over_the_same_prefixed_mcp_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        state = _state(OPEN, deferred=False, reserved=frozenset({"fs__read_file"}))
    assert [t.name for t in state.registered()] == ["fs__write_file", "web__search"]
    assert "fs__read_file" in caplog.text and any(
        r.levelno == logging.WARNING for r in caplog.records
    )


@pytest.mark.req("MCP-DEFER-05")
def test_denied_stubs_are_invisible_to_the_section_and_to_tool_search() -> None:
    access = ToolAccessPolicy(None, frozenset({"fs__read_file"}), None)
    state = _state(access, deferred=True)
    assert state.deferred_names() == ("fs__write_file", "web__search")
    assert "fs__read_file" not in state.deferred_text()
    [search] = state.registered()
    assert search.name == "tool_search"
    selected = search.execute({"query": "select:fs__read_file,fs__write_file"}, CTX)
    assert selected.success and selected.output.endswith("\nNot found: fs__read_file")
    assert state.activated is not None
    assert state.activated.names() == ("fs__write_file",)
    # `read` and `file` would rank the denied stub first; it takes no slot
    ranked = search.execute({"query": "read file", "max_results": 1}, CTX)
    assert '"name": "fs__write_file"' in ranked.output and "fs__read_file" not in ranked.output
    assert state.activated.resolve("fs__read_file") is None
    # with everything denied there is nothing to search, and no tool_search at all
    every = frozenset({"fs__read_file", "fs__write_file", "web__search"})
    none = _state(ToolAccessPolicy(None, every, None), deferred=True)
    assert none.registered() == () and none.deferred_text() == ""
