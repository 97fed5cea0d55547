"""L2 path parity (policy.md §8.4): the same agent configuration, built through every front
door, resolves to the same value for every snapshot key, apart from the per-path differences
written below as data (`INTENDED`), which must agree with `PATH_PROFILES` (§7.2) and the matrix
of §7.3.

Paths driven: `acp` (twice: the agent opting into MCP and not), `gateway-chat`
(`POST /api/chat`), `gateway-tools` (`GET /api/tools`), `cli-run`, `cron`, and `delegate` from a
parent on `cli-run`, `acp` and `cron`, each against a real stdio MCP server, once with
`mcp.deferred_loading = false` (`INTENDED`) and once with `true` (`INTENDED_DEFERRED`); a third
world with `deny_all_tools = true` checks POL-ACCESS-06. A new variant is one builder in
`world.BUILDERS` plus its `_INTENDED_BASE` entries and its `MCP_SHAPES` entry here.
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
from tests.helpers.snapshot_keys import SNAPSHOT_KEYS
from tests.parity.conftest import (
    GATEWAY_TOML,
    acp_driver,
    capturing,
    gateway_driver,
    mcp_server_toml,
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
    MCP_LIST,
    MCP_READ,
    MCP_WRITE,
    MODEL,
    PASSTHROUGH,
    PIN,
    PIN_URI,
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

REFERENCE = "cli-run"  # the variant every other one is compared with
PERIPHERAL = ["gpio_read"]  # gpio_write is excluded by the profile
CAPABILITY = ["mcp_resources"]  # listed; mcp_prompts is not, so it is never registered
MCP_ADMITTED = [MCP_READ, MCP_LIST]  # server order; write_file is excluded (POL-ACCESS-05)
PRE_ACTIVATED = {MCP_READ}  # the subject's `always` tool filter group (MCP-TFG-07)

# The built-in and peripheral part of the subject's registry on each variant, in registry order
# (POL-ASSEMBLE-18); capability tools, the MCP position and the skill tool follow.
CLI_BASE = [
    "shell", "file_read", "file_write", "glob_search", "ask_user", "memory_store",
    "memory_recall", "todo_write", "gpio_read",
]  # fmt: skip
ACP_BASE = [
    "shell", "file_read", "file_write", "glob_search", "deliver_file", "ask_user",
    "todo_write", "gpio_read",
]  # fmt: skip
CRON_BASE = ["shell", "file_read", "memory_recall", "gpio_read"]
DELEGATE_BASE = [n for n in CLI_BASE if n not in PERIPHERAL]
DELEGATE_ACP_BASE = [n for n in DELEGATE_BASE if n not in MEMORY_TOOLS]
DELEGATE_CRON_BASE = ["shell", "file_read"]
LISTING_BASE = [n for n in CLI_BASE if n not in PERIPHERAL]  # the listing opens no board

# The reference registry in eager mode, and the delegate<cron child's (both modes differ only
# in the MCP position).
CLI_TOOLS = CLI_BASE + CAPABILITY + MCP_ADMITTED + [SKILL_TOOL]
DELEGATE_CRON_TOOLS = [*DELEGATE_CRON_BASE, MCP_LIST, SKILL_TOOL]

# The pinned section (mcp.md MCP-PIN-04, MCP-CTX-02) and the deferred section (MCP-DEFER-04)
# the reference resolves: the pin read from the real server, and the one admitted stub that no
# `always` group activates in advance.
PINNED_TEXT = (
    "## Pinned MCP Resources\n\n"
    f'<mcp-resource server="{SERVER}" uri="{PIN}" mime="text/plain" '
    'trust="untrusted-external">\n'
    f"body of {PIN_URI}\n</mcp-resource>\n"
)
DEFERRED_TEXT = (
    "## Deferred Tools\n\n"
    "The tools listed below are available but NOT yet loaded. To use any of them you MUST "
    "first call the `tool_search` tool to fetch their full schemas. Use "
    '"select:name1,name2" for exact tools or keywords to search. Once activated, the tools '
    "become callable for the rest of the conversation.\n\n"
    f"<available-deferred-tools>\n{MCP_LIST}\n</available-deferred-tools>\n"
)


def _builtin(base: list[str]) -> list[str]:
    return sorted(n for n in base if n not in PERIPHERAL)


Expected = Any  # a JSON value, or a callable of the Matrix giving one


@dataclasses.dataclass(frozen=True)
class _Ref:
    """The reference variant's value of `key` in the same matrix."""

    key: str

    def __call__(self, m: Matrix) -> Any:
        return m.reference[self.key]


@dataclasses.dataclass(frozen=True)
class _Prompt:
    """[POL-RESOLVE-14] the subject's prompt: the session's or the agent's working directory,
    then the MCP block with the reference's deferred and pinned sections where shown."""

    session: bool
    deferred: bool
    pinned: bool

    def __call__(self, m: Matrix) -> str:
        workspace = m.world.session_ws if self.session else m.world.subject_ws
        deferred = m.reference["prompt.deferred_section"] if self.deferred else ""
        pinned = m.reference["prompt.pinned_section"] if self.pinned else ""
        return m.world.prompt_for(workspace, deferred, pinned)


def _session_ws(m: Matrix) -> str:
    return str(m.world.session_ws)


def _session_roots(m: Matrix) -> list[str]:
    return sorted(str(p) for p in (m.world.subject_ws, m.world.extra_root))


_ACP_SURFACE: dict[str, Expected] = {
    # [POL-PATH-05] [POL-MEM-02] memory out, deliver_file in, the session workspace
    "assembly.exclude_memory": True,
    "assembly.acp_delivery": True,
    "memory.enabled": False,
    "memory.store": None,
    "approval.interaction": "acp_backchannel",
    "security.workspace_dir": _session_ws,
    "security.allowed_roots": _session_roots,  # the dual root of POL-FS-07
    "lineage.surface": "acp",
}


def _delegate(surface: str, interaction: str) -> dict[str, Expected]:
    """[POL-PATH-13] a child of `lead` on `surface`: no peripherals, no deliver_file."""
    return {
        "tools.peripheral": [],
        "assembly.connect_peripherals": False,
        "approval.interaction": interaction,  # the parent's
        "lineage.parent_agent": LEAD,
        "lineage.depth": 1,
        "lineage.surface": surface,
    }


# The intended differences outside MCP (POL-PARITY-10): (variant, snapshot key) -> expected
# value, the same in both MCP modes. A key not listed for a variant must equal the reference
# variant's value.
_INTENDED_BASE: dict[tuple[str, str], Expected] = {
    **{("acp", k): v for k, v in _ACP_SURFACE.items()},
    ("acp", "assembly.connect_mcp"): True,  # the agent's acp_enable_mcp [POL-PATH-04]
    **{("acp/no-mcp", k): v for k, v in _ACP_SURFACE.items()},
    ("acp/no-mcp", "assembly.connect_mcp"): False,
    # cron: the job's allowed_tools is the strict caller list [POL-PATH-17]
    ("cron", "access.caller_allowed"): sorted(SUBJECT_JOB_TOOLS),
    ("cron", "assembly.caller_allowed"): sorted(SUBJECT_JOB_TOOLS),
    ("cron", "approval.interaction"): "none",
    ("cron", "lineage.surface"): "cron",
    **{("delegate<cli-run", k): v for k, v in _delegate("cli-run", "none").items()},
    **{("delegate<acp", k): v for k, v in _delegate("acp", "acp_backchannel").items()},
    ("delegate<acp", "assembly.exclude_memory"): True,
    ("delegate<acp", "memory.enabled"): False,
    ("delegate<acp", "memory.store"): None,
    ("delegate<acp", "assembly.connect_mcp"): True,  # the target's acp_enable_mcp
    **{("delegate<cron", k): v for k, v in _delegate("cron", "none").items()},
    # [POL-DELEG-11] the parent job's list bounds the child
    ("delegate<cron", "access.caller_allowed"): sorted(LEAD_JOB_TOOLS),
    ("delegate<cron", "assembly.caller_allowed"): sorted(LEAD_JOB_TOOLS),
    # gateway-chat [POL-PATH-09]: no operator; memory kept, no deliver_file, peripherals on,
    # exactly as on the reference (cli-run run non-interactively)
    ("gateway-chat", "approval.interaction"): "none",
    ("gateway-chat", "lineage.surface"): "gateway-chat",
    # gateway-tools [POL-PATH-11]: a listing; stubs listed as tools, no serial device opened;
    # memory kept and no deliver_file, as on the reference
    ("gateway-tools", "tools.peripheral"): [],
    ("gateway-tools", "assembly.connect_peripherals"): False,
    ("gateway-tools", "assembly.list_deferred_mcp_specs"): True,
    ("gateway-tools", "mcp.mode"): "listing",
    ("gateway-tools", "approval.interaction"): "listing",
    ("gateway-tools", "lineage.surface"): "gateway-tools",
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class _McpShape:
    """What step 4 admits for the subject on one variant (§7.3 rows MCP connection, access
    policy, mode, capability tools and pinned section)."""

    base: list[str]  # the built-in and peripheral part of the registry
    stubs: list[str] = dataclasses.field(default_factory=lambda: list(MCP_ADMITTED))
    capability: list[str] = dataclasses.field(default_factory=lambda: list(CAPABILITY))
    pinned: bool = True
    connected: bool = True
    listing: bool = False
    session: bool = False  # the ACP session's working directory in the prompt


_NO_MCP: dict[str, Any] = {"stubs": [], "capability": [], "pinned": False, "connected": False}

MCP_SHAPES: dict[str, _McpShape] = {
    "cli-run": _McpShape(CLI_BASE),
    "acp": _McpShape(ACP_BASE, session=True),
    "acp/no-mcp": _McpShape(ACP_BASE, session=True, **_NO_MCP),  # [POL-PATH-04] no connection
    # ∩ job: only MCP_READ is listed; neither mcp_resources nor the pin is
    "cron": _McpShape(CRON_BASE, stubs=[MCP_READ], capability=[], pinned=False),
    "delegate<cli-run": _McpShape(DELEGATE_BASE),
    "delegate<acp": _McpShape(DELEGATE_ACP_BASE),
    # ∩ parent: the lead's job lists MCP_LIST only
    "delegate<cron": _McpShape(DELEGATE_CRON_BASE, stubs=[MCP_LIST], capability=[], pinned=False),
    "gateway-chat": _McpShape(CLI_BASE),
    "gateway-tools": _McpShape(LISTING_BASE, listing=True),  # [POL-ASSEMBLE-11]
}


def _mcp_expectations(shape: _McpShape, deferred_loading: bool) -> dict[str, Expected]:
    """[POL-ASSEMBLE-08..12] the snapshot keys step 4 decides, from the shape alone."""
    deferred = deferred_loading and not shape.listing
    pending = [s for s in shape.stubs if s not in PRE_ACTIVATED] if deferred else []
    segment = (["tool_search"] if shape.stubs else []) if deferred else shape.stubs
    return {
        "tools.names": shape.base + shape.capability + segment + [SKILL_TOOL],
        "tools.builtin": _builtin(shape.base),
        "tools.capability": sorted(shape.capability),
        "tools.mcp": [] if deferred else sorted(shape.stubs),
        "tools.mcp_deferred": sorted(shape.stubs) if deferred else [],
        "tools.tool_search": deferred and bool(shape.stubs),
        "prompt.deferred_section": _Ref("prompt.deferred_section") if pending else "",
        "prompt.pinned_section": _Ref("prompt.pinned_section") if shape.pinned else "",
        "prompt.system": _Prompt(shape.session, bool(pending), shape.pinned),
        "mcp.connected": shape.connected,
    }


def _intended(deferred_loading: bool) -> dict[tuple[str, str], Expected]:
    """The whole table for one value of `mcp.deferred_loading`: the base entries plus every
    MCP key whose expectation differs from the reference's."""
    table = dict(_INTENDED_BASE)
    reference = _mcp_expectations(MCP_SHAPES[REFERENCE], deferred_loading)
    for variant, shape in MCP_SHAPES.items():
        for key, value in _mcp_expectations(shape, deferred_loading).items():
            if value != reference[key]:
                table[(variant, key)] = value
    return table


INTENDED: dict[tuple[str, str], Expected] = _intended(False)  # mcp.deferred_loading = false
INTENDED_DEFERRED: dict[tuple[str, str], Expected] = _intended(True)

# How each variant came to be, for the PATH_PROFILES cross-check: (path, surface, acp opt-in).
VARIANT_PATHS: dict[str, tuple[str, str, bool]] = {
    "cli-run": ("cli-run", "cli-run", True),
    "acp": ("acp", "acp", True),
    "acp/no-mcp": ("acp", "acp", False),
    "cron": ("cron", "cron", True),
    "delegate<cli-run": ("delegate", "cli-run", True),
    "delegate<acp": ("delegate", "acp", True),
    "delegate<cron": ("delegate", "cron", True),
    "gateway-chat": ("gateway-chat", "gateway-chat", True),
    "gateway-tools": ("gateway-tools", "gateway-tools", True),
}


@dataclasses.dataclass
class Matrix:
    """Every variant built from one world."""

    world: World
    by_variant: dict[str, PathRun]

    @property
    def reference(self) -> dict[str, Any]:
        return self.by_variant[REFERENCE].subject

    @property
    def intended(self) -> dict[tuple[str, str], Expected]:
        return INTENDED_DEFERRED if self.world.deferred else INTENDED

    def expected(self, variant: str, key: str) -> Any:
        value = self.intended.get((variant, key), self.reference[key])
        return value(self) if callable(value) else value


@dataclasses.dataclass
class Runs:
    eager: Matrix  # mcp.deferred_loading = false
    deferred: Matrix  # mcp.deferred_loading = true
    deny_all: Matrix

    @property
    def world(self) -> World:
        return self.eager.world

    @property
    def by_variant(self) -> dict[str, PathRun]:
        return self.eager.by_variant

    @property
    def deny_all_by_variant(self) -> dict[str, PathRun]:
        return self.deny_all.by_variant

    @property
    def reference(self) -> dict[str, Any]:
        return self.eager.reference

    @property
    def matrices(self) -> tuple[Matrix, Matrix]:
        return (self.eager, self.deferred)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    board = FakeBoard()

    def matrix(name: str, **options: bool) -> Matrix:
        world = make_world(tmp_path_factory.mktemp(name), board, **options)
        return Matrix(world, {variant: build(world) for variant, build in BUILDERS.items()})

    try:
        yield Runs(
            matrix("parity"), matrix("parity-deferred", deferred=True),
            matrix("parity-deny", deny_all=True),
        )  # fmt: skip
    finally:
        peripherals.reset_for_tests()
        board.stop()


def _mismatches(runs: Runs, keys: tuple[str, ...]) -> list[str]:
    found = []
    for m in runs.matrices:
        mode = "deferred" if m.world.deferred else "eager"
        for variant, run in m.by_variant.items():
            for key in keys:
                want = m.expected(variant, key)
                if run.subject[key] != want:
                    found.append(
                        f"{mode} {variant} {key}: got {run.subject[key]!r}, expected {want!r}"
                    )
    return found


Pins = dict[str, Any] | Callable[[World], dict[str, Any]]


def _check(
    runs: Runs, keys: tuple[str, ...], reference: Pins, deferred_reference: Pins | None = None
) -> None:
    """The reference variant holds the fixture's values (in eager mode, and in deferred mode
    `deferred_reference` where given, else the same; either may be a function of the world);
    every variant of both modes matches its INTENDED table."""
    deferred_pins = reference if deferred_reference is None else deferred_reference
    for m, given in ((runs.eager, reference), (runs.deferred, deferred_pins)):
        pins = given(m.world) if callable(given) else given
        assert set(pins) <= set(keys)
        assert {k: m.reference[k] for k in pins} == pins, m.world.deferred
    assert _mismatches(runs, keys) == []


# --- the whole snapshot ----------------------------------------------------------------------


@pytest.mark.req("POL-PARITY-09", "POL-PARITY-10", "POL-RESOLVE-16", "POL-SCOPE-01")
def test_parity_l2_every_key_equal_or_intended(runs: Runs) -> None:
    for m in runs.matrices:
        for variant, run in m.by_variant.items():
            assert tuple(run.subject) == SNAPSHOT_KEYS, variant
        # the gateway front doors answered as POL-PATH-07 and POL-PATH-10 say
        chat = m.by_variant["gateway-chat"].detail["response"]
        assert (chat.status_code, chat.json()) == (
            200,
            {"agent": SUBJECT, "response": "subject done"},
        )
        listing = m.by_variant["gateway-tools"].detail["response"]
        assert listing.status_code == 200 and listing.json()["agent"] == SUBJECT
        listed = [t["name"] for t in listing.json()["tools"]]
        assert listed == m.by_variant["gateway-tools"].subject["tools.names"]
    for table in (INTENDED, INTENDED_DEFERRED):
        assert {v for v, _ in table} <= set(BUILDERS)
        assert {k for _, k in table} <= set(SNAPSHOT_KEYS)
    assert set(VARIANT_PATHS) == set(BUILDERS) == set(MCP_SHAPES)
    assert _mismatches(runs, SNAPSHOT_KEYS) == []


@pytest.mark.req("POL-PARITY-10", "POL-PATH-22", "POL-PATH-13", "POL-PATH-04")
def test_parity_l2_intended_table_matches_path_profiles() -> None:
    """The switches INTENDED expects are the ones PATH_PROFILES (and its rules) define."""
    reference = PATH_PROFILES[REFERENCE]

    def table(variant: str, key: str, default: Any) -> Any:
        value = INTENDED.get((variant, key), default)
        assert INTENDED_DEFERRED.get((variant, key), default) == value  # mode-independent
        return value

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
            "tools.builtin": _builtin(CLI_BASE),
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
    listing = runs.deny_all_by_variant["gateway-tools"].detail["response"]
    assert (listing.status_code, listing.json()["tools"]) == (200, [])
    assert runs.deny_all_by_variant["gateway-tools"].detail["opens"] == []
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
        # deferred mode: tool_search fronts admitted stubs, each of them listed by the job
        deferred = runs.deferred.by_variant[variant].subject
        assert set(deferred["tools.names"]) <= set(names) | {"tool_search"}
        assert set(deferred["tools.mcp_deferred"]) <= set(names)


@pytest.mark.req("POL-BUNDLE-02", "POL-BUNDLE-06", "POL-PATH-04", "POL-ASSEMBLE-08")
def test_parity_l2_mcp_scope(runs: Runs) -> None:
    # The grant is computed inside resolve() on every path, and every path that connects MCP
    # really connected the granted server; acp with acp_enable_mcp = false does not.
    scope = {"mcp.granted_servers": [SERVER], "mcp.connected": True, "assembly.connect_mcp": True}
    _check(
        runs,
        ("mcp.granted_servers", "mcp.connected", "mcp.mode", "assembly.connect_mcp"),
        scope | {"mcp.mode": "eager"},
        scope | {"mcp.mode": "deferred"},
    )
    for m in runs.matrices:
        for variant, run in m.by_variant.items():
            assert run.subject["mcp.connected"] is (variant != "acp/no-mcp"), variant


def _request_tools(run: PathRun) -> list[list[str]]:
    """The tool names offered to the subject's model, one list per request sent."""
    return [
        list(request["tools"])  # type: ignore[arg-type]
        for request in requests_of(run.detail["execution"])
    ]


def _listed(run: PathRun) -> list[str]:
    return [t["name"] for t in run.detail["response"].json()["tools"]]


@pytest.mark.req("POL-ACCESS-04", "POL-ACCESS-05", "POL-ACCESS-08", "POL-ASSEMBLE-12")
def test_parity_l2_mcp_access_policy(runs: Runs) -> None:
    # [POL-ACCESS-04] the profile's non-empty allowed_tools lists no `paritysrv__` name: the
    # `__` rule admits them, excluded_tools removes write_file (POL-ACCESS-05)
    assert not [n for n in ALLOWED_TOOLS if "__" in n] and MCP_WRITE in EXCLUDED_TOOLS
    _check(
        runs,
        ("tools.mcp", "tools.mcp_deferred", "access.allowed_tools", "access.excluded_tools"),
        {"tools.mcp": sorted(MCP_ADMITTED), "tools.mcp_deferred": []},
        {"tools.mcp": [], "tools.mcp_deferred": sorted(MCP_ADMITTED)},
    )
    for m in runs.matrices:
        mode = "deferred" if m.world.deferred else "eager"
        for variant, run in m.by_variant.items():
            snap = run.subject
            seen = json.dumps(
                [snap[k] for k in ("tools.names", "tools.mcp", "tools.mcp_deferred")]
                + [snap["prompt.system"], _request_tools(run)]
            )
            assert MCP_WRITE not in seen, (mode, variant)
        # [POL-ACCESS-08] a caller allow-list is strict: only the names it lists exactly
        for variant, name in (("cron", MCP_READ), ("delegate<cron", MCP_LIST)):
            snap = m.by_variant[variant].subject
            assert snap["tools.mcp"] + snap["tools.mcp_deferred"] == [name], (mode, variant)
        # the listing shows the admitted MCP tools and not the excluded one
        listed = _listed(m.by_variant["gateway-tools"])
        assert MCP_READ in listed and MCP_LIST in listed and MCP_WRITE not in listed, mode
    # eager: the admitted wrappers reached the model on the reference (the `always` group
    # exposes read_file every turn, MCP-TFG-07)
    assert all(MCP_READ in names for names in _request_tools(runs.eager.by_variant[REFERENCE]))


@pytest.mark.req("POL-ASSEMBLE-10", "POL-ASSEMBLE-11", "POL-ASSEMBLE-12", "POL-PATH-11")
def test_parity_l2_mcp_mode(runs: Runs) -> None:
    _check(
        runs,
        (
            "mcp.mode", "tools.tool_search", "tools.mcp", "tools.mcp_deferred",
            "prompt.deferred_section", "tools.names", "assembly.list_deferred_mcp_specs",
        ),
        {
            "mcp.mode": "eager", "tools.tool_search": False, "tools.mcp_deferred": [],
            "prompt.deferred_section": "", "tools.names": CLI_TOOLS,
        },
        {
            "mcp.mode": "deferred", "tools.tool_search": True, "tools.mcp": [],
            "tools.mcp_deferred": sorted(MCP_ADMITTED), "prompt.deferred_section": DEFERRED_TEXT,
            "tools.names": CLI_BASE + CAPABILITY + ["tool_search", SKILL_TOOL],
        },
    )  # fmt: skip
    eager, deferred = runs.eager.by_variant, runs.deferred.by_variant
    # eager: no activated set; deferred: the `always` group activated read_file in advance
    assert eager[REFERENCE].detail["execution"].io.activated is None
    for variant, run in deferred.items():
        activated = run.detail["execution"].io.activated
        if run.subject["tools.tool_search"]:
            expected = tuple(n for n in run.subject["tools.mcp_deferred"] if n in PRE_ACTIVATED)
            assert activated is not None and activated.names() == expected, variant
    # what reached the model: eager offers wrappers and no tool_search; deferred offers
    # tool_search and the pre-activated tool, never the stub still to be searched for
    for names in _request_tools(eager[REFERENCE]):
        assert MCP_READ in names and "tool_search" not in names
    for names in _request_tools(deferred[REFERENCE]):
        assert {"tool_search", MCP_READ} <= set(names) and MCP_LIST not in names
    # [POL-ASSEMBLE-11] listing mode in both worlds: stubs listed as plain tools, no tool_search
    for by_variant in (eager, deferred):
        listing = by_variant["gateway-tools"]
        assert listing.subject["mcp.mode"] == "listing"
        listed = _listed(listing)
        assert "tool_search" not in listed
        assert [n for n in listed if n.startswith(f"{SERVER}__")] == MCP_ADMITTED
    assert (
        deferred["gateway-tools"].subject["tools.names"]
        == eager["gateway-tools"].subject["tools.names"]
    )


@pytest.mark.req("POL-ASSEMBLE-09", "POL-ASSEMBLE-08", "POL-ACCESS-04", "POL-ACCESS-08")
def test_parity_l2_capability_and_pins(runs: Runs) -> None:
    # mcp_resources is listed in allowed_tools, mcp_prompts is not (a name without `__` must be
    # listed exactly); the pin `paritysrv__test://doc/0` is admitted by the `__` rule
    assert "mcp_resources" in ALLOWED_TOOLS and "mcp_prompts" not in ALLOWED_TOOLS
    assert PIN not in ALLOWED_TOOLS
    pins = {"tools.capability": CAPABILITY, "prompt.pinned_section": PINNED_TEXT}
    _check(runs, ("tools.capability", "prompt.pinned_section", "prompt.system"), pins)
    assert f"body of {PIN_URI}" in PINNED_TEXT
    for m in runs.matrices:
        for variant, run in m.by_variant.items():
            snap = run.subject
            assert "mcp_prompts" not in snap["tools.names"], variant  # not even on cron
            assert snap["prompt.pinned_section"] in snap["prompt.system"], variant
            if snap["access.caller_allowed"] is not None:  # ∩ job: neither listed
                assert snap["tools.capability"] == [] and snap["prompt.pinned_section"] == ""
        assert "mcp_resources" in _listed(m.by_variant["gateway-tools"])


def _cross_agent_config(deferred: bool) -> str:
    return (
        GATEWAY_TOML
        + f"""
[mcp]
enabled = true
deferred_loading = {"true" if deferred else "false"}
{mcp_server_toml("srv_alpha", ["read_file", "alpha_note"], ["test://doc/1"])}
{mcp_server_toml("srv_beta", ["read_file", "beta_note"], ["test://doc/2"])}
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
    )


# Per agent: its server, its tools (server order), its pin, and the marks of the other agent.
CROSS_AGENTS = {
    "alpha": ("srv_alpha", ["srv_alpha__read_file", "srv_alpha__alpha_note"], "test://doc/1"),
    "beta": ("srv_beta", ["srv_beta__read_file", "srv_beta__beta_note"], "test://doc/2"),
}


@pytest.mark.req("POL-PARITY-15", "POL-BUNDLE-02", "POL-BUNDLE-06")
@pytest.mark.parametrize("deferred", [False, True])
def test_parity_l2_cross_agent_mcp_isolation(tmp_path: Path, deferred: bool) -> None:
    config = write_config(
        tmp_path / "cfg",
        tmp_path / "data",
        _cross_agent_config(deferred),
        {"m": [{"chunks": ["ok"]}]},
    )
    with capturing() as captured:
        with acp_driver(config) as driver:  # one connection, one session per agent
            driver.new_session("alpha", tmp_path)
            driver.new_session("beta", tmp_path)
        assert run_cli(config, "alpha", "hi").status == 0
        assert run_cli(config, "beta", "hi").status == 0
        with gateway_driver(config) as gateway:
            listings = {alias: gateway.tools(alias) for alias in CROSS_AGENTS}
        for alias, (server, tools, pin) in CROSS_AGENTS.items():
            assert listings[alias].status_code == 200, listings[alias].text
            executions = captured.of(alias)
            assert sorted(e.path for e in executions) == ["acp", "cli-run", "gateway-tools"]
            other_alias = next(a for a in CROSS_AGENTS if a != alias)
            other_server, other_tools, other_pin = CROSS_AGENTS[other_alias]
            marks = [other_server, other_pin, *other_tools]
            for execution in executions:
                snap = execution.snapshot()
                where = (alias, execution.path)
                assert snap["mcp.granted_servers"] == [server] and snap["mcp.connected"], where
                # its own server really served it: tools or stubs, and the pin
                if snap["mcp.mode"] == "deferred":
                    assert (snap["tools.mcp"], snap["tools.mcp_deferred"]) == ([], sorted(tools))
                    assert snap["tools.tool_search"], where
                else:
                    assert (snap["tools.mcp"], snap["tools.mcp_deferred"]) == (sorted(tools), [])
                assert f"{server}__{pin}" in snap["prompt.pinned_section"], where
                assert snap["tools.capability"] == ["mcp_prompts", "mcp_resources"], where
                # and nothing of the other agent's
                seen = json.dumps(
                    [snap[k] for k in ("mcp.granted_servers", "tools.names", "tools.mcp",
                                       "tools.mcp_deferred", "prompt.pinned_section",
                                       "prompt.deferred_section", "prompt.system")]
                )  # fmt: skip
                assert not [mark for mark in marks if mark in seen], where
            expected_mode = "deferred" if deferred else "eager"
            assert {e.snapshot()["mcp.mode"] for e in executions if e.path != "gateway-tools"} == {
                expected_mode
            }
            listed = json.dumps(listings[alias].json())
            assert all(name in listed for name in tools)
            assert not [mark for mark in marks if mark in listed]


@pytest.mark.req("POL-ASSEMBLE-15", "POL-SKILL-01", "POL-SKILL-08")
def test_parity_l2_skills(runs: Runs) -> None:
    _check(
        runs,
        ("skills.loaded", "tools.skill"),
        {"skills.loaded": [SKILL], "tools.skill": [SKILL_TOOL]},
    )


@pytest.mark.req("POL-ASSEMBLE-16", "POL-RESOLVE-13")
def test_parity_l2_final_exclusion(runs: Runs) -> None:
    _check(
        runs,
        ("tools.names", "access.excluded_tools"),
        {"tools.names": CLI_TOOLS},
        {"tools.names": CLI_BASE + CAPABILITY + ["tool_search", SKILL_TOOL]},
    )
    for m in runs.matrices:
        for variant, run in m.by_variant.items():
            present = set(run.subject["tools.names"]) | set(run.subject["tools.mcp_deferred"])
            assert not set(EXCLUDED_TOOLS) & present, variant
            knobs = run.detail["execution"].knobs
            assert knobs.excluded_tools == frozenset(EXCLUDED_TOOLS), variant


@pytest.mark.req("POL-ASSEMBLE-05", "POL-PERIPH-01", "POL-PATH-05", "POL-PATH-13")
def test_parity_l2_peripherals(runs: Runs) -> None:
    _check(
        runs,
        ("tools.peripheral", "assembly.connect_peripherals"),
        {"tools.peripheral": PERIPHERAL, "assembly.connect_peripherals": True},
    )
    # [POL-PERIPH-01] [POL-PATH-11] both gateway builders start with no port held; the chat
    # opens the board (the control), the listing never touches it and lists no gpio tool
    [board] = runs.world.config.peripherals.boards
    assert runs.by_variant["gateway-chat"].detail["opens"] == [board.path]
    assert runs.by_variant["gateway-tools"].detail["opens"] == []
    listing = runs.by_variant["gateway-tools"].detail["response"].json()
    assert not {t["name"] for t in listing["tools"]} & {"gpio_read", "gpio_write"}


@pytest.mark.req("POL-PATH-05", "POL-MEM-02", "POL-ASSEMBLE-07", "POL-PATH-13")
def test_parity_l2_memory_strip(runs: Runs) -> None:
    _check(
        runs,
        ("memory.enabled", "memory.store", "assembly.exclude_memory"),
        lambda w: {
            "memory.enabled": True,
            "memory.store": str(w.config.data_dir / "memory" / f"{SUBJECT}.sqlite3"),
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
    for variant in ("delegate<cli-run", "gateway-chat", "gateway-tools"):
        assert runs.by_variant[variant].detail["execution"].io.approval.approver is None, variant


# --- security, knobs, model, prompt ----------------------------------------------------------


@pytest.mark.req("POL-FS-07", "POL-AUTO-04", "POL-DELEG-10", "POL-SKILL-01")
def test_parity_l2_security_policy(runs: Runs) -> None:
    _check(
        runs,
        tuple(k for k in SNAPSHOT_KEYS if k.startswith("security.")),
        lambda w: {
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
            "knobs.tool_filter_groups": [{"mode": "always", "tools": [MCP_READ], "keywords": []}],
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
        lambda w: {
            "prompt.system": w.prompt_for(w.subject_ws, "", PINNED_TEXT),
            "prompt.deferred_section": "",
            "prompt.pinned_section": PINNED_TEXT,
        },
        lambda w: {
            "prompt.system": w.prompt_for(w.subject_ws, DEFERRED_TEXT, PINNED_TEXT),
            "prompt.deferred_section": DEFERRED_TEXT,
            "prompt.pinned_section": PINNED_TEXT,
        },
    )
    for m in runs.matrices:
        for variant, run in m.by_variant.items():
            execution = run.detail["execution"]
            for request in requests_of(execution):
                system = request["messages"][0]  # type: ignore[index]
                want = {"role": "system", "content": run.subject["prompt.system"]}
                assert system == want, variant


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
