"""The parity fixture configuration of POL-PARITY-11, and one builder per construction path.

The agent under test is `subject`. Every setting of policy.md §7.3 has a distinctive value in
its profile, so a path that forgot a setting shows up as a snapshot that differs. `lead` is a
parent that delegates to `subject`; `lead2` delegates to `ghost`, which cannot be dispatched.

The subject's bundle `parity` grants one real stdio MCP server (`paritysrv`, the test server of
`conftest.mcp_server_toml`) with three tools, resources, a prompt and one pinned resource. The
profile's non-empty `allowed_tools` lists none of the `paritysrv__*` names: `read_file` and
`list_dir` are admitted by the `__` rule (POL-ACCESS-04), `write_file` is removed by
`excluded_tools` (POL-ACCESS-05), the pin `paritysrv__test://doc/0` is admitted by the `__`
rule, `mcp_resources` is listed and `mcp_prompts` is not. `make_world(deferred=True)` builds the
same world with `mcp.deferred_loading = true`.

A builder drives one front door for real and returns what the resolve observer captured. A new
path is one more entry in `BUILDERS` plus its rows in the intended-difference table of
`test_l2_paths.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.fake_board import FakeBoard
from tests.parity.conftest import (
    GATEWAY_TOML,
    Captured,
    acp_driver,
    capturing,
    gateway_driver,
    mcp_server_toml,
    run_cli,
    run_cron,
    serial_opens,
    write_config,
    write_skill,
)
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.tools import peripherals

SUBJECT = "subject"
LEAD = "lead"
SKILL = "parity_skill"
SKILL_TOOL = f"{SKILL}__probe"
SERVER = "paritysrv"
SERVER_TOOLS = ["read_file", "write_file", "list_dir"]  # served in this order
MCP_READ, MCP_WRITE, MCP_LIST = (f"{SERVER}__{name}" for name in SERVER_TOOLS)
PIN_URI = "test://doc/0"
PIN = f"{SERVER}__{PIN_URI}"

# The subject's profile (non-default everywhere).
ALLOWED_TOOLS = [
    "shell", "file_read", "file_write", "glob_search", "deliver_file", "ask_user",
    "memory_store", "memory_recall", "cron_list", "todo_write", "gpio_read", "gpio_write",
    "mcp_resources",
]  # fmt: skip
EXCLUDED_TOOLS = ["gpio_write", "cron_list", MCP_WRITE]
EXTRA_AUTO_APPROVE = ["gpio_read", SKILL_TOOL]
ALWAYS_ASK = ["file_write"]
ALLOWED_COMMANDS = ["echo", "git", "ls"]
FORBIDDEN_PATHS = ["/parity-secret"]
PASSTHROUGH = ["PARITY_VAR"]
SYSTEM_PROMPT = "You are the parity subject."
SKILL_INSTRUCTIONS = "Probe things carefully."
PROVIDER_TEMPERATURE = 0.25
MODEL = "parity-model-x"

# The cron job that runs `subject` directly, and the one that runs `lead`, which delegates.
SUBJECT_JOB_TOOLS = [
    "file_read", "shell", "gpio_read", "memory_recall", SKILL_TOOL, "content_search", MCP_READ,
    "mcp_prompts",
]  # fmt: skip
LEAD_JOB_TOOLS = ["delegate", "file_read", "shell", SKILL_TOOL, "gpio_read", MCP_LIST]

DELEGATED_PROMPT = "zqprobe"
DELEGATED_CONTEXT = "zqbackground"

SKILL_MANIFEST = """
[[tools]]
name = "probe"
description = "Echo a word"
command = "echo {{word}}"
args = { word = "The word to echo" }
timeout_secs = 5
"""


def _toml(
    root: Path, board_path: str, *, deny_all: bool, acp_enable_mcp: bool, deferred: bool
) -> str:
    allowed = f"allowed_tools = {json.dumps(ALLOWED_TOOLS)}"
    access = "deny_all_tools = true" if deny_all else allowed
    return (
        GATEWAY_TOML
        + f"""
[mcp]
enabled = true
deferred_loading = {"true" if deferred else "false"}
{mcp_server_toml(SERVER, SERVER_TOOLS, [PIN_URI])}
[mcp_bundles.parity]
servers = ["{SERVER}"]

[peripherals]
enabled = true
allowed_path_prefixes = ["/dev/pts/"]

[[peripherals.boards]]
board = "fake"
transport = "serial"
path = "{board_path}"

[providers.subject_model]
kind = "scripted"
model = "{MODEL}"
temperature = {PROVIDER_TEMPERATURE}
script = "subject_model.json"

[providers.lead_model]
kind = "scripted"
model = "lead-model"
script = "lead_model.json"

[providers.lead2_model]
kind = "scripted"
model = "lead-model"
script = "lead2_model.json"

[risk_profiles.subject]
level = "full"
workspace_only = false
{access}
excluded_tools = {json.dumps(EXCLUDED_TOOLS)}
auto_approve = {json.dumps(EXTRA_AUTO_APPROVE)}
always_ask = {json.dumps(ALWAYS_ASK)}
allowed_commands = {json.dumps(ALLOWED_COMMANDS)}
forbidden_paths = {json.dumps(FORBIDDEN_PATHS)}
allowed_roots = ["{root / "extra-root"}"]
require_approval_for_medium_risk = false
block_high_risk_commands = false
shell_env_passthrough = {json.dumps(PASSTHROUGH)}

[risk_profiles.lead]
auto_approve = ["delegate"]

[runtime_profiles.subject]
max_tool_iterations = 7
max_history_messages = 21
max_tool_result_chars = 12345
parallel_tools = true
shell_timeout_secs = 17
max_delegation_depth = 3
auto_memory = false

[[runtime_profiles.subject.tool_filter_groups]]
mode = "always"
tools = ["{MCP_READ}"]

[runtime_profiles.lead]

[agents.subject]
model_provider = "subject_model"
risk_profile = "subject"
runtime_profile = "subject"
system_prompt = "{SYSTEM_PROMPT}"
mcp_bundles = ["parity"]
acp_enable_mcp = {"true" if acp_enable_mcp else "false"}

[agents.subject.workspace]
path = "{root / "subject-ws"}"

[agents.lead]
model_provider = "lead_model"
risk_profile = "lead"
runtime_profile = "lead"
delegates = ["{SUBJECT}"]

[agents.lead.workspace]
path = "{root / "lead-ws"}"

[agents.lead2]
model_provider = "lead2_model"
risk_profile = "lead"
runtime_profile = "lead"
delegates = ["ghost"]

[agents.ghost]
enabled = false
model_provider = "subject_model"
risk_profile = "subject"
runtime_profile = "subject"
"""
    )


def _delegate_call(target: str) -> JSONObject:
    arguments = {"agent": target, "prompt": DELEGATED_PROMPT, "context": DELEGATED_CONTEXT}
    return {"tool_calls": [{"name": "delegate", "arguments": arguments}]}


SCRIPTS: dict[str, list[JSONObject]] = {
    "subject_model": [{"chunks": ["subject done"]}],
    "lead_model": [_delegate_call(SUBJECT), {"chunks": ["lead done"]}],
    "lead2_model": [_delegate_call("ghost"), {"chunks": ["lead2 done"]}],
}


@dataclass(frozen=True)
class World:
    root: Path
    config: ConfigSnapshot
    no_mcp_config: ConfigSnapshot  # the same, with `acp_enable_mcp = false` for subject
    subject_ws: Path
    session_ws: Path  # the `cwd` of every ACP session
    extra_root: Path
    deferred: bool  # mcp.deferred_loading

    def prompt_for(self, workspace: Path, deferred: str = "", pinned: str = "") -> str:
        """The subject's system prompt with `workspace` as its working directory and the MCP
        block of mcp.md MCP-PIN-05 when either section is non-empty (POL-RESOLVE-14)."""
        block = f"\n\n{deferred}\n\n{pinned}" if deferred or pinned else ""
        return (
            f"{SYSTEM_PROMPT}\n\nWorking directory: {workspace}"
            f"\n\n## Skills\n\n### {SKILL}\n\n{SKILL_INSTRUCTIONS}{block}"
        )


def make_world(
    root: Path, board: FakeBoard, *, deny_all: bool = False, deferred: bool = False
) -> World:
    subject_ws = root / "subject-ws"
    write_skill(subject_ws, SKILL, SKILL_INSTRUCTIONS, SKILL_MANIFEST)
    session_ws = root / "session-cwd"
    session_ws.mkdir(parents=True)
    data_dir = root / "data"
    config = write_config(
        root / "cfg",
        data_dir,
        _toml(root, board.pts_path, deny_all=deny_all, acp_enable_mcp=True, deferred=deferred),
        SCRIPTS,
    )
    no_mcp = write_config(
        root / "cfg-no-mcp",
        data_dir,
        _toml(root, board.pts_path, deny_all=deny_all, acp_enable_mcp=False, deferred=deferred),
        SCRIPTS,
    )
    return World(
        root,
        config,
        no_mcp,
        subject_ws.resolve(),
        session_ws.resolve(),
        root / "extra-root",
        deferred,
    )


# --- builders: one per path variant ----------------------------------------------------------


@dataclass
class PathRun:
    """What one front door minted for `subject`, plus the evidence around it."""

    captured: Captured
    subject: JSONObject  # the subject execution's snapshot
    detail: dict[str, Any]


def _acp(config: ConfigSnapshot, world: World, prompt_alias: str | None) -> PathRun:
    with capturing() as captured, acp_driver(config) as driver:
        detail: dict[str, Any] = {}
        if prompt_alias is None:
            driver.new_session(SUBJECT, world.session_ws)
            execution = captured.one(SUBJECT, "acp")
        else:
            session = driver.new_session(prompt_alias, world.session_ws)
            detail["response"] = driver.prompt(session, "go")
            execution = captured.one(SUBJECT, "delegate")
        return PathRun(captured, execution.snapshot(), detail | {"execution": execution})


def build_acp(world: World) -> PathRun:
    return _acp(world.config, world, None)


def build_acp_no_mcp(world: World) -> PathRun:
    return _acp(world.no_mcp_config, world, None)


def build_cli_run(world: World) -> PathRun:
    with capturing() as captured:
        run = run_cli(world.config, SUBJECT, "ping")
        execution = captured.one(SUBJECT, "cli-run")
        return PathRun(captured, execution.snapshot(), {"run": run, "execution": execution})


def build_cron(world: World) -> PathRun:
    with capturing() as captured:
        results = run_cron(world.config, SUBJECT, "ping", SUBJECT_JOB_TOOLS)
        execution = captured.one(SUBJECT, "cron")
        return PathRun(captured, execution.snapshot(), {"results": results, "execution": execution})


def build_delegate_from_cli(world: World) -> PathRun:
    with capturing() as captured:
        run = run_cli(world.config, LEAD, "go")
        execution = captured.one(SUBJECT, "delegate")
        return PathRun(captured, execution.snapshot(), {"run": run, "execution": execution})


def build_delegate_from_acp(world: World) -> PathRun:
    return _acp(world.config, world, LEAD)


def build_delegate_from_cron(world: World) -> PathRun:
    with capturing() as captured:
        results = run_cron(world.config, LEAD, "go", LEAD_JOB_TOOLS)
        execution = captured.one(SUBJECT, "delegate")
        return PathRun(captured, execution.snapshot(), {"results": results, "execution": execution})


def build_gateway_chat(world: World) -> PathRun:
    """`POST /api/chat` for `subject`, with no serial port held beforehand: the device paths
    this path opens are recorded (`opens`)."""
    peripherals.reset_for_tests()  # close the ports earlier paths opened (POL-PERIPH-02)
    with capturing() as captured, gateway_driver(world.config) as gateway, serial_opens() as opens:
        response = gateway.chat(SUBJECT, "ping")
        execution = captured.one(SUBJECT, "gateway-chat")
        detail = {"response": response, "opens": list(opens), "execution": execution}
        return PathRun(captured, execution.snapshot(), detail)


def build_gateway_tools(world: World) -> PathRun:
    """`GET /api/tools?agent=subject`, with no serial port held beforehand, so that a listing
    that connected peripherals would have to open the board (recorded in `opens`)."""
    peripherals.reset_for_tests()
    with capturing() as captured, gateway_driver(world.config) as gateway, serial_opens() as opens:
        response = gateway.tools(SUBJECT)
        execution = captured.one(SUBJECT, "gateway-tools")
        detail = {"response": response, "opens": list(opens), "execution": execution}
        return PathRun(captured, execution.snapshot(), detail)


# Variant name -> builder. `cli-run` is the reference every other variant is compared with.
BUILDERS: dict[str, Callable[[World], PathRun]] = {
    "cli-run": build_cli_run,
    "acp": build_acp,
    "acp/no-mcp": build_acp_no_mcp,
    "cron": build_cron,
    "delegate<cli-run": build_delegate_from_cli,
    "delegate<acp": build_delegate_from_acp,
    "delegate<cron": build_delegate_from_cron,
    "gateway-chat": build_gateway_chat,
    "gateway-tools": build_gateway_tools,
}
