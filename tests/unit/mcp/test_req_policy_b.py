"""MCP tools under the agent's policy: naming clashes, deferred stubs, approval, exposure
groups, delegation and configuration checks (mcp.md §8.4, §9, §11.2, §13), with the fake
registry of `tests/helpers/fake_mcp.py` standing in for the client."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import DEFAULT_AUTO_APPROVE, ConfigError, McpServerConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine import mcp_step
from zeroclaw_ref.engine.events import ToolFinished, TurnEvent
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.mcp_step import McpState, McpStepInput
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.policy.access import ToolAccessPolicy
from zeroclaw_ref.policy.approvals import ApprovalManager, Requirement, runtime_denial_text
from zeroclaw_ref.tools.base import ToolContext

OPEN = ToolAccessPolicy(None, frozenset(), None)
GROUP = "[[runtime_profiles.r.tool_filter_groups]]\n"
CTX = ToolContext(cancel=CancelToken())
PNG64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="  # noqa: E501


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


# --- the agent: configuration, approval and exposure -------------------------------------

CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
{risk}
[risk_profiles.narrow]
level = "full"
excluded_tools = ["mcp_prompts"]
[runtime_profiles.r]
{runtime}
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["b"]
delegates = ["child"]
[agents.child]
model_provider = "s"
risk_profile = "narrow"
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


def _call(name: str, call_id: str, **arguments: JSON) -> JSONObject:
    return {"id": call_id, "name": name, "arguments": dict(arguments)}


def _setup(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    turns: list[JSONObject],
    *,
    risk: str = 'level = "full"',
    runtime: str = "",
    deferred: bool = False,
) -> tuple[object, FakeMcp]:
    fake = _fake()

    def connect(servers: tuple[McpServerConfig, ...], workspace: Path | None) -> FakeMcp:
        return fake

    monkeypatch.setattr(mcp_step, "connect_servers", connect)
    cfg = tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "model.json").write_text(json.dumps({"turns": turns}))
    text = CONFIG.format(risk=risk, runtime=runtime, deferred=str(deferred).lower())
    (cfg / "config.toml").write_text(text)
    return load_config(cfg, tmp_path / "data", {}), fake


def _execution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, turns: list[JSONObject], **kw: object
) -> tuple[ResolvedAgentExecution, FakeMcp]:
    config, fake = _setup(tmp_path, monkeypatch, turns, **kw)  # type: ignore[arg-type]
    return resolve(config, "a", PathRequest("cli-run")), fake  # type: ignore[arg-type]


def _turn(execution: ResolvedAgentExecution, message: str) -> list[TurnEvent]:
    events: list[TurnEvent] = []
    TurnEngine(SequentialIds()).run_turn(execution, [], message, events.append, CancelToken())
    return events


def _finished(events: list[TurnEvent]) -> list[ToolFinished]:
    return [e for e in events if isinstance(e, ToolFinished)]


def _offered(execution: ResolvedAgentExecution) -> list[list[str]]:
    requests: list[JSONObject] = execution.model.provider.requests  # type: ignore[attr-defined]
    return [[n for n in r["tools"] if "__" in n or n.startswith(("mcp_", "tool_"))]  # type: ignore[union-attr]
            for r in requests]  # fmt: skip


@pytest.mark.req("MCP-DEFER-18", "MCP-POL-04")
def test_tool_search_is_auto_approved_but_what_it_activates_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "tool_search" in DEFAULT_AUTO_APPROVE
    turns: list[JSONObject] = [
        {"tool_calls": [_call("tool_search", "c1", query="select:web__search")]},
        {"tool_calls": [_call("web__search", "c2", q="x")]},
        {"chunks": ["done"]},
    ]
    # supervised, non-interactive, and an auto_approve list that does not name tool_search
    risk = 'level = "supervised"\nauto_approve = ["calculator"]'
    execution, fake = _execution(tmp_path, monkeypatch, turns, risk=risk, deferred=True)
    assert execution.io.interaction == "none"
    assert execution.io.approval.requirement("tool_search") is Requirement.APPROVED
    assert execution.io.approval.requirement("web__search") is Requirement.PROMPT
    finished = _finished(_turn(execution, "find it"))
    assert finished[0].success and finished[0].output.startswith(
        '<functions>\n<function>{"name": "web__search"'
    )
    assert not finished[1].success
    assert finished[1].output == runtime_denial_text("web__search")
    assert fake.calls == []  # the activated tool never reached the server


@pytest.mark.req("MCP-POL-03")
def test_approval_rules_match_prefixed_mcp_names() -> None:
    def need(level: str, auto: tuple[str, ...], ask: tuple[str, ...], name: str) -> Requirement:
        return ApprovalManager(level, auto, ask, "none", None).requirement(name)

    auto = ("filesystem__read_file",)
    assert need("supervised", auto, (), "filesystem__read_file") is Requirement.APPROVED
    assert need("supervised", auto, (), "filesystem__write_file") is Requirement.PROMPT
    assert need("supervised", auto, (), "read_file") is Requirement.PROMPT
    assert need("supervised", ("*",), (), "any__tool") is Requirement.APPROVED
    for ask in (("filesystem__read_file",), ("*",)):
        assert need("supervised", auto, ask, "filesystem__read_file") is Requirement.PROMPT
        assert need("full", ("*",), ask, "filesystem__read_file") is Requirement.PROMPT
        assert need("read_only", (), ask, "filesystem__read_file") is Requirement.NOT_REQUIRED
    assert need("full", (), ("other__x",), "filesystem__read_file") is Requirement.APPROVED


@pytest.mark.req("MCP-POL-03")
def test_an_auto_approved_prefixed_name_runs_while_its_neighbour_is_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns: list[JSONObject] = [
        {"tool_calls": [_call("fs__read_file", "c1", path="a"), _call("fs__write_file", "c2")]},
        {"chunks": ["done"]},
    ]
    risk = 'level = "supervised"\nauto_approve = ["fs__read_file"]'
    execution, fake = _execution(tmp_path, monkeypatch, turns, risk=risk)
    finished = {f.id: f for f in _finished(_turn(execution, "go"))}
    assert (finished["c1"].success, finished["c2"].success) == (True, False)
    assert finished["c2"].output == runtime_denial_text("fs__write_file")
    assert fake.calls == [("fs__read_file", {"path": "a"})]


@pytest.mark.req("MCP-POL-06")
def test_approval_exposure_and_capability_stay_separate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns: list[JSONObject] = [
        {"tool_calls": [_call("fs__read_file", "c1", path="a")]},
        {"chunks": ["one"]},
        {"tool_calls": [_call("web__search", "c2", q="x")]},
        {"chunks": ["two"]},
    ]
    runtime = (
        GROUP + 'mode = "always"\ntools = ["fs__*"]\n'
        + GROUP + 'mode = "dynamic"\ntools = ["web__*"]\nkeywords = ["web"]\n'
    )  # fmt: skip
    risk = 'level = "supervised"\nauto_approve = ["fs__write_file", "web__search"]'
    execution, fake = _execution(tmp_path, monkeypatch, turns, risk=risk, runtime=runtime)
    first = _finished(_turn(execution, "search the web"))
    second = _finished(_turn(execution, "nothing relevant"))
    offered = _offered(execution)
    # auto_approve hides nothing it does not name
    assert {"fs__read_file", "fs__write_file", "web__search"} <= set(offered[0])
    # a group exposes fs__read_file but does not approve it
    assert first[0].output == runtime_denial_text("fs__read_file")
    # approval does not expose: web__search is auto-approved, yet hidden this turn
    assert "web__search" not in offered[2] and "fs__read_file" in offered[2]
    assert second[0].output == "Error: Tool not available in this turn: web__search"
    assert fake.calls == []


@pytest.mark.req("MCP-TFG-06", "MCP-POL-06")
@pytest.mark.parametrize("deferred", [False, True])
def test_groups_never_reveal_a_tool_the_policy_denies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deferred: bool
) -> None:
    turns: list[JSONObject] = [
        {"tool_calls": [_call("web__search", "c1", q="x")]},
        {"chunks": ["done"]},
    ]
    runtime = GROUP + 'mode = "always"\ntools = ["*"]\n'
    risk = 'level = "full"\nexcluded_tools = ["web__search"]'
    execution, fake = _execution(
        tmp_path, monkeypatch, turns, risk=risk, runtime=runtime, deferred=deferred
    )
    finished = _finished(_turn(execution, "use the web"))
    assert all("web__search" not in names for names in _offered(execution))
    assert "fs__read_file" in _offered(execution)[0]  # the group still exposes allowed tools
    assert not finished[0].success and "web__search" in finished[0].output
    assert fake.calls == []
    if deferred:
        assert execution.io.activated is not None
        assert "web__search" not in execution.io.activated.names()
        assert "web__search" not in execution.io.deferred_section


@pytest.mark.req("MCP-POL-07")
def test_delegation_narrows_capability_tools_and_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = _setup(tmp_path, monkeypatch, [{"chunks": ["x"]}])
    allowed = frozenset({"delegate", "mcp_resources", "mcp_prompts", "fs__read_file"})
    parent = resolve(config, "a", PathRequest("cron", caller_allowed=allowed))  # type: ignore[arg-type]
    parent_names = set(parent.io.tools.names)
    assert {"mcp_resources", "mcp_prompts", "fs__read_file"} <= parent_names
    assert not {"fs__write_file", "web__search"} & parent_names
    child = resolve(config, "child", PathRequest("delegate", parent=parent))  # type: ignore[arg-type]
    names = set(child.io.tools.names)
    # the parent's per-run list still bounds the child, and the child's own profile narrows more
    assert "fs__read_file" in names and "mcp_resources" in names
    assert "mcp_prompts" not in names  # excluded by the child's own risk profile
    assert not {"fs__write_file", "web__search"} & names  # servers' other tools stay out
    unbounded = resolve(config, "child", PathRequest("cli-run"))  # type: ignore[arg-type]
    assert {"fs__write_file", "web__search"} <= set(unbounded.io.tools.names)
    for execution in (child, unbounded, parent):
        execution.io.tools.close_mcp()


# --- results ------------------------------------------------------------------------------


@pytest.mark.req("MCP-RESULT-10")
def test_a_materialised_image_is_not_delivered_to_the_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns: list[JSONObject] = [
        {"tool_calls": [_call("fs__read_file", "c1", path="a.png")]},
        {"chunks": ["done"]},
    ]
    execution, fake = _execution(tmp_path, monkeypatch, turns)
    fake.result = {"content": [{"type": "image", "data": PNG64, "mimeType": "image/png"}]}
    [finished] = _finished(_turn(execution, "show it"))
    assert finished.success and finished.artifact is None  # nothing goes out to the client
    path = Path(json.loads(finished.output)["content"][0]["text"])
    assert path.read_bytes() == base64.b64decode(PNG64)  # the file itself was written
    assert path.parent.name == "uploads"


# --- configuration ------------------------------------------------------------------------


def _errors(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, tmp_path / "data", {})
    return list(info.value.lines)


@pytest.mark.req("MCP-TFG-08")
def test_an_empty_group_pattern_is_rejected(tmp_path: Path) -> None:
    text = GROUP + 'mode = "always"\ntools = ["fs__*", ""]\n'
    assert "runtime_profiles.r.tool_filter_groups[0].tools contains empty pattern" in _errors(
        tmp_path, text
    )


@pytest.mark.req("MCP-TFG-09")
def test_a_dynamic_group_needs_keywords(tmp_path: Path) -> None:
    text = (
        GROUP + 'mode = "always"\ntools = ["a*"]\n' + GROUP + 'mode = "dynamic"\ntools = ["b*"]\n'
    )
    errors = _errors(tmp_path, text)
    assert 'runtime_profiles.r.tool_filter_groups[1] has mode = "dynamic" but no keywords' in errors
    assert not any("tool_filter_groups[0]" in line for line in errors)


@pytest.mark.req("MCP-NAME-07")
def test_server_names_must_be_unique_ignoring_case(tmp_path: Path) -> None:
    text = (
        '[[mcp.servers]]\nname = "Docs"\ncommand = "x"\n'
        '[[mcp.servers]]\nname = "docs"\ncommand = "y"\n'
    )
    assert "mcp.servers contains duplicate name: docs" in _errors(tmp_path, text)
    (tmp_path / "config.toml").write_text(text.replace('"docs"', '"notes"'), encoding="utf-8")
    loaded = load_config(tmp_path, tmp_path / "data", {})
    assert [s.name for s in loaded.mcp.servers] == ["Docs", "notes"]
