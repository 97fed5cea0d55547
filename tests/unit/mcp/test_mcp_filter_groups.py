"""`tool_filter_groups` and the engine's view of MCP tools per turn (mcp.md §9.3;
policy.md POL-ENGINE-03, POL-ENGINE-05, POL-APPROVE-14), with a fake registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from tests.helpers.internals import model_requests
from tests.helpers.json_at import list_at
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import McpServerConfig, ToolFilterGroup
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine import mcp_step
from zeroclaw_ref.engine.events import ToolFinished, TurnEvent
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.exposure import exposed_by_groups, pattern_matches
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.engine.turn import TurnEngine

GROUPS = (
    ToolFilterGroup("always", ("filesystem__*",)),
    ToolFilterGroup("dynamic", ("parallel__*",), ("search", "web", "url")),
)
NAMES = ("filesystem__read", "parallel__search", "other__x", "mcp_resources")


@pytest.mark.req("MCP-TFG-03")
@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("fs__*", "fs__read", True),
        ("fs__*", "fs__", True),
        ("*", "anything", True),
        ("*__read*", "fs__read_file", True),
        ("fs__read", "fs__read_file", False),
        ("FS__*", "fs__read", False),
        ("f?__*", "fs__read", False),
        ("a*b*c", "aXbYc", True),
        ("a*b*c", "aXbY", False),
        ("fs.*", "fsx", False),
    ],
)
def test_patterns_match_whole_names_with_star_only(pattern: str, name: str, expected: bool) -> None:
    assert pattern_matches(pattern, name) is expected


@pytest.mark.req("MCP-TFG-02", "MCP-TFG-03")
def test_the_seed_example_exposes_per_message() -> None:
    assert exposed_by_groups(GROUPS, NAMES, "Search the web for MCP") == {
        "filesystem__read", "parallel__search",
    }  # fmt: skip
    assert exposed_by_groups(GROUPS, NAMES, "Summarise notes.md") == {"filesystem__read"}
    # keyword matching is ASCII case-insensitive and by substring
    assert "parallel__search" in exposed_by_groups(GROUPS, NAMES, "a WEBSITE")


CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
level = "full"
{profile}
[runtime_profiles.r]
{runtime}
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["b"]
[mcp]
deferred_loading = {deferred}
[[mcp.servers]]
name = "fs"
command = "fake"
[[mcp.servers]]
name = "web"
command = "fake"
[mcp_bundles.b]
servers = ["fs", "web"]
"""
RUNTIME = (
    '[[runtime_profiles.r.tool_filter_groups]]\nmode = "always"\ntools = ["fs__*"]\n'
    '[[runtime_profiles.r.tool_filter_groups]]\nmode = "dynamic"\ntools = ["web__*"]\n'
    'keywords = ["web"]\n'
)


def _call(name: str, call_id: str, **arguments: JSON) -> JSONObject:
    return {"id": call_id, "name": name, "arguments": dict(arguments)}


def _execution(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    turns: list[JSONObject],
    runtime: str = RUNTIME,
    deferred: bool = False,
    profile: str = "",
) -> tuple[ResolvedAgentExecution, FakeMcp]:
    fake = FakeMcp(
        {
            "fs": FakeServer(tools=[("read_file", "Read a file")]),
            "web": FakeServer(tools=[("search", "Search the web")]),
        }
    )

    def connect(servers: tuple[McpServerConfig, ...], workspace: Path | None) -> FakeMcp:
        return fake

    monkeypatch.setattr(mcp_step, "connect_servers", connect)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "model.json").write_text(json.dumps({"turns": turns}))
    text = CONFIG.format(runtime=runtime, deferred=str(deferred).lower(), profile=profile)
    (cfg / "config.toml").write_text(text)
    config = load_config(cfg, tmp_path / "data", {})
    return resolve(config, "a", PathRequest("cli-run")), fake


def _turn(execution: ResolvedAgentExecution, message: str) -> list[TurnEvent]:
    events: list[TurnEvent] = []
    TurnEngine(SequentialIds()).run_turn(execution, [], message, events.append, CancelToken())
    return events


def _offered(execution: ResolvedAgentExecution) -> list[list[str]]:
    offered = [list_at(r, "tools") for r in model_requests(execution)]
    return [[n for n in tools if isinstance(n, str) and ("__" in n or n.startswith("mcp_"))]
            for tools in offered]  # fmt: skip


@pytest.mark.req("MCP-TFG-02", "MCP-TFG-04", "MCP-TFG-05", "POL-ENGINE-03", "MCP-NAME-09")
def test_hidden_mcp_tools_are_not_offered_and_are_refused_for_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns: list[JSONObject] = [
        {"tool_calls": [_call("web__search", "c1", q="x", approved=True)]},
        {"chunks": ["one"]},
        {"tool_calls": [_call("web__search", "c2", q="y")]},
        {"chunks": ["two"]},
    ]
    execution, fake = _execution(tmp_path, monkeypatch, turns)
    first = _turn(execution, "look on the WEB")
    second = _turn(execution, "summarise notes")
    offered = _offered(execution)
    assert offered[0] == ["fs__read_file", "web__search"]  # capability tools match no group
    assert offered[2] == ["fs__read_file"]
    assert "file_read" in list_at(model_requests(execution)[2], "tools")
    # [POL-APPROVE-14] `approved` never reaches the server
    assert fake.calls == [("web__search", {"q": "x"})]
    assert next(e.output for e in first if isinstance(e, ToolFinished)).startswith("{")
    refused = [e for e in second if isinstance(e, ToolFinished)]
    assert refused[0].output == "Error: Tool not available in this turn: web__search"


@pytest.mark.req("MCP-TFG-01")
def test_without_groups_every_mcp_tool_is_offered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution, _ = _execution(tmp_path, monkeypatch, [{"chunks": ["ok"]}], runtime="")
    _turn(execution, "hello")
    assert _offered(execution)[0] == [
        "mcp_resources", "mcp_prompts", "fs__read_file", "web__search",
    ]  # fmt: skip


@pytest.mark.req("MCP-DEFER-02", "MCP-DEFER-15", "MCP-DEFER-16", "MCP-TFG-07", "POL-ENGINE-05")
def test_deferred_tools_become_callable_after_tool_search_including_by_suffix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns: list[JSONObject] = [
        {"tool_calls": [_call("search", "c0")]},
        {"tool_calls": [_call("tool_search", "c1", query="select:web__search")]},
        {"tool_calls": [_call("search", "c2", q="z", approved=True)]},
        {"chunks": ["done"]},
    ]
    execution, fake = _execution(tmp_path, monkeypatch, turns, deferred=True)
    events = _turn(execution, "hi")
    outputs = [e.output for e in events if isinstance(e, ToolFinished)]
    assert outputs[0] == "Error: Unknown tool: search"
    assert outputs[1].startswith('<functions>\n<function>{"name": "web__search"')
    assert fake.calls == [("web__search", {"q": "z"})]
    offered = _offered(execution)
    # fs__read_file was activated up front by its `always` group; dynamic groups do nothing
    assert offered[0] == ["mcp_resources", "mcp_prompts", "fs__read_file"]
    assert offered[2] == ["mcp_resources", "mcp_prompts", "fs__read_file", "web__search"]


@pytest.mark.req("MCP-DEFER-15", "POL-ENGINE-04")
def test_an_activated_tool_stays_under_the_engine_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns: list[JSONObject] = [{"chunks": ["ok"]}]
    execution, _ = _execution(
        tmp_path, monkeypatch, turns, runtime="", deferred=True,
        profile='excluded_tools = ["mcp_prompts"]',
    )  # fmt: skip
    _turn(execution, "hi")
    assert _offered(execution)[0] == ["mcp_resources"]
