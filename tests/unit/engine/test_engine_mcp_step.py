"""Step 4 of `assemble()` and the MCP parts of `resolve()` (policy.md §5.2, §6.3; mcp.md §9,
§10.3), driven through `resolve()` with a fake registry in place of real connections; and MCP
tools under the agent's policy: approval rules on prefixed names, exposure groups, delegation
and materialised results (mcp.md §8.4, §9, §11.2)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import (
    DEFAULT_AUTO_APPROVE,
    PROVIDER_KINDS,
    ConfigSnapshot,
    McpServerConfig,
)
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine import mcp_step
from zeroclaw_ref.engine import resolve as resolve_module
from zeroclaw_ref.engine.events import ToolFinished, TurnEvent
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.policy.approvals import ApprovalManager, Requirement, runtime_denial_text
from zeroclaw_ref.tools.catalogue import CATALOGUE_ORDER

BUILTINS = tuple(n for n in CATALOGUE_ORDER if n not in ("deliver_file", "delegate"))
CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
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
pinned_resources = ["file:///hand.md", "file:///missing.md"]
[[mcp.servers]]
name = "web"
command = "fake"
[mcp_bundles.b]
servers = ["fs", "web"]
"""


class Connector:
    """Stands in for `connect_servers`: records what was asked and hands out FakeMcp."""

    def __init__(self) -> None:
        self.opened: list[FakeMcp] = []
        self.asked: list[tuple[str, ...]] = []

    def __call__(self, servers: tuple[McpServerConfig, ...], workspace: Path | None) -> FakeMcp:
        self.asked.append(tuple(s.name for s in servers))
        fake = FakeMcp(
            {
                "fs": FakeServer(
                    tools=[("read_file", "Read a file"), ("write_file", "Write"),
                           ("file_read", "clashes with nothing")],
                    resources=[],
                    contents={"file:///hand.md": {"contents": [
                        {"uri": "file:///hand.md", "mimeType": "text/markdown", "text": "# Hand"}
                    ]}},
                ),
                "web": FakeServer(tools=[("search", "Search the web")]),
            }
        )  # fmt: skip
        self.opened.append(fake)
        return fake


@pytest.fixture
def connector(monkeypatch: pytest.MonkeyPatch) -> Iterator[Connector]:
    fake = Connector()
    monkeypatch.setattr(mcp_step, "connect_servers", fake)
    yield fake


def _config(
    root: Path, profile: str = "", deferred: bool = False, runtime: str = ""
) -> ConfigSnapshot:
    cfg = root / "cfg"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "model.json").write_text(json.dumps({"turns": [{"chunks": ["ok"]}]}))
    text = CONFIG.format(profile=profile, deferred=str(deferred).lower(), runtime=runtime)
    (cfg / "config.toml").write_text(text)
    return load_config(cfg, root / "data", {})


def _cli(config: ConfigSnapshot) -> ResolvedAgentExecution:
    return resolve(config, "a", PathRequest("cli-run"))


@pytest.mark.req("POL-ASSEMBLE-12", "POL-ASSEMBLE-18", "POL-ASSEMBLE-08", "MCP-NAME-08")
@pytest.mark.req("MCP-DEFER-01", "MCP-RES-01", "POL-RESOLVE-16")
def test_eager_mode_registers_capability_tools_then_mcp_tools_in_grant_order(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["fs__write_file"]'))
    assert execution.io.tools.names == (
        *BUILTINS, "mcp_resources", "mcp_prompts", "fs__read_file", "fs__file_read", "web__search",
    )  # fmt: skip
    snap = execution.snapshot()
    assert snap["tools.capability"] == ["mcp_prompts", "mcp_resources"]
    assert snap["tools.mcp"] == ["fs__file_read", "fs__read_file", "web__search"]
    assert snap["tools.mcp_deferred"] == [] and snap["tools.tool_search"] is False
    assert (snap["mcp.connected"], snap["mcp.mode"]) == (True, "eager")
    assert snap["mcp.granted_servers"] == ["fs", "web"]
    assert connector.asked == [("fs", "web")]


@pytest.mark.req("POL-ACCESS-04", "MCP-POL-01", "MCP-POL-02")
def test_a_non_empty_allowlist_admits_mcp_names_but_not_the_plain_capability_names(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'allowed_tools = ["file_read", "mcp_prompts"]'))
    assert execution.io.tools.names == (
        "file_read", "mcp_prompts", "fs__read_file", "fs__write_file", "fs__file_read",
        "web__search",
    )  # fmt: skip


@pytest.mark.req("POL-ASSEMBLE-17", "POL-ASSEMBLE-08")
def test_deny_all_mints_an_empty_registry_and_contacts_no_server(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, "deny_all_tools = true"))
    assert execution.io.tools.names == ()
    assert (execution.io.deferred_section, execution.io.pinned_section) == ("", "")
    assert connector.asked == []


@pytest.mark.req("POL-PATH-04", "POL-BUNDLE-05", "POL-ASSEMBLE-08")
def test_an_acp_session_without_opt_in_never_connects(tmp_path: Path, connector: Connector) -> None:
    class Approver:
        def approve(self, tool: str, arguments: object, cancel: object) -> object:
            raise AssertionError

    ws = tmp_path / "session"
    ws.mkdir()
    execution = resolve(
        _config(tmp_path),
        "a",
        PathRequest("acp", approver=Approver(), session_workspace=ws),  # type: ignore[arg-type]
    )
    assert connector.asked == []
    snap = execution.snapshot()
    # the mode stays the configured one on every path (policy.md §7.3); only the connection differs
    assert (snap["mcp.connected"], snap["mcp.mode"], snap["tools.capability"]) == (
        False, "eager", [],
    )  # fmt: skip


@pytest.mark.req("POL-ASSEMBLE-10", "MCP-DEFER-02", "MCP-DEFER-03", "MCP-DEFER-06")
@pytest.mark.req("POL-RESOLVE-14", "MCP-PIN-04", "MCP-PIN-05")
def test_deferred_mode_registers_tool_search_and_puts_names_in_the_prompt(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["fs__write_file"]', deferred=True))
    names = execution.io.tools.names
    assert names[-3:] == ("mcp_resources", "mcp_prompts", "tool_search")
    snap = execution.snapshot()
    assert snap["tools.mcp"] == [] and snap["tools.tool_search"] is True
    assert snap["tools.mcp_deferred"] == ["fs__file_read", "fs__read_file", "web__search"]
    assert snap["mcp.mode"] == "deferred"
    deferred = execution.io.deferred_section
    assert deferred.endswith(
        "<available-deferred-tools>\nfs__read_file\nfs__file_read\nweb__search\n"
        "</available-deferred-tools>\n"
    )
    pinned = execution.io.pinned_section
    assert pinned == (
        "## Pinned MCP Resources\n\n"
        '<mcp-resource server="fs" uri="fs__file:///hand.md" mime="text/markdown" '
        'trust="untrusted-external">\n# Hand\n</mcp-resource>\n'
    )
    assert execution.io.system_prompt.endswith(f"\n\n{deferred}\n\n{pinned}")
    assert execution.io.activated is not None and execution.io.activated.names() == ()


# How each provider kind is configured; none of them parses tool calls out of text.
PROVIDER_TABLES = {
    "demo": 'kind = "demo"',
    "scripted": 'kind = "scripted"\nscript = "model.json"',
    "openai": 'kind = "openai"\nmodel = "m"\napi_key = "k"',
    "anthropic": 'kind = "anthropic"\nmodel = "m"\napi_key = "k"',
}


@pytest.mark.req("MCP-PIN-06", "MCP-PIN-05", "POL-MCPT-01")
@pytest.mark.parametrize("kind", PROVIDER_KINDS)
def test_every_provider_kind_keeps_the_combined_mcp_block(
    tmp_path: Path, connector: Connector, kind: str
) -> None:
    """MCP-PIN-06 drops the block only under strict text-tool parsing for a model without
    native tool calls; every kind the reference knows calls tools natively, so no kind may
    lose it (a new kind without native calls must add the omission and change this table)."""
    config = _config(tmp_path, deferred=True)
    text = (config.config_dir / "config.toml").read_text()
    table = 'kind = "scripted"\nscript = "model.json"'
    assert table in text
    (config.config_dir / "config.toml").write_text(text.replace(table, PROVIDER_TABLES[kind]))
    execution = _cli(load_config(config.config_dir, tmp_path / "data", {}))
    deferred, pinned = execution.io.deferred_section, execution.io.pinned_section
    assert deferred and pinned
    assert execution.io.system_prompt.endswith(f"\n\n{deferred}\n\n{pinned}")
    assert "tool_search" in execution.io.tools.names  # the tools go to the model as tools


@pytest.mark.req("POL-ASSEMBLE-16", "MCP-DEFER-08")
def test_excluding_tool_search_clears_the_deferred_section_but_keeps_the_pins(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["tool_search"]', deferred=True))
    assert "tool_search" not in execution.io.tools.names
    assert execution.io.deferred_section == ""
    assert execution.io.pinned_section.startswith("## Pinned MCP Resources")
    assert execution.io.system_prompt.endswith("\n\n\n\n" + execution.io.pinned_section)


@pytest.mark.req("POL-ASSEMBLE-11", "MCP-DEFER-07", "POL-PATH-11")
def test_listing_mode_presents_admitted_stubs_as_ordinary_tools(
    tmp_path: Path, connector: Connector
) -> None:
    execution = resolve(_config(tmp_path, deferred=True), "a", PathRequest("gateway-tools"))
    names = execution.io.tools.names
    assert "tool_search" not in names
    assert names[-4:] == ("fs__read_file", "fs__write_file", "fs__file_read", "web__search")
    assert execution.io.deferred_section == ""
    assert execution.snapshot()["mcp.mode"] == "listing"


@pytest.mark.req("MCP-TFG-07")
def test_always_groups_pre_activate_in_deferred_mode_and_leave_the_section(
    tmp_path: Path, connector: Connector
) -> None:
    runtime = (
        '[[runtime_profiles.r.tool_filter_groups]]\nmode = "always"\ntools = ["web__*"]\n'
        '[[runtime_profiles.r.tool_filter_groups]]\nmode = "dynamic"\ntools = ["fs__*"]\n'
        'keywords = ["file"]\n'
    )
    execution = _cli(_config(tmp_path, deferred=True, runtime=runtime))
    assert execution.io.activated is not None
    assert execution.io.activated.names() == ("web__search",)
    assert "web__search" not in execution.io.deferred_section
    assert "fs__read_file\n" in execution.io.deferred_section


@pytest.mark.req("MCP-PIN-01", "MCP-PIN-02", "MCP-PIN-03")
def test_pins_are_read_once_and_denied_or_failed_pins_are_skipped(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["fs__file:///hand.md"]'))
    assert execution.io.pinned_section == ""
    reads = [c for c in connector.opened[0].calls if c[0] == "resources/read"]
    assert reads == [("resources/read", "fs__file:///missing.md")]  # the denied pin is not read


@pytest.mark.req("POL-RESOLVE-15", "POL-ASSEMBLE-19")
def test_close_releases_the_connections_once(tmp_path: Path, connector: Connector) -> None:
    execution = _cli(_config(tmp_path))
    execution.close()
    execution.close()
    assert connector.opened[0].closed == 1


@pytest.mark.req("POL-RESOLVE-09")
def test_a_failure_after_assembly_releases_the_connections(
    tmp_path: Path, connector: Connector, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("prompt failed")

    monkeypatch.setattr(resolve_module, "build_system_prompt", broken)
    with pytest.raises(RuntimeError):
        _cli(_config(tmp_path))
    assert connector.opened[0].closed == 1


@pytest.mark.req("MCP-DISC-18", "POL-ASSEMBLE-02", "MCP-DISC-19")
def test_a_refresh_between_turns_rebuilds_the_mcp_part_under_the_same_policy(
    tmp_path: Path, connector: Connector
) -> None:
    execution = _cli(_config(tmp_path, 'excluded_tools = ["web__new_denied"]'))
    fake = connector.opened[0]
    fake.servers["web"].tools = [("new_denied", ""), ("fetch", "Fetch")]
    execution.io.tools.refresh_mcp()
    assert execution.io.tools.names[-4:] == (
        "fs__read_file", "fs__write_file", "fs__file_read", "web__fetch",
    )  # fmt: skip
    assert "web__fetch" in execution.snapshot()["tools.mcp"]
    assert execution.io.tools.get("web__search") is None


@pytest.mark.req("CFG-RUNTIME-02")
def test_an_always_group_never_admits_a_denied_tool(tmp_path: Path, connector: Connector) -> None:
    runtime = '[[runtime_profiles.r.tool_filter_groups]]\nmode = "always"\ntools = ["fs__*"]\n'
    config = _config(
        tmp_path, 'excluded_tools = ["fs__write_file"]', deferred=True, runtime=runtime
    )
    execution = _cli(config)
    assert execution.io.activated is not None
    activated = execution.io.activated.names()
    assert "fs__read_file" in activated and "fs__write_file" not in activated
    assert "fs__write_file" not in execution.io.tools.names


GROUP = "[[runtime_profiles.r.tool_filter_groups]]\n"
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


# --- the agent: configuration, approval and exposure -------------------------------------

POLICY_CONFIG = """
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
    text = POLICY_CONFIG.format(risk=risk, runtime=runtime, deferred=str(deferred).lower())
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
