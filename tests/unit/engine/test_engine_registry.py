"""The assembly seam `ScopedToolRegistry.assemble()`, driven through `resolve()` (policy.md §5)."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.approvers import OkApprover
from tests.helpers.fake_board import FakeBoard
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine import resolve as resolve_module
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.registry import ScopedToolRegistry
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.tools import peripherals
from zeroclaw_ref.tools.base import ToolContext, ToolResult
from zeroclaw_ref.tools.catalogue import CATALOGUE_ORDER, MEMORY_TOOLS, build_universe

CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
{profile}
[runtime_profiles.r]
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
delegates = ["b"]
[agents.b]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
{extra}
"""

GIT_HELPER = """
[[tools]]
name = "status"
description = "Show the short git status of a path"
command = "git status --short {{path}}"
args = { path = "Path inside the workspace" }

[[tools]]
name = "log"
description = "Show the log"
command = "git log -n 1"
"""
ZIP_TOOLS = """
[[tools]]
name = "pack"
description = "Pack"
command = "echo pack"
"""


@pytest.fixture
def board() -> Iterator[FakeBoard]:
    fake = FakeBoard()
    yield fake
    peripherals.reset_for_tests()  # release the port before the pty goes away
    fake.stop()


def _periph(board: FakeBoard | None, enabled: bool = True) -> str:
    if board is None:
        return ""
    return (
        f"[peripherals]\nenabled = {'true' if enabled else 'false'}\n"
        'allowed_path_prefixes = ["/dev/pts/"]\n'
        f'[[peripherals.boards]]\nboard = "b0"\ntransport = "serial"\npath = "{board.pts_path}"\n'
    )


def _config(
    root: Path,
    profile: str = "",
    extra: str = "",
    skills: dict[str, tuple[str | None, str | None]] | None = None,
) -> ConfigSnapshot:
    cfg = root / "cfg"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "model.json").write_text(json.dumps({"turns": [{"chunks": ["ok"]}]}))
    (cfg / "config.toml").write_text(CONFIG.format(profile=profile, extra=extra))
    for name, (md, toml) in (skills or {}).items():
        folder = cfg / "agents" / "a" / "workspace" / "skills" / name
        folder.mkdir(parents=True)
        if md is not None:
            (folder / "SKILL.md").write_text(md)
        if toml is not None:
            (folder / "SKILL.toml").write_text(toml)
    return load_config(cfg, root / "data", {})


def _resolve(config: ConfigSnapshot, path: str, root: Path, **kw: object) -> ResolvedAgentExecution:
    if path == "acp":
        ws = root / "session"
        ws.mkdir(exist_ok=True)
        return resolve(config, "a", PathRequest("acp", approver=OkApprover(), session_workspace=ws))
    if path == "cron":
        return resolve(config, "a", PathRequest("cron", caller_allowed=kw.get("caller")))  # type: ignore[arg-type]
    if path == "delegate":
        parent = resolve(config, "a", PathRequest("cli-run"))
        return resolve(config, "a", PathRequest("delegate", parent=parent))
    return resolve(config, "a", PathRequest(path))


SKILLS = {"git_helper": ("Use git.", GIT_HELPER), "zip": (None, ZIP_TOOLS)}
BUILTINS_CLI = tuple(n for n in CATALOGUE_ORDER if n != "deliver_file")


# --- POL-ASSEMBLE-18: registry order ----------------------------------------------------


@pytest.mark.req("POL-ASSEMBLE-18", "POL-ASSEMBLE-03", "POL-TOOL-01")
def test_registry_order_is_catalogue_then_gpio_then_skills(
    tmp_path: Path, board: FakeBoard
) -> None:
    config = _config(tmp_path, extra=_periph(board), skills=SKILLS)
    execution = _resolve(config, "cli-run", tmp_path)
    # skill tools by skill name, then in declaration order within a skill
    assert execution.io.tools.names == (
        *BUILTINS_CLI, "gpio_read", "gpio_write",
        "git_helper__status", "git_helper__log", "zip__pack",
    )  # fmt: skip
    snapshot = execution.snapshot()
    assert snapshot["tools.peripheral"] == ["gpio_read", "gpio_write"]
    assert snapshot["tools.skill"] == ["git_helper__log", "git_helper__status", "zip__pack"]
    assert snapshot["tools.builtin"] == sorted(BUILTINS_CLI)


@pytest.mark.req("POL-TOOL-01", "POL-DELEG-01")
def test_delegate_is_in_the_universe_only_with_delegate_targets(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert "delegate" in _resolve(config, "cli-run", tmp_path).io.tools.names
    assert "delegate" not in resolve(config, "b", PathRequest("cli-run")).io.tools.names


# --- POL-ASSEMBLE-06: the built-in filter -----------------------------------------------


@pytest.mark.req("POL-ASSEMBLE-06", "POL-ACCESS-02", "POL-ACCESS-03")
@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("", BUILTINS_CLI),
        ("allowed_tools = []", BUILTINS_CLI),
        ('allowed_tools = ["todo_write", "file_read", "shell"]',
         ("shell", "file_read", "todo_write")),
        ('excluded_tools = ["shell", "cron_add"]',
         tuple(n for n in BUILTINS_CLI if n not in ("shell", "cron_add"))),
        ('allowed_tools = ["file_read", "shell"]\nexcluded_tools = ["shell"]', ("file_read",)),
    ],
)  # fmt: skip
def test_builtin_filter_without_a_caller_list(
    tmp_path: Path, profile: str, expected: tuple[str, ...]
) -> None:
    execution = _resolve(_config(tmp_path, profile), "cli-run", tmp_path)
    assert execution.io.tools.names == expected


@pytest.mark.req("POL-ASSEMBLE-06", "POL-ACCESS-08", "POL-ACCESS-09", "POL-PATH-17")
@pytest.mark.parametrize(
    ("profile", "caller", "expected"),
    [
        ("", frozenset({"todo_write", "file_read"}), ("file_read", "todo_write")),
        ('allowed_tools = ["file_read", "shell"]', frozenset({"todo_write", "file_read"}),
         ("file_read",)),
        ("", frozenset({"file_read", "no_such_tool"}), ("file_read",)),
        ("", frozenset(), ()),
        ("", None, BUILTINS_CLI),
    ],
)  # fmt: skip
def test_builtin_filter_with_a_caller_list(
    tmp_path: Path, profile: str, caller: frozenset[str] | None, expected: tuple[str, ...]
) -> None:
    execution = _resolve(_config(tmp_path, profile), "cron", tmp_path, caller=caller)
    assert execution.io.tools.names == expected


# --- POL-ASSEMBLE-07: the context filter ------------------------------------------------


@pytest.mark.req("POL-ASSEMBLE-07", "POL-PATH-05")
@pytest.mark.parametrize(
    ("path", "memory", "deliver"),
    [
        ("acp", False, True),
        ("cli-run", True, False),
        ("gateway-chat", True, False),
        ("gateway-tools", True, False),
        ("cron", True, False),
    ],
)
def test_memory_and_deliver_file_follow_the_path(
    tmp_path: Path, path: str, memory: bool, deliver: bool
) -> None:
    names = set(_resolve(_config(tmp_path), path, tmp_path).io.tools.names)
    assert (names >= MEMORY_TOOLS) is memory and not (MEMORY_TOOLS & names and not memory)
    assert ("deliver_file" in names) is deliver


# --- POL-ASSEMBLE-15 / POL-SKILL-08: skills through the access policy ---------------------


@pytest.mark.req("POL-ASSEMBLE-15", "POL-SKILL-08", "POL-ACCESS-04", "POL-ACCESS-08")
@pytest.mark.parametrize(
    ("profile", "caller", "expected"),
    [
        ("", None, {"git_helper__status", "git_helper__log", "zip__pack"}),
        # a non-empty allowed_tools admits `__` names without listing them
        ('allowed_tools = ["file_read"]', None, {"git_helper__status", "git_helper__log",
                                                 "zip__pack"}),
        # excluded wins over the `__` rule
        ('allowed_tools = ["file_read"]\nexcluded_tools = ["git_helper__log"]', None,
         {"git_helper__status", "zip__pack"}),
        # the caller list is strict: no `__` auto-admission
        ("", frozenset({"file_read"}), set()),
        ('allowed_tools = ["file_read"]', frozenset({"file_read"}), set()),
        ("", frozenset({"zip__pack"}), {"zip__pack"}),
        ('allowed_tools = ["file_read"]', frozenset({"git_helper__status"}),
         {"git_helper__status"}),
        ("deny_all_tools = true", None, set()),
    ],
)  # fmt: skip
def test_skill_tools_are_admitted_by_the_access_policy(
    tmp_path: Path, profile: str, caller: frozenset[str] | None, expected: set[str]
) -> None:
    config = _config(tmp_path, profile, skills=SKILLS)
    path = "cli-run" if caller is None else "cron"
    execution = _resolve(config, path, tmp_path, caller=caller)
    assert {n for n in execution.io.tools.names if "__" in n} == expected
    # skills load (and their instructions reach the prompt) whether or not tools are admitted
    assert [s.name for s in execution.skills] == ["git_helper", "zip"]


@dataclass
class ClashTool:
    name: str = "git_helper__status"
    description: str = "the earlier owner"
    act: bool = False
    parameters: JSONObject = dataclasses.field(default_factory=lambda: {"type": "object"})

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        return ToolResult.ok("earlier")


@pytest.mark.req("POL-ASSEMBLE-14")
def test_a_skill_tool_whose_name_is_taken_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    earlier = ClashTool()
    monkeypatch.setattr(
        resolve_module, "build_universe", lambda s, d: (*build_universe(s, d), earlier)
    )
    config = _config(tmp_path, skills=SKILLS)
    with caplog.at_level("WARNING"):
        execution = _resolve(config, "cli-run", tmp_path)
    names = execution.io.tools.names
    assert names.count("git_helper__status") == 1
    assert execution.io.tools.get("git_helper__status") is earlier
    assert "git_helper__log" in names and "zip__pack" in names
    assert any("git_helper__status" in r.getMessage() for r in caplog.records
               if r.levelname == "WARNING")  # fmt: skip


# --- POL-ASSEMBLE-16 / 17 ---------------------------------------------------------------


@pytest.mark.req("POL-ASSEMBLE-16", "POL-ACCESS-05")
def test_final_subtraction_removes_excluded_names_of_every_origin(
    tmp_path: Path, board: FakeBoard
) -> None:
    profile = 'excluded_tools = ["shell", "gpio_write", "zip__pack", "git_helper__status"]'
    config = _config(tmp_path, profile, extra=_periph(board), skills=SKILLS)
    for path in ("cli-run", "acp", "cron"):
        names = set(_resolve(config, path, tmp_path).io.tools.names)
        assert not names & {"shell", "gpio_write", "zip__pack", "git_helper__status"}, path
        assert {"gpio_read", "git_helper__log", "file_read"} <= names, path


@pytest.mark.req("POL-ASSEMBLE-17", "POL-ACCESS-06")
@pytest.mark.parametrize("path", ["cli-run", "acp", "cron", "gateway-chat", "gateway-tools",
                                  "delegate"])  # fmt: skip
def test_deny_all_empties_the_registry(tmp_path: Path, board: FakeBoard, path: str) -> None:
    config = _config(tmp_path, "deny_all_tools = true", extra=_periph(board), skills=SKILLS)
    execution = _resolve(config, path, tmp_path)
    assert execution.io.tools.names == ()
    assert execution.io.tools.deferred_section == "" and execution.io.tools.pinned_section == ""
    assert execution.io.deferred_section == "" and execution.io.pinned_section == ""


# --- POL-ASSEMBLE-04: the switches only narrow -------------------------------------------


@pytest.mark.req("POL-ASSEMBLE-04")
def test_no_switch_combination_adds_a_tool(tmp_path: Path, board: FakeBoard) -> None:
    config = _config(tmp_path, extra=_periph(board), skills=SKILLS)
    base = _resolve(config, "cli-run", tmp_path).assembly
    defaults = dataclasses.replace(
        base,
        caller_allowed=None,
        connect_mcp=True,
        connect_peripherals=True,
        exclude_memory=False,
        acp_delivery=True,
        list_deferred_mcp_specs=False,
    )
    full = set(ScopedToolRegistry.assemble(defaults).names)
    assert {"gpio_read", "deliver_file", "memory_store", "zip__pack"} <= full
    callers = (None, frozenset(), frozenset({"file_read", "zip__pack", "gpio_read", "ghost"}))
    for caller, *flags in itertools.product(callers, *([(False, True)] * 5)):
        spec = dataclasses.replace(
            defaults,
            caller_allowed=caller,
            connect_mcp=flags[0],
            connect_peripherals=flags[1],
            exclude_memory=flags[2],
            acp_delivery=flags[3],
            list_deferred_mcp_specs=flags[4],
        )
        names = set(ScopedToolRegistry.assemble(spec).names)
        assert names <= full, (caller, flags, names - full)


# --- POL-PERIPH-01 / POL-ASSEMBLE-05: peripherals per path --------------------------------


@pytest.mark.req("POL-PERIPH-01", "POL-ASSEMBLE-05", "POL-PATH-05")
@pytest.mark.parametrize("path", ["acp", "cli-run", "cron", "gateway-chat"])
def test_connecting_paths_get_the_gpio_tools(tmp_path: Path, board: FakeBoard, path: str) -> None:
    config = _config(tmp_path, extra=_periph(board))
    execution = _resolve(config, path, tmp_path)
    names = execution.io.tools.names
    assert names[-2:] == ("gpio_read", "gpio_write")
    result = execution.io.tools.get("gpio_read").execute(  # type: ignore[union-attr]
        {"pin": 3}, ToolContext(cancel=CancelToken())
    )
    assert result.success and board.requests[-1]["cmd"] == "gpio_read"


def _refuse(config: object) -> tuple[()]:
    raise AssertionError("peripheral_tools must not be called on this path")


@pytest.mark.req("POL-PERIPH-01", "POL-ASSEMBLE-05", "POL-PATH-11", "POL-PATH-13")
@pytest.mark.parametrize("path", ["gateway-tools", "delegate"])
def test_non_connecting_paths_never_touch_peripherals(
    tmp_path: Path, board: FakeBoard, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    config = _config(tmp_path, extra=_periph(board))
    if path == "delegate":
        parent = resolve(config, "a", PathRequest("cli-run"))  # opens the board, legitimately
        assert "gpio_read" in parent.io.tools.names
    monkeypatch.setattr(peripherals, "peripheral_tools", _refuse)
    if path == "delegate":
        execution = resolve(config, "b", PathRequest("delegate", parent=parent))
    else:
        execution = _resolve(config, path, tmp_path)
    assert not {"gpio_read", "gpio_write"} & set(execution.io.tools.names)
    assert execution.snapshot()["tools.peripheral"] == []


@pytest.mark.req("POL-PERIPH-01", "POL-ASSEMBLE-05")
@pytest.mark.parametrize("path", ["acp", "cli-run", "cron", "gateway-chat", "gateway-tools"])
def test_disabled_peripherals_are_never_touched(
    tmp_path: Path, board: FakeBoard, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    monkeypatch.setattr(peripherals, "peripheral_tools", _refuse)
    config = _config(tmp_path, extra=_periph(board, enabled=False))
    execution = _resolve(config, path, tmp_path)
    assert not {"gpio_read", "gpio_write"} & set(execution.io.tools.names)
    assert board.lines == []


@pytest.mark.req("POL-PERIPH-08", "POL-ASSEMBLE-06")
def test_peripheral_tools_pass_the_builtin_filter_by_exact_name(
    tmp_path: Path, board: FakeBoard
) -> None:
    config = _config(tmp_path, 'allowed_tools = ["gpio_read"]', extra=_periph(board))
    assert _resolve(config, "cli-run", tmp_path).io.tools.names == ("gpio_read",)
    only_write = frozenset({"gpio_write"})
    assert _resolve(config, "cron", tmp_path, caller=only_write).io.tools.names == ()
