"""L2 path parity (policy.md §8.4): the same agent configuration, built through every front
door, resolves to the same value for every snapshot key, apart from the per-path differences
written below as data (`INTENDED`), which must agree with `PATH_PROFILES` (§7.2) and the matrix
of §7.3.

Paths driven today: `acp` (twice: the agent opting into MCP and not), `cli-run`, `cron`, and
`delegate` from a parent on each of those three. The gateway paths land with issue 8: each is
one builder in `world.BUILDERS` plus its `INTENDED` entries here.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_board import FakeBoard
from tests.parity.conftest import (
    acp_driver,
    capturing,
    requests_of,
    run_cli,
    tool_results,
    write_config,
)
from tests.parity.world import (
    ALLOWED_COMMANDS,
    ALLOWED_TOOLS,
    ALWAYS_ASK,
    BUILDERS,
    DELEGATED_CONTEXT,
    DELEGATED_PROMPT,
    EXCLUDED_TOOLS,
    EXTRA_AUTO_APPROVE,
    FORBIDDEN_PATHS,
    LEAD,
    LEAD_JOB_TOOLS,
    MODEL,
    PASSTHROUGH,
    PROVIDER_TEMPERATURE,
    SERVER,
    SKILL,
    SKILL_TOOL,
    SUBJECT,
    SUBJECT_JOB_TOOLS,
    PathRun,
    World,
    make_world,
)
from zeroclaw_ref.config.model import DEFAULT_AUTO_APPROVE
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.engine.execution import ResolvedAgentExecution, is_minted
from zeroclaw_ref.engine.registry import ScopedToolRegistry
from zeroclaw_ref.engine.resolve import PATH_PROFILES
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.tools import peripherals
from zeroclaw_ref.tools.catalogue import MEMORY_TOOLS

# Every key of POL-RESOLVE-16, written out independently of `snapshot()`.
SNAPSHOT_KEYS = (
    "tools.names", "tools.builtin", "tools.peripheral", "tools.capability", "tools.mcp",
    "tools.skill", "tools.mcp_deferred", "tools.tool_search",
    "prompt.system", "prompt.deferred_section", "prompt.pinned_section",
    "access.allowed_tools", "access.excluded_tools", "access.caller_allowed",
    "mcp.connected", "mcp.granted_servers", "mcp.mode",
    "approval.level", "approval.auto_approve", "approval.always_ask", "approval.interaction",
    "approval.session_allowlist",
    "security.workspace_dir", "security.allowed_roots", "security.workspace_only",
    "security.forbidden_paths", "security.allowed_commands",
    "security.require_approval_for_medium_risk", "security.block_high_risk_commands",
    "security.shell_env_passthrough",
    "knobs.max_tool_iterations", "knobs.max_history_messages", "knobs.max_tool_result_chars",
    "knobs.parallel_tools", "knobs.shell_timeout_secs", "knobs.max_delegation_depth",
    "knobs.tool_filter_groups",
    "model.provider", "model.kind", "model.model", "model.temperature",
    "memory.enabled", "memory.store",
    "skills.loaded",
    "lineage.executing_agent", "lineage.parent_agent", "lineage.depth", "lineage.surface",
    "assembly.caller_allowed", "assembly.connect_mcp", "assembly.connect_peripherals",
    "assembly.exclude_memory", "assembly.acp_delivery", "assembly.list_deferred_mcp_specs",
)  # fmt: skip

REFERENCE = "cli-run"  # the variant every other one is compared with
PERIPHERAL = ["gpio_read"]  # gpio_write is excluded by the profile

# The subject's registry on each variant, in registry order (POL-ASSEMBLE-18).
CLI_TOOLS = [
    "shell", "file_read", "file_write", "glob_search", "ask_user", "memory_store",
    "memory_recall", "todo_write", "gpio_read", SKILL_TOOL,
]  # fmt: skip
ACP_TOOLS = [
    "shell", "file_read", "file_write", "glob_search", "deliver_file", "ask_user",
    "todo_write", "gpio_read", SKILL_TOOL,
]  # fmt: skip
CRON_TOOLS = ["shell", "file_read", "memory_recall", "gpio_read", SKILL_TOOL]
DELEGATE_TOOLS = [n for n in CLI_TOOLS if n not in PERIPHERAL]
DELEGATE_ACP_TOOLS = [n for n in DELEGATE_TOOLS if n not in MEMORY_TOOLS]
DELEGATE_CRON_TOOLS = ["shell", "file_read", SKILL_TOOL]


def _builtin(names: list[str]) -> list[str]:
    return sorted(n for n in names if n not in PERIPHERAL and n != SKILL_TOOL)


Expected = Any  # a JSON value, or a callable of the World giving one


def _session_ws(w: World) -> str:
    return str(w.session_ws)


def _session_roots(w: World) -> list[str]:
    return sorted(str(p) for p in (w.subject_ws, w.extra_root))


def _session_prompt(w: World) -> str:
    return w.prompt_for(w.session_ws)


_ACP_SURFACE: dict[str, Expected] = {
    # [POL-PATH-05] [POL-MEM-02] memory out, deliver_file in, the session workspace
    "tools.names": ACP_TOOLS,
    "tools.builtin": _builtin(ACP_TOOLS),
    "assembly.exclude_memory": True,
    "assembly.acp_delivery": True,
    "memory.enabled": False,
    "memory.store": None,
    "approval.interaction": "acp_backchannel",
    "security.workspace_dir": _session_ws,
    "security.allowed_roots": _session_roots,  # the dual root of POL-FS-07
    "prompt.system": _session_prompt,  # only the working-directory line differs
    "lineage.surface": "acp",
}


def _delegate(surface: str, interaction: str, tools: list[str]) -> dict[str, Expected]:
    """[POL-PATH-13] a child of `lead` on `surface`: no peripherals, no deliver_file."""
    return {
        "tools.names": tools,
        "tools.builtin": _builtin(tools),
        "tools.peripheral": [],
        "assembly.connect_peripherals": False,
        "approval.interaction": interaction,  # the parent's
        "lineage.parent_agent": LEAD,
        "lineage.depth": 1,
        "lineage.surface": surface,
    }


# The intended differences (POL-PARITY-10): (variant, snapshot key) -> expected value. A key not
# listed for a variant must equal the reference variant's value.
INTENDED: dict[tuple[str, str], Expected] = {
    **{("acp", k): v for k, v in _ACP_SURFACE.items()},
    ("acp", "assembly.connect_mcp"): True,  # the agent's acp_enable_mcp [POL-PATH-04]
    **{("acp/no-mcp", k): v for k, v in _ACP_SURFACE.items()},
    ("acp/no-mcp", "assembly.connect_mcp"): False,
    ("acp/no-mcp", "mcp.connected"): False,
    # cron: the job's allowed_tools is the strict caller list [POL-PATH-17]
    ("cron", "tools.names"): CRON_TOOLS,
    ("cron", "tools.builtin"): _builtin(CRON_TOOLS),
    ("cron", "access.caller_allowed"): sorted(SUBJECT_JOB_TOOLS),
    ("cron", "assembly.caller_allowed"): sorted(SUBJECT_JOB_TOOLS),
    ("cron", "approval.interaction"): "none",
    ("cron", "lineage.surface"): "cron",
    **{
        ("delegate<cli-run", k): v
        for k, v in _delegate("cli-run", "none", DELEGATE_TOOLS).items()
    },
    **{
        ("delegate<acp", k): v
        for k, v in _delegate("acp", "acp_backchannel", DELEGATE_ACP_TOOLS).items()
    },
    ("delegate<acp", "assembly.exclude_memory"): True,
    ("delegate<acp", "memory.enabled"): False,
    ("delegate<acp", "memory.store"): None,
    ("delegate<acp", "assembly.connect_mcp"): True,  # the target's acp_enable_mcp
    **{
        ("delegate<cron", k): v
        for k, v in _delegate("cron", "none", DELEGATE_CRON_TOOLS).items()
    },
    # [POL-DELEG-11] the parent job's list bounds the child
    ("delegate<cron", "access.caller_allowed"): sorted(LEAD_JOB_TOOLS),
    ("delegate<cron", "assembly.caller_allowed"): sorted(LEAD_JOB_TOOLS),
}  # fmt: skip

# How each variant came to be, for the PATH_PROFILES cross-check: (path, surface, acp opt-in).
VARIANT_PATHS: dict[str, tuple[str, str, bool]] = {
    "cli-run": ("cli-run", "cli-run", True),
    "acp": ("acp", "acp", True),
    "acp/no-mcp": ("acp", "acp", False),
    "cron": ("cron", "cron", True),
    "delegate<cli-run": ("delegate", "cli-run", True),
    "delegate<acp": ("delegate", "acp", True),
    "delegate<cron": ("delegate", "cron", True),
}


@dataclasses.dataclass
class Runs:
    world: World
    by_variant: dict[str, PathRun]
    deny_all: World
    deny_all_by_variant: dict[str, PathRun]

    @property
    def reference(self) -> dict[str, Any]:
        return self.by_variant[REFERENCE].subject

    def expected(self, variant: str, key: str) -> Any:
        value = INTENDED.get((variant, key), self.reference[key])
        return value(self.world) if callable(value) else value


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    board = FakeBoard()
    try:
        world = make_world(tmp_path_factory.mktemp("parity"), board)
        by_variant = {name: build(world) for name, build in BUILDERS.items()}
        deny = make_world(tmp_path_factory.mktemp("parity-deny"), board, deny_all=True)
        deny_by_variant = {name: build(deny) for name, build in BUILDERS.items()}
        yield Runs(world, by_variant, deny, deny_by_variant)
    finally:
        peripherals.reset_for_tests()
        board.stop()


def _mismatches(runs: Runs, keys: tuple[str, ...]) -> list[str]:
    found = []
    for variant, run in runs.by_variant.items():
        for key in keys:
            want = runs.expected(variant, key)
            if run.subject[key] != want:
                found.append(f"{variant} {key}: got {run.subject[key]!r}, expected {want!r}")
    return found


def _check(runs: Runs, keys: tuple[str, ...], reference: dict[str, Any]) -> None:
    """The reference variant holds the fixture's values; every variant matches INTENDED."""
    assert set(reference) <= set(keys)
    pinned = {k: runs.reference[k] for k in reference}
    assert pinned == reference
    assert _mismatches(runs, keys) == []


# --- the whole snapshot ----------------------------------------------------------------------


@pytest.mark.req("POL-PARITY-09", "POL-PARITY-10", "POL-RESOLVE-16", "POL-SCOPE-01")
def test_parity_l2_every_key_equal_or_intended(runs: Runs) -> None:
    for variant, run in runs.by_variant.items():
        assert tuple(run.subject) == SNAPSHOT_KEYS, variant
    assert {v for v, _ in INTENDED} <= set(BUILDERS)
    assert {k for _, k in INTENDED} <= set(SNAPSHOT_KEYS)
    assert _mismatches(runs, SNAPSHOT_KEYS) == []


@pytest.mark.req("POL-PARITY-10", "POL-PATH-22", "POL-PATH-13", "POL-PATH-04")
def test_parity_l2_intended_table_matches_path_profiles() -> None:
    """The switches INTENDED expects are the ones PATH_PROFILES (and its rules) define."""
    reference = PATH_PROFILES[REFERENCE]

    def table(variant: str, key: str, default: Any) -> Any:
        return INTENDED.get((variant, key), default)

    for variant, (path, surface, opt_in) in VARIANT_PATHS.items():
        row = PATH_PROFILES[path]
        if path == "delegate":
            connect_mcp = opt_in if surface == "acp" else True
            exclude_memory = surface == "acp"
            interaction = PATH_PROFILES[surface].interaction or "none"
        else:
            connect_mcp = opt_in if row.connect_mcp is None else row.connect_mcp
            exclude_memory = bool(row.exclude_memory)
            interaction = row.interaction or "none"  # cli-run runs non-interactive here
        got = {
            "connect_mcp": table(variant, "assembly.connect_mcp", reference.connect_mcp),
            "connect_peripherals": table(
                variant, "assembly.connect_peripherals", reference.connect_peripherals
            ),
            "exclude_memory": table(variant, "assembly.exclude_memory", reference.exclude_memory),
            "acp_delivery": table(variant, "assembly.acp_delivery", reference.acp_delivery),
            "list_deferred_mcp_specs": table(
                variant, "assembly.list_deferred_mcp_specs", reference.list_deferred_mcp_specs
            ),
            "interaction": table(variant, "approval.interaction", "none"),
            "surface": table(variant, "lineage.surface", "cli-run"),
        }
        want = {
            "connect_mcp": connect_mcp,
            "connect_peripherals": row.connect_peripherals,
            "exclude_memory": exclude_memory,
            "acp_delivery": row.acp_delivery,
            "list_deferred_mcp_specs": row.list_deferred_mcp_specs,
            "interaction": interaction,
            "surface": surface,
        }
        assert got == want, variant


# --- the seam --------------------------------------------------------------------------------


@pytest.mark.req("POL-RESOLVE-01", "POL-RESOLVE-02", "POL-ASSEMBLE-01", "POL-ENGINE-01")
def test_parity_seam_is_sealed(runs: Runs) -> None:
    seal = "ResolvedAgentExecution can only be created by resolve()"
    minted = [run.detail["execution"] for run in runs.by_variant.values()]
    assert all(is_minted(e) for e in minted)
    execution: ResolvedAgentExecution = minted[0]
    fields = {f.name: getattr(execution, f.name) for f in dataclasses.fields(execution)}
    attempts: list[Callable[[], object]] = [
        lambda: ResolvedAgentExecution(**fields),
        lambda: dataclasses.replace(execution, path="acp"),
        lambda: copy.copy(execution),
        lambda: copy.deepcopy(execution),
        lambda: pickle.dumps(execution),
    ]
    for attempt in attempts:
        with pytest.raises(TypeError, match=seal):
            attempt()
    registry = execution.io.tools
    with pytest.raises(TypeError, match="ScopedToolRegistry can only be created by"):
        ScopedToolRegistry(object(), (), registry.origin, "", "")
    with pytest.raises(TypeError, match="ScopedToolRegistry can only be created by"):
        copy.copy(registry)
    with pytest.raises(TypeError, match="turn engine requires a ResolvedAgentExecution"):
        TurnEngine(SequentialIds()).run_turn(
            object(),  # type: ignore[arg-type]
            [],
            "x",
            lambda e: None,
            CancelToken(),
        )


# --- tools -----------------------------------------------------------------------------------


@pytest.mark.req("POL-ASSEMBLE-06", "POL-ACCESS-02", "POL-SCOPE-01")
def test_parity_l2_builtin_filter(runs: Runs) -> None:
    _check(
        runs,
        ("access.allowed_tools", "access.excluded_tools", "tools.builtin"),
        {
            "access.allowed_tools": sorted(ALLOWED_TOOLS),
            "access.excluded_tools": sorted(EXCLUDED_TOOLS),
            "tools.builtin": _builtin(CLI_TOOLS),
        },
    )


@pytest.mark.req("POL-ACCESS-06", "POL-ASSEMBLE-17")
def test_parity_l2_deny_all(runs: Runs) -> None:
    for variant, run in runs.deny_all_by_variant.items():
        snap = run.subject
        assert snap["access.allowed_tools"] == [], variant
        for key in ("tools.names", "tools.builtin", "tools.peripheral", "tools.skill",
                    "tools.mcp", "tools.capability", "tools.mcp_deferred"):  # fmt: skip
            assert snap[key] == [], (variant, key)
        assert snap["prompt.deferred_section"] == snap["prompt.pinned_section"] == ""
        # no tool was offered to the subject's model on any path that ran a turn
        execution = run.detail["execution"]
        assert all(r["tools"] == [] for r in requests_of(execution)), variant
    # everything else still resolves as on the other paths: the skill's instructions load
    assert runs.deny_all_by_variant[REFERENCE].subject["skills.loaded"] == [SKILL]


@pytest.mark.req("POL-PATH-17", "POL-ACCESS-08", "POL-CRON-07", "POL-DELEG-11")
def test_parity_l2_caller_allowlist(runs: Runs) -> None:
    _check(
        runs,
        ("access.caller_allowed", "assembly.caller_allowed", "tools.names"),
        {"access.caller_allowed": None, "assembly.caller_allowed": None},
    )
    for variant, names in (("cron", SUBJECT_JOB_TOOLS), ("delegate<cron", LEAD_JOB_TOOLS)):
        assert set(runs.by_variant[variant].subject["tools.names"]) <= set(names)


@pytest.mark.req("POL-BUNDLE-02", "POL-BUNDLE-06", "POL-PATH-04")
def test_parity_l2_mcp_scope(runs: Runs) -> None:
    # The grant is computed inside resolve() on every path; no server is contacted by this
    # build (the MCP client lands with issue 6), so `mcp.connected` is false everywhere.
    _check(
        runs,
        ("mcp.granted_servers", "mcp.connected", "mcp.mode", "assembly.connect_mcp"),
        {"mcp.granted_servers": [SERVER], "assembly.connect_mcp": True},
    )


CROSS_AGENT_CONFIG = """
[mcp]
enabled = true
deferred_loading = {deferred}

[[mcp.servers]]
name = "srv_alpha"
command = "parity-alpha-never-started"
pinned_resources = ["file:///alpha.txt"]

[[mcp.servers]]
name = "srv_beta"
command = "parity-beta-never-started"
pinned_resources = ["file:///beta.txt"]

[mcp_bundles.alpha_only]
servers = ["srv_alpha"]

[mcp_bundles.beta_only]
servers = ["srv_beta"]

[providers.m]
kind = "scripted"
script = "m.json"

[risk_profiles.p]
[runtime_profiles.r]

[agents.alpha]
model_provider = "m"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["alpha_only"]
acp_enable_mcp = true

[agents.beta]
model_provider = "m"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["beta_only"]
acp_enable_mcp = true
"""


@pytest.mark.req("POL-PARITY-15", "POL-BUNDLE-02", "POL-BUNDLE-06")
@pytest.mark.parametrize("deferred", [False, True])
def test_parity_l2_cross_agent_mcp_isolation(tmp_path: Path, deferred: bool) -> None:
    # `/api/tools` joins the paths driven here with issue 8 (the gateway).
    config = write_config(
        tmp_path / "cfg",
        tmp_path / "data",
        CROSS_AGENT_CONFIG.format(deferred="true" if deferred else "false"),
        {"m": [{"chunks": ["ok"]}]},
    )
    own = {"alpha": "srv_alpha", "beta": "srv_beta"}
    with capturing() as captured:
        with acp_driver(config) as driver:  # one connection, one session per agent
            driver.new_session("alpha", tmp_path)
            driver.new_session("beta", tmp_path)
        assert run_cli(config, "alpha", "hi").status == 0
        assert run_cli(config, "beta", "hi").status == 0
        for alias, server in own.items():
            executions = captured.of(alias)
            assert sorted(e.path for e in executions) == ["acp", "cli-run"]
            other = next(s for a, s in own.items() if a != alias)
            for execution in executions:
                snap = execution.snapshot()
                assert snap["mcp.granted_servers"] == [server]
                seen = json.dumps(
                    [snap[k] for k in ("tools.mcp", "tools.mcp_deferred", "prompt.pinned_section")]
                )
                assert other not in seen and other not in snap["prompt.system"]


@pytest.mark.req("POL-ASSEMBLE-15", "POL-SKILL-01", "POL-SKILL-08")
def test_parity_l2_skills(runs: Runs) -> None:
    _check(
        runs,
        ("skills.loaded", "tools.skill"),
        {"skills.loaded": [SKILL], "tools.skill": [SKILL_TOOL]},
    )


@pytest.mark.req("POL-ASSEMBLE-16", "POL-RESOLVE-13")
def test_parity_l2_final_exclusion(runs: Runs) -> None:
    _check(runs, ("tools.names", "access.excluded_tools"), {"tools.names": CLI_TOOLS})
    for variant, run in runs.by_variant.items():
        assert not set(EXCLUDED_TOOLS) & set(run.subject["tools.names"]), variant
        knobs = run.detail["execution"].knobs
        assert knobs.excluded_tools == frozenset(EXCLUDED_TOOLS), variant


@pytest.mark.req("POL-ASSEMBLE-05", "POL-PERIPH-01", "POL-PATH-05", "POL-PATH-13")
def test_parity_l2_peripherals(runs: Runs) -> None:
    _check(
        runs,
        ("tools.peripheral", "assembly.connect_peripherals"),
        {"tools.peripheral": PERIPHERAL, "assembly.connect_peripherals": True},
    )


@pytest.mark.req("POL-PATH-05", "POL-MEM-02", "POL-ASSEMBLE-07", "POL-PATH-13")
def test_parity_l2_memory_strip(runs: Runs) -> None:
    _check(
        runs,
        ("memory.enabled", "memory.store", "assembly.exclude_memory"),
        {
            "memory.enabled": True,
            "memory.store": str(runs.world.config.data_dir / "memory" / f"{SUBJECT}.sqlite3"),
            "assembly.exclude_memory": False,
        },
    )
    for variant, run in runs.by_variant.items():
        memory_tools = MEMORY_TOOLS & set(run.subject["tools.names"])
        if run.subject["lineage.surface"] == "acp":
            assert not memory_tools, variant
        elif run.subject["access.caller_allowed"] is None:
            assert memory_tools == {"memory_store", "memory_recall"}, variant


@pytest.mark.req("POL-ASSEMBLE-07", "POL-PATH-05")
def test_parity_l2_deliver_file(runs: Runs) -> None:
    _check(runs, ("assembly.acp_delivery", "tools.names"), {"assembly.acp_delivery": False})
    for variant, run in runs.by_variant.items():
        present = "deliver_file" in run.subject["tools.names"]
        assert present is (run.detail["execution"].path == "acp"), variant


# --- approvals -------------------------------------------------------------------------------


@pytest.mark.req("POL-APPROVE-01", "POL-APPROVE-04", "POL-APPROVE-11")
def test_parity_l2_approval_policy(runs: Runs) -> None:
    _check(
        runs,
        (
            "approval.level",
            "approval.auto_approve",
            "approval.always_ask",
            "approval.session_allowlist",
        ),
        {
            "approval.level": "full",
            "approval.auto_approve": sorted(set(DEFAULT_AUTO_APPROVE) | set(EXTRA_AUTO_APPROVE)),
            "approval.always_ask": ALWAYS_ASK,
            "approval.session_allowlist": [],
        },
    )


@pytest.mark.req("POL-PATH-22", "POL-PATH-15", "POL-DELEG-09")
def test_parity_l2_interaction_mode(runs: Runs) -> None:
    _check(runs, ("approval.interaction",), {"approval.interaction": "none"})
    # a child asks through its parent's operator: the ACP session's back-channel
    child = runs.by_variant["delegate<acp"].detail["execution"]
    parents = runs.by_variant["delegate<acp"].captured.of(LEAD, "acp")
    assert len(parents) == 1
    assert child.io.approval.approver is parents[0].io.approval.approver
    assert runs.by_variant["delegate<cli-run"].detail["execution"].io.approval.approver is None


# --- security, knobs, model, prompt ----------------------------------------------------------


@pytest.mark.req("POL-FS-07", "POL-AUTO-04", "POL-DELEG-10", "POL-SKILL-01")
def test_parity_l2_security_policy(runs: Runs) -> None:
    w = runs.world
    _check(
        runs,
        tuple(k for k in SNAPSHOT_KEYS if k.startswith("security.")),
        {
            "security.workspace_dir": str(w.subject_ws),
            "security.allowed_roots": [str(w.extra_root)],
            "security.workspace_only": False,
            "security.forbidden_paths": FORBIDDEN_PATHS,
            "security.allowed_commands": ALLOWED_COMMANDS,
            "security.require_approval_for_medium_risk": False,
            "security.block_high_risk_commands": False,
            "security.shell_env_passthrough": PASSTHROUGH,
        },
    )


@pytest.mark.req("POL-RESOLVE-13", "POL-SCOPE-01")
def test_parity_l2_runtime_knobs(runs: Runs) -> None:
    _check(
        runs,
        tuple(k for k in SNAPSHOT_KEYS if k.startswith("knobs.")),
        {
            "knobs.max_tool_iterations": 7,
            "knobs.max_history_messages": 21,
            "knobs.max_tool_result_chars": 12345,
            "knobs.parallel_tools": True,
            "knobs.shell_timeout_secs": 17,
            "knobs.max_delegation_depth": 3,
            "knobs.tool_filter_groups": [
                {"mode": "always", "tools": [f"{SERVER}__*"], "keywords": []}
            ],
        },
    )


@pytest.mark.req("POL-RESOLVE-11", "POL-RESOLVE-12")
def test_parity_l2_model_access(runs: Runs) -> None:
    _check(
        runs,
        ("model.provider", "model.kind", "model.model", "model.temperature"),
        {
            "model.provider": "subject_model",
            "model.kind": "scripted",
            "model.model": MODEL,
            "model.temperature": PROVIDER_TEMPERATURE,
        },
    )
    # what reached the model: the resolved model and temperature, on a provider of its own
    providers = []
    for variant, run in runs.by_variant.items():
        execution = run.detail["execution"]
        providers.append(execution.model.provider)
        for request in requests_of(execution):
            assert (request["model"], request["temperature"]) == (MODEL, 0.25), variant
    assert len({id(p) for p in providers}) == len(providers)


@pytest.mark.req("POL-RESOLVE-14", "POL-SKILL-04")
def test_parity_l2_system_prompt(runs: Runs) -> None:
    _check(
        runs,
        ("prompt.system", "prompt.deferred_section", "prompt.pinned_section"),
        {
            "prompt.system": runs.world.prompt_for(runs.world.subject_ws),
            "prompt.deferred_section": "",
            "prompt.pinned_section": "",
        },
    )
    for variant, run in runs.by_variant.items():
        execution = run.detail["execution"]
        for request in requests_of(execution):
            system = request["messages"][0]  # type: ignore[index]
            assert system == {"role": "system", "content": run.subject["prompt.system"]}, variant


# --- delegate --------------------------------------------------------------------------------

DELEGATE_VARIANTS = ("delegate<cli-run", "delegate<acp", "delegate<cron")


@pytest.mark.req("POL-DELEG-03", "POL-DELEG-07", "POL-PATH-13", "POL-RESOLVE-12")
def test_parity_l2_delegate_rebuilds_contract(runs: Runs) -> None:
    assert _mismatches(runs, SNAPSHOT_KEYS) == []  # each child: the target's own contract
    for variant in DELEGATE_VARIANTS:
        run = runs.by_variant[variant]
        child = run.detail["execution"]
        [parent] = [e for e in run.captured.executions if e.agent_alias == LEAD]
        assert child.path == "delegate" and child.model.provider is not parent.model.provider
        assert child.lineage.parent_run_id == parent.lineage.run_id
        # the parent got the child's answer as the delegate result
        results = tool_results(parent)
        assert results["delegate"] == "subject done", variant
    assert runs.by_variant["delegate<cli-run"].detail["run"].stdout == "lead done\n"
    response = runs.by_variant["delegate<acp"].detail["response"]
    assert response["result"]["stopReason"] == "end_turn"
    [(_, outcome)] = runs.by_variant["delegate<cron"].detail["results"]
    assert outcome == "success"


@pytest.mark.req("POL-DELEG-05", "POL-DELEG-06", "POL-DELEG-08", "POL-PARITY-12")
def test_parity_l2_delegate_transcript_isolation(runs: Runs) -> None:
    message = f"{DELEGATED_CONTEXT}\n\n{DELEGATED_PROMPT}"
    for variant in DELEGATE_VARIANTS:
        run = runs.by_variant[variant]
        child = run.detail["execution"]
        first = requests_of(child)[0]
        shown = [(m["role"], m["content"]) for m in first["messages"]]  # type: ignore[union-attr]
        assert shown == [("system", child.io.system_prompt), ("user", message)], variant
        record_path = runs.world.config.data_dir / "delegations" / f"{child.lineage.run_id}.json"
        record = json.loads(record_path.read_text(encoding="utf-8"))
        [parent] = [e for e in run.captured.executions if e.agent_alias == LEAD]
        assert record["executing_agent"] == SUBJECT
        assert record["parent"]["agent"] == LEAD
        assert record["parent"]["run_id"] == parent.lineage.run_id
        assert (record["depth"], record["outcome"]) == (1, "success")
        assert record["surface"] == child.lineage.surface
        assert record["messages"][0] == {"role": "system", "content": child.io.system_prompt}


@pytest.mark.req("POL-DELEG-04")
def test_parity_l2_delegate_fails_closed(runs: Runs) -> None:
    config = runs.world.config
    with capturing() as captured:
        run = run_cli(config, "lead2", "go")
        assert run.status == 0 and run.stdout == "lead2 done\n"
        assert [e.agent_alias for e in captured.executions] == ["lead2"]  # no child minted
        results = tool_results(captured.one("lead2"))
    assert results["delegate"] == (
        "Error: Delegation to 'ghost' failed closed: Agent `ghost` is not enabled for dispatch"
    )
    records = (config.data_dir / "delegations").glob("*.json")
    assert all(json.loads(p.read_text())["executing_agent"] != "ghost" for p in records)


@pytest.mark.req("POL-DELEG-11", "POL-ACCESS-08", "POL-PATH-13")
def test_parity_l2_delegate_caller_allowlist(runs: Runs) -> None:
    child = runs.by_variant["delegate<cron"].subject
    assert child["access.caller_allowed"] == sorted(LEAD_JOB_TOOLS)
    # narrowed by both: the parent job's list and the target's own policy
    unbounded = runs.by_variant["delegate<cli-run"].subject["tools.names"]
    assert child["tools.names"] == [n for n in unbounded if n in LEAD_JOB_TOOLS]
    assert child["tools.names"] == DELEGATE_CRON_TOOLS
    for variant in ("delegate<cli-run", "delegate<acp"):
        assert runs.by_variant[variant].subject["access.caller_allowed"] is None
