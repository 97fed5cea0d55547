"""The resolution seam `resolve()` and the per-path table (policy.md §6, §7.2)."""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.approvers import OkApprover
from tests.helpers.snapshot_keys import SNAPSHOT_KEYS
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine import resolve as resolve_module
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import (
    PATH_PROFILES,
    PATHS,
    PathRequest,
    ResolveError,
    add_resolve_observer,
    remove_resolve_observer,
    resolve,
)
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.store import memory as memory_module
from zeroclaw_ref.tools import skills as skills_module
from zeroclaw_ref.tools.catalogue import MEMORY_TOOLS

BASE = """
[providers.s]
kind = "scripted"
script = "model.json"
{provider_extra}
[risk_profiles.p]
{profile}
[runtime_profiles.r]
{runtime}
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
{agent}
[agents.off]
enabled = false
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
"""


def _write(
    root: Path,
    *,
    profile: str = "",
    runtime: str = "",
    agent: str = "",
    provider_extra: str = "",
    turns: list[JSONObject] | None = None,
) -> Path:
    cfg = root / "cfg"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "model.json").write_text(json.dumps({"turns": turns or [{"chunks": ["ok"]}]}))
    (cfg / "config.toml").write_text(
        BASE.format(profile=profile, runtime=runtime, agent=agent, provider_extra=provider_extra)
    )
    return cfg


def _load(cfg: Path) -> ConfigSnapshot:
    return load_config(cfg, cfg.parent / "data", {})


def _session_ws(root: Path) -> Path:
    ws = root / "session"
    ws.mkdir(exist_ok=True)
    return ws.resolve()


def _request(path: str, root: Path, parent: ResolvedAgentExecution | None = None) -> PathRequest:
    """The smallest valid request for each path."""
    if path == "acp":
        return PathRequest("acp", approver=OkApprover(), session_workspace=_session_ws(root))
    if path == "cron":
        return PathRequest("cron", caller_allowed=frozenset({"file_read", "todo_write"}))
    if path == "delegate":
        assert parent is not None
        return PathRequest("delegate", parent=parent)
    return PathRequest(path)


# --- POL-RESOLVE-06: a path cannot carry what it is not allowed to ------------------------


def _refusals(root: Path, parent: ResolvedAgentExecution) -> list[tuple[str, PathRequest]]:
    ws = _session_ws(root)
    only = frozenset({"file_read"})
    return [
        # a caller list outside cron
        ("caller list on acp", PathRequest("acp", OkApprover(), only, ws)),
        ("caller list on gateway-chat", PathRequest("gateway-chat", caller_allowed=only)),
        ("caller list on gateway-tools", PathRequest("gateway-tools", caller_allowed=only)),
        ("caller list on cli-run", PathRequest("cli-run", caller_allowed=only)),
        ("caller list on delegate", PathRequest("delegate", caller_allowed=only, parent=parent)),
        # a session workspace outside acp
        ("workspace on gateway-chat", PathRequest("gateway-chat", session_workspace=ws)),
        ("workspace on gateway-tools", PathRequest("gateway-tools", session_workspace=ws)),
        ("workspace on cli-run", PathRequest("cli-run", session_workspace=ws)),
        ("workspace on cron", PathRequest("cron", session_workspace=ws)),
        ("workspace on delegate", PathRequest("delegate", session_workspace=ws, parent=parent)),
        # a parent outside delegate, and a delegate without one
        ("parent on acp", PathRequest("acp", OkApprover(), session_workspace=ws, parent=parent)),
        ("parent on gateway-chat", PathRequest("gateway-chat", parent=parent)),
        ("parent on gateway-tools", PathRequest("gateway-tools", parent=parent)),
        ("parent on cli-run", PathRequest("cli-run", parent=parent)),
        ("parent on cron", PathRequest("cron", parent=parent)),
        ("delegate without parent", PathRequest("delegate")),
        # an approver that does not fit the path's interaction mode
        ("acp without approver", PathRequest("acp", session_workspace=ws)),
        ("approver on gateway-chat", PathRequest("gateway-chat", approver=OkApprover())),
        ("approver on gateway-tools", PathRequest("gateway-tools", approver=OkApprover())),
        ("approver on cron", PathRequest("cron", approver=OkApprover())),
        ("approver on non-interactive cli-run", PathRequest("cli-run", approver=OkApprover())),
        ("interactive cli-run without approver", PathRequest("cli-run", interactive=True)),
        ("own approver on delegate", PathRequest("delegate", OkApprover(), parent=parent)),
    ]


@pytest.mark.req("POL-RESOLVE-06", "POL-RESOLVE-05")
def test_requests_carrying_fields_their_path_forbids_are_refused(tmp_path: Path) -> None:
    config = _load(_write(tmp_path))
    parent = resolve(config, "a", PathRequest("cli-run"))
    seen: list[ResolvedAgentExecution] = []
    add_resolve_observer(seen.append)
    try:
        for label, request in _refusals(tmp_path, parent):
            with pytest.raises(ResolveError):
                resolve(config, "a", request)
                pytest.fail(f"accepted: {label}")
    finally:
        remove_resolve_observer(seen.append)
    assert seen == []  # no partial execution was minted for any refusal


@pytest.mark.req("POL-RESOLVE-06", "POL-PATH-15")
def test_the_requests_each_path_may_make_are_accepted(tmp_path: Path) -> None:
    config = _load(_write(tmp_path))
    parent = resolve(config, "a", PathRequest("cli-run"))
    for path in PATHS:
        execution = resolve(config, "a", _request(path, tmp_path, parent))
        assert execution.path == path
    terminal = resolve(config, "a", PathRequest("cli-run", approver=OkApprover(), interactive=True))
    assert terminal.io.interaction == "terminal"
    assert resolve(config, "a", PathRequest("cli-run")).io.interaction == "none"


# --- POL-RESOLVE-07 ----------------------------------------------------------------------


@pytest.mark.req("POL-RESOLVE-07")
def test_unknown_and_non_dispatchable_agents_have_their_texts(tmp_path: Path) -> None:
    config = _load(_write(tmp_path))
    with pytest.raises(ResolveError) as unknown:
        resolve(config, "ghost", PathRequest("cli-run"))
    assert str(unknown.value) == "Unknown agent `ghost` \u2014 no [agents.ghost] entry configured"
    with pytest.raises(ResolveError) as off:
        resolve(config, "off", PathRequest("cli-run"))
    assert str(off.value) == "Agent `off` is not enabled for dispatch"


# --- POL-RESOLVE-11 / 12 -----------------------------------------------------------------


@pytest.mark.req("POL-RESOLVE-11")
@pytest.mark.parametrize(
    ("runtime", "provider_extra", "expected"),
    [
        ("temperature = 0.2", "temperature = 0.4", 0.2),
        ("", "temperature = 0.4", 0.4),
        ("", "", 0.7),
        ("temperature = 0.0", "temperature = 0.4", 0.0),
    ],
)
def test_temperature_precedence(
    tmp_path: Path, runtime: str, provider_extra: str, expected: float
) -> None:
    cfg = _write(tmp_path, runtime=runtime, provider_extra=provider_extra)
    execution = resolve(_load(cfg), "a", PathRequest("cli-run"))
    assert execution.model.temperature == expected
    assert execution.snapshot()["model.temperature"] == expected
    outcome = TurnEngine(SequentialIds()).run_turn(
        execution, [], "hi", lambda e: None, CancelToken()
    )
    assert outcome is not None
    assert execution.model.provider.requests[0]["temperature"] == expected  # type: ignore[attr-defined]


@pytest.mark.req("POL-RESOLVE-12")
def test_each_execution_owns_a_fresh_provider(tmp_path: Path) -> None:
    cfg = _write(tmp_path, turns=[{"chunks": ["first"]}, {"chunks": ["second"]}])
    config = _load(cfg)
    one = resolve(config, "a", PathRequest("cli-run"))
    two = resolve(config, "a", PathRequest("cli-run"))
    assert one.model.provider is not two.model.provider
    engine = TurnEngine(SequentialIds())
    texts = [
        engine.run_turn(ex, [], "hi", lambda e: None, CancelToken()).text  # type: ignore[union-attr]
        for ex in (one, two)
    ]
    # each replay starts at the first turn of the script: no position is shared
    assert texts == ["first", "first"]
    assert len(one.model.provider.requests) == 1  # type: ignore[attr-defined]
    assert len(two.model.provider.requests) == 1  # type: ignore[attr-defined]


# --- POL-RESOLVE-14: the system prompt layout -------------------------------------------


def _skill(ws: Path, name: str, md: str | None, toml: str | None = None) -> None:
    folder = ws / "skills" / name
    folder.mkdir(parents=True)
    if md is not None:
        (folder / "SKILL.md").write_text(md, encoding="utf-8")
    if toml is not None:
        (folder / "SKILL.toml").write_text(toml, encoding="utf-8")


@pytest.mark.req("POL-RESOLVE-14")
def test_default_prompt_and_working_directory_line(tmp_path: Path) -> None:
    config = _load(_write(tmp_path))
    execution = resolve(config, "a", PathRequest("cli-run"))
    ws = (tmp_path / "cfg" / "agents" / "a" / "workspace").resolve()
    expected = f"You are a, an AI agent running on ZeroClaw.\n\nWorking directory: {ws}"
    assert execution.io.system_prompt == expected
    assert execution.snapshot()["prompt.system"] == expected


@pytest.mark.req("POL-RESOLVE-14")
def test_custom_prompt_and_the_session_workspace_on_acp(tmp_path: Path) -> None:
    config = _load(_write(tmp_path, agent='system_prompt = "Be brief."'))
    execution = resolve(config, "a", _request("acp", tmp_path))
    session = _session_ws(tmp_path)
    assert execution.io.system_prompt == f"Be brief.\n\nWorking directory: {session}"


@pytest.mark.req("POL-RESOLVE-14", "POL-SKILL-04")
def test_skills_section_lists_instructions_in_name_order(tmp_path: Path) -> None:
    cfg = _write(tmp_path, agent='system_prompt = "Base."')
    ws = cfg / "agents" / "a" / "workspace"
    _skill(ws, "zeta", "  Zeta does Z.\n")
    _skill(ws, "alpha", "Alpha does A.")
    _skill(
        ws,
        "mid",
        None,
        '[[tools]]\nname = "t"\ndescription = "d"\ncommand = "echo hi"\n',
    )  # tools but no instructions: no heading of its own
    execution = resolve(_load(cfg), "a", PathRequest("cli-run"))
    ws_real = ws.resolve()
    assert execution.io.system_prompt == (
        f"Base.\n\nWorking directory: {ws_real}"
        "\n\n## Skills"
        "\n\n### alpha\n\nAlpha does A."
        "\n\n### zeta\n\nZeta does Z."
    )
    assert execution.snapshot()["skills.loaded"] == ["alpha", "mid", "zeta"]


@pytest.mark.req("POL-RESOLVE-14", "POL-SKILL-04")
def test_no_skills_heading_when_no_skill_has_instructions(tmp_path: Path) -> None:
    cfg = _write(tmp_path)
    ws = cfg / "agents" / "a" / "workspace"
    _skill(ws, "only_tools", None, '[[tools]]\nname = "t"\ndescription = "d"\ncommand = "ls"\n')
    execution = resolve(_load(cfg), "a", PathRequest("cli-run"))
    assert "## Skills" not in execution.io.system_prompt


# --- POL-RESOLVE-16: the snapshot keys --------------------------------------------------


@pytest.mark.req("POL-RESOLVE-16")
def test_snapshot_has_exactly_the_documented_keys_on_every_path(tmp_path: Path) -> None:
    config = _load(_write(tmp_path))
    parent = resolve(config, "a", PathRequest("cli-run"))
    for path in PATHS:
        snapshot = resolve(config, "a", _request(path, tmp_path, parent)).snapshot()
        assert set(snapshot) == set(SNAPSHOT_KEYS), path
        assert json.loads(json.dumps(snapshot)) == snapshot  # JSON-compatible


@pytest.mark.req("POL-RESOLVE-16")
def test_snapshot_lists_are_sorted_except_the_registry_order(tmp_path: Path) -> None:
    cfg = _write(
        tmp_path,
        profile='allowed_tools = ["todo_write", "shell", "file_read"]\n'
        'excluded_tools = ["zz", "aa"]',
    )
    snapshot = resolve(
        _load(cfg), "a", PathRequest("cron", caller_allowed=frozenset({"todo_write", "shell"}))
    ).snapshot()
    assert snapshot["tools.names"] == ["shell", "todo_write"]  # registry (catalogue) order
    assert snapshot["access.allowed_tools"] == ["file_read", "shell", "todo_write"]
    assert snapshot["access.excluded_tools"] == ["aa", "zz"]
    assert snapshot["access.caller_allowed"] == ["shell", "todo_write"]
    assert snapshot["assembly.caller_allowed"] == ["shell", "todo_write"]
    deny = resolve(_load(_write(tmp_path / "d", profile="deny_all_tools = true")), "a",
                   PathRequest("cli-run")).snapshot()  # fmt: skip
    assert deny["access.allowed_tools"] == [] and deny["tools.names"] == []


# --- POL-RESOLVE-17: observers ----------------------------------------------------------


@pytest.mark.req("POL-RESOLVE-17")
def test_observers_see_each_execution_before_resolve_returns_and_can_be_removed(
    tmp_path: Path,
) -> None:
    config = _load(_write(tmp_path))
    seen: list[ResolvedAgentExecution] = []
    returned: list[ResolvedAgentExecution] = []

    def observer(execution: ResolvedAgentExecution) -> None:
        # resolve() has not returned yet: nothing has been handed to the caller
        assert returned == [] or returned[-1] is not execution
        seen.append(execution)

    add_resolve_observer(observer)
    try:
        returned.append(resolve(config, "a", PathRequest("cli-run")))
        returned.append(resolve(config, "a", PathRequest("gateway-chat")))
    finally:
        remove_resolve_observer(observer)
    assert len(seen) == 2 and seen[0] is returned[0] and seen[1] is returned[1]
    resolve(config, "a", PathRequest("cli-run"))
    assert len(seen) == 2  # removed: not called again


@pytest.mark.req("POL-RESOLVE-17")
def test_an_observer_runs_inside_the_resolve_call(tmp_path: Path) -> None:
    config = _load(_write(tmp_path))
    inside: list[bool] = []
    state = {"in_resolve": False}

    def observer(execution: ResolvedAgentExecution) -> None:
        inside.append(state["in_resolve"])

    add_resolve_observer(observer)
    try:
        state["in_resolve"] = True
        resolve(config, "a", PathRequest("cli-run"))
        state["in_resolve"] = False
    finally:
        remove_resolve_observer(observer)
    assert inside == [True]


# --- POL-RESOLVE-10: a minted execution does not follow later configuration --------------


@pytest.mark.req("POL-RESOLVE-10", "POL-SKILL-10")
def test_later_configuration_changes_do_not_alter_a_minted_execution(tmp_path: Path) -> None:
    cfg = _write(tmp_path, agent='system_prompt = "Old."')
    ws = cfg / "agents" / "a" / "workspace"
    _skill(ws, "s1", "Old skill.")
    execution = resolve(_load(cfg), "a", PathRequest("cli-run"))
    before = execution.snapshot()
    # rewrite everything that feeds resolve()
    _write(
        tmp_path,
        agent='system_prompt = "New."',
        profile='level = "full"\nexcluded_tools = ["shell"]',
        runtime="temperature = 0.1\nmax_tool_iterations = 3",
    )
    (ws / "skills" / "s1" / "SKILL.md").write_text("New skill.", encoding="utf-8")
    _skill(ws, "s2", "Another.")
    later = resolve(_load(cfg), "a", PathRequest("cli-run"))
    assert later.snapshot() != before
    assert "New." in later.io.system_prompt and later.model.temperature == 0.1
    assert execution.snapshot() == before
    assert execution.io.system_prompt.startswith("Old.") and "Old skill." in before["prompt.system"]  # type: ignore[operator]
    assert "shell" in execution.io.tools.names


# --- POL-PATH-22: the table -------------------------------------------------------------

# path -> (caller_allowed, connect_mcp, connect_peripherals, exclude_memory, acp_delivery,
#          list_deferred_mcp_specs, interaction) for agent `a` (acp_enable_mcp = false)
EXPECTED = {
    "acp": (None, False, True, True, True, False, "acp_backchannel"),
    "gateway-chat": (None, True, True, False, False, False, "none"),
    "gateway-tools": (None, True, False, False, False, True, "listing"),
    "cli-run": (None, True, True, False, False, False, "none"),
    "cron": (["file_read", "todo_write"], True, True, False, False, False, "none"),
}


def _row(snapshot: JSONObject) -> tuple[object, ...]:
    keys = ("caller_allowed", "connect_mcp", "connect_peripherals", "exclude_memory",
            "acp_delivery", "list_deferred_mcp_specs")  # fmt: skip
    return (*(snapshot[f"assembly.{k}"] for k in keys), snapshot["approval.interaction"])


@pytest.mark.req("POL-PATH-22", "POL-RESOLVE-05")
def test_path_profiles_is_one_table_with_a_row_per_path() -> None:
    assert set(PATH_PROFILES) == set(PATHS) == {
        "acp", "gateway-chat", "gateway-tools", "cli-run", "cron", "delegate",
    }  # fmt: skip
    # the fixed cells of the table
    fixed = {
        path: (p.connect_peripherals, p.acp_delivery, p.list_deferred_mcp_specs)
        for path, p in PATH_PROFILES.items()
    }
    assert fixed == {
        "acp": (True, True, False),
        "gateway-chat": (True, False, False),
        "gateway-tools": (False, False, True),
        "cli-run": (True, False, False),
        "cron": (True, False, False),
        "delegate": (False, False, False),
    }


@pytest.mark.req("POL-PATH-22", "POL-PATH-17")
@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_each_path_resolves_with_its_table_values(tmp_path: Path, path: str) -> None:
    config = _load(_write(tmp_path))
    execution = resolve(config, "a", _request(path, tmp_path))
    snapshot = execution.snapshot()
    assert _row(snapshot) == EXPECTED[path]
    agent_ws = (tmp_path / "cfg" / "agents" / "a" / "workspace").resolve()
    expected_ws = _session_ws(tmp_path) if path == "acp" else agent_ws
    assert snapshot["security.workspace_dir"] == str(expected_ws)
    assert snapshot["lineage.depth"] == 0 and snapshot["lineage.surface"] == path
    assert snapshot["approval.session_allowlist"] == []


@pytest.mark.req("POL-PATH-22", "POL-PATH-13")
@pytest.mark.parametrize(
    ("parent_path", "acp_enable_mcp", "connect_mcp", "exclude_memory"),
    [
        ("acp", "false", False, True),
        ("acp", "true", True, True),
        ("cli-run", "false", True, False),
        ("cron", "false", True, False),
    ],
)
def test_the_delegate_row_follows_the_parent_and_the_target(
    tmp_path: Path, parent_path: str, acp_enable_mcp: str, connect_mcp: bool, exclude_memory: bool
) -> None:
    cfg = _write(tmp_path, agent=f"acp_enable_mcp = {acp_enable_mcp}")
    config = _load(cfg)
    parent = resolve(config, "a", _request(parent_path, tmp_path))
    child = resolve(config, "a", PathRequest("delegate", parent=parent))
    snapshot = child.snapshot()
    caller = parent.snapshot()["assembly.caller_allowed"]
    assert _row(snapshot) == (
        caller, connect_mcp, False, exclude_memory, False, False, parent.io.interaction,
    )  # fmt: skip
    agent_ws = (tmp_path / "cfg" / "agents" / "a" / "workspace").resolve()
    assert snapshot["security.workspace_dir"] == str(agent_ws)
    assert snapshot["lineage.depth"] == 1 and snapshot["lineage.surface"] == parent_path
    assert snapshot["lineage.parent_agent"] == "a"
    assert child.io.approval.approver is parent.io.approval.approver


# --- POL-PATH-04 / 05 on acp ------------------------------------------------------------


@pytest.mark.req("POL-PATH-04")
@pytest.mark.parametrize(("setting", "expected"), [("", False), ("acp_enable_mcp = false", False),
                                                   ("acp_enable_mcp = true", True)])  # fmt: skip
def test_acp_connects_mcp_only_when_the_agent_opts_in(
    tmp_path: Path, setting: str, expected: bool
) -> None:
    config = _load(_write(tmp_path, agent=setting))
    snapshot = resolve(config, "a", _request("acp", tmp_path)).snapshot()
    assert snapshot["assembly.connect_mcp"] is expected
    # the other paths connect regardless of the ACP opt-in
    assert resolve(config, "a", PathRequest("cli-run")).snapshot()["assembly.connect_mcp"] is True


@pytest.mark.req("POL-PATH-05", "POL-MEM-02")
def test_acp_strips_memory_and_keeps_deliver_file(tmp_path: Path) -> None:
    config = _load(_write(tmp_path))
    execution = resolve(config, "a", _request("acp", tmp_path))
    names = execution.io.tools.names
    assert "deliver_file" in names and not MEMORY_TOOLS & set(names)
    snapshot = execution.snapshot()
    assert snapshot["memory.enabled"] is False and snapshot["memory.store"] is None
    assert snapshot["assembly.connect_peripherals"] is True
    # every non-memory tool of the universe is there: compare with the cli-run set
    cli = resolve(config, "a", PathRequest("cli-run")).io.tools.names
    assert [n for n in names if n != "deliver_file"] == [n for n in cli if n not in MEMORY_TOOLS]
    assert not (tmp_path / "data" / "memory").exists()


@pytest.mark.req("CFG-AGENT-05")
def test_an_acp_session_directory_does_not_move_the_agent_workspace(tmp_path: Path) -> None:
    cfg = _write(tmp_path)
    agent_ws = cfg / "agents" / "a" / "workspace"
    _skill(agent_ws, "mine", "From the agent workspace.")
    _skill(_session_ws(tmp_path), "theirs", "From the session directory.")
    snapshot = resolve(_load(cfg), "a", _request("acp", tmp_path)).snapshot()
    assert snapshot["security.workspace_dir"] == str(_session_ws(tmp_path))
    assert snapshot["security.allowed_roots"] == [str(agent_ws.resolve())]
    assert snapshot["skills.loaded"] == ["mine"]
    assert _load(cfg).agent_workspace("a") == agent_ws


@pytest.mark.req("POL-RESOLVE-08")
def test_resolve_runs_its_steps_in_the_fixed_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []

    def spy(step: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            steps.append(step)
            return real(*args, **kwargs)

        return run

    r = resolve_module
    for target, attr, step in [
        (r, "effective_profile", "risk"), (r, "ResolvedRuntimeKnobs", "knobs"),
        (r, "create_provider", "model"), (r, "mcp_servers_for_agent", "mcp"),
        (skills_module, "load_skills", "skills"), (memory_module, "memory_path", "memory"),
        (r, "ApprovalManager", "approval"), (r, "build_system_prompt", "prompt"),
        (r, "_minting", "mint"),
    ]:  # fmt: skip
        monkeypatch.setattr(target, attr, spy(step, getattr(target, attr)))
    security = types.SimpleNamespace(build=spy("security", r.SecurityPolicy.build))
    registry = types.SimpleNamespace(assemble=spy("assemble", r.ScopedToolRegistry.assemble))
    monkeypatch.setattr(r, "SecurityPolicy", security)
    monkeypatch.setattr(r, "ScopedToolRegistry", registry)
    resolve(_load(_write(tmp_path)), "a", PathRequest("cli-run"))
    assert steps == [
        "risk", "security", "knobs", "model", "mcp", "skills", "memory", "assemble", "approval",
        "prompt", "mint",
    ]  # fmt: skip


SURFACES = (
    "tools.names",
    "approval.level",
    "approval.always_ask",
    "knobs.max_tool_iterations",
    "mcp.granted_servers",
    "memory.enabled",
    "skills.loaded",
    "assembly.connect_peripherals",
    "model.provider",
    "prompt.system",
)


@pytest.mark.req("POL-RESOLVE-03")
def test_the_same_request_gives_the_same_surfaces_whatever_the_caller_holds(
    tmp_path: Path,
) -> None:
    """Everything that shapes a turn follows from (config, alias, request) alone: the
    configuration change shows up in the surfaces, and nothing else does."""
    cfg = tmp_path / "cfg"
    (cfg / "agents" / "a" / "workspace" / "skills" / "s1").mkdir(parents=True)
    (cfg / "agents" / "a" / "workspace" / "skills" / "s1" / "SKILL.md").write_text("Skill.")
    text = (
        '[providers.demo]\nkind = "demo"\n[risk_profiles.r]\nalways_ask = ["shell"]\n'
        "[runtime_profiles.t]\nmax_tool_iterations = 5\n"
        '[agents.a]\nmodel_provider = "demo"\nrisk_profile = "r"\nruntime_profile = "t"\n'
        'system_prompt = "Be terse."\n'
    )
    (cfg / "config.toml").write_text(text)
    config = load_config(cfg, tmp_path / "data", {})
    first = resolve(config, "a", PathRequest("cli-run")).snapshot()
    second = resolve(config, "a", PathRequest("cli-run")).snapshot()
    assert {k: first[k] for k in SURFACES} == {k: second[k] for k in SURFACES}
    assert first["knobs.max_tool_iterations"] == 5 and first["approval.always_ask"] == ["shell"]
    assert first["skills.loaded"] == ["s1"] and "Be terse." in str(first["prompt.system"])
    (cfg / "config.toml").write_text(text.replace("= 5", "= 6"))
    changed = resolve(load_config(cfg, tmp_path / "data", {}), "a", PathRequest("cli-run"))
    assert changed.snapshot()["knobs.max_tool_iterations"] == 6


@pytest.mark.req("POL-MEM-09", "POL-DELEG-08")
def test_the_run_id_comes_from_the_id_factory_it_is_given(tmp_path: Path) -> None:
    config = _load(_write(tmp_path))
    ids = SequentialIds()
    parent = resolve(config, "a", PathRequest("cli-run"), ids)
    child = resolve(config, "a", PathRequest("delegate", parent=parent), ids)
    try:
        assert parent.lineage.run_id == "00000001-0000-4000-8000-000000000001"
        assert child.lineage.run_id == "00000001-0000-4000-8000-000000000002"
        assert child.lineage.parent_run_id == parent.lineage.run_id
        # the conversation id the tools store under is the same run id
        assert parent.assembly.settings.conversation_id == parent.lineage.run_id
        # without a factory every run id is a fresh random one
        again = resolve(config, "a", PathRequest("cli-run"))
        assert again.lineage.run_id not in (parent.lineage.run_id, child.lineage.run_id)
        again.close()
    finally:
        child.close()
        parent.close()
