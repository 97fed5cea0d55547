"""L1 engine locks (policy.md §8.3): the real engine, a scripted model, real front doors, and
an observable effect (a file that appears or not) to count what really executed.

No MCP tool can exist in these setups yet: this build contacts no MCP server (the client lands
with issue 6). Where the table asks for an MCP call, the script calls the made-up `srv__tool`
on a granted server `srv`; it must end as `Unknown tool: srv__tool` and never execute.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tests.parity.conftest import (
    GATEWAY_TOML,
    acp_driver,
    capturing,
    gateway_driver,
    reject_once,
    requests_of,
    run_cli,
    run_cron,
    tool_results,
    write_config,
    write_skill,
)
from zeroclaw_ref.cli import agent as cli_agent
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine.turn import MAX_ITERATIONS_PROMPT

RUNTIME_DENIAL = (  # POL-APPROVE-07 gives this text as the result itself, without `Error: `
    "Tool call not executed: 'shell' requires approval and no operator decision was "
    "available, so the runtime denied it by policy. This was not a user's decision."
)

CONFIG = """
[mcp]
enabled = true

[[mcp.servers]]
name = "srv"
command = "parity-l1-never-started"

[mcp_bundles.b]
servers = ["srv"]

[providers.m]
kind = "scripted"
script = "m.json"

[risk_profiles.p]
allowed_commands = ["touch", "echo"]
require_approval_for_medium_risk = false
{profile}

[runtime_profiles.r]
{runtime}

[agents.a]
model_provider = "m"
risk_profile = "p"
runtime_profile = "r"
mcp_bundles = ["b"]
acp_enable_mcp = true

[agents.a.workspace]
path = "{workspace}"
"""


def _call(tool: str, /, **arguments: Any) -> JSONObject:
    return {"name": tool, "arguments": arguments}


def _setup(
    tmp_path: Path, turns: list[JSONObject], profile: str = "", runtime: str = ""
) -> tuple[ConfigSnapshot, Path]:
    workspace = (tmp_path / "ws").resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    text = GATEWAY_TOML + CONFIG.format(profile=profile, runtime=runtime, workspace=workspace)
    config = write_config(tmp_path / "cfg", tmp_path / "data", text, {"m": turns})
    return config, workspace


def _offered(requests: list[JSONObject]) -> list[list[str]]:
    return [list(r["tools"]) for r in requests]  # type: ignore[call-overload]


@pytest.mark.req("POL-ENGINE-04", "POL-ENGINE-03", "POL-RESOLVE-13", "POL-PARITY-08")
def test_parity_l1_excluded_tool_never_executes(tmp_path: Path) -> None:
    # Level full: without the lock nothing would stop the write.
    turns = [{"tool_calls": [_call("file_write", path="out.txt", content="x")]},
             {"chunks": ["finished"]}]  # fmt: skip
    config, ws = _setup(tmp_path, turns, 'level = "full"\nexcluded_tools = ["file_write"]')
    with capturing() as captured, acp_driver(config) as driver:
        session = driver.new_session("a", ws)
        response = driver.prompt(session, "write it")
        assert response["result"]["stopReason"] == "end_turn"
        assert response["result"]["content"] == "finished"
        run = run_cli(config, "a", "write it")
        assert (run.status, run.stdout) == (0, "finished\n")
        for path in ("acp", "cli-run"):
            execution = captured.one("a", path)
            assert tool_results(execution) == {
                "file_write": "Error: Tool not available in this turn: file_write"
            }
            assert all("file_write" not in offered for offered in _offered(requests_of(execution)))
    assert not (ws / "out.txt").exists()


@pytest.mark.req("POL-ACCESS-08", "POL-PATH-17", "POL-ENGINE-05", "POL-PARITY-08")
def test_parity_l1_caller_allowlist_narrows(tmp_path: Path) -> None:
    calls = [_call("shell", command="touch made.txt"), _call("file_read", path="note.txt"),
             _call("srv__tool")]  # fmt: skip
    turns = [{"tool_calls": calls}, {"chunks": ["narrowed"]}]
    config, ws = _setup(tmp_path, turns, 'level = "full"')
    (ws / "note.txt").write_text("hello\n", encoding="utf-8")
    with capturing() as captured:
        [(_, outcome)] = run_cron(config, "a", "try everything", ["file_read"])
        execution = captured.one("a", "cron")
        assert outcome == "success"
        assert _offered(requests_of(execution))[0] == ["file_read"]
        results = tool_results(execution)
    assert results["shell"] == "Error: Unknown tool: shell"
    assert results["srv__tool"] == "Error: Unknown tool: srv__tool"
    assert results["file_read"].startswith("1: hello")
    assert not (ws / "made.txt").exists()


@pytest.mark.req("POL-ACCESS-06", "POL-ASSEMBLE-17", "POL-SKILL-08", "POL-PARITY-08")
def test_parity_l1_deny_all_blocks_everything(tmp_path: Path) -> None:
    calls = [_call("file_write", path="a.txt", content="x"), _call("srv__tool"),
             _call("maker__make", name="skill-ran.txt")]  # fmt: skip
    turns = [{"tool_calls": calls}, {"chunks": ["blocked"]}]
    config, ws = _setup(tmp_path, turns, 'level = "full"\ndeny_all_tools = true')
    manifest = (
        '[[tools]]\nname = "make"\ndescription = "Create a file"\n'
        'command = "touch {{name}}"\nargs = { name = "File name" }\n'
    )
    write_skill(ws, "maker", "Make files.", manifest)
    with capturing() as captured:
        run = run_cli(config, "a", "do everything")
        execution = captured.one("a", "cli-run")
        assert (run.status, run.stdout) == (0, "blocked\n")
        assert _offered(requests_of(execution)) == [[], []]  # no spec offered, ever
        assert execution.snapshot()["skills.loaded"] == ["maker"]  # the skill was there
        results = tool_results(execution)
    assert results == {name: f"Error: Unknown tool: {name}" for name in
                       ("file_write", "srv__tool", "maker__make")}  # fmt: skip
    assert sorted(p.name for p in ws.iterdir()) == ["skills"]  # nothing was written


@pytest.mark.req("POL-APPROVE-07", "POL-APPROVE-10", "POL-ENGINE-06", "POL-PARITY-08")
def test_parity_l1_unapproved_tool_never_runs(tmp_path: Path) -> None:
    # The paths without an operator: `gateway-chat` (POL-PATH-09), a non-interactive `cli-run`
    # and `cron`; each resolves a fresh scripted provider, so each replays the script.
    turns = [{"tool_calls": [_call("shell", command="touch made.txt")]}, {"chunks": ["over"]}]
    config, ws = _setup(tmp_path, turns, 'level = "supervised"')
    with capturing() as captured:
        with gateway_driver(config) as gateway:
            answer = gateway.chat("a", "make it")
        assert (answer.status_code, answer.json()) == (200, {"agent": "a", "response": "over"})
        assert run_cli(config, "a", "make it").status == 0
        [(_, outcome)] = run_cron(config, "a", "make it", None)
        assert outcome == "success"
        for path in ("gateway-chat", "cli-run", "cron"):
            assert tool_results(captured.one("a", path)) == {"shell": RUNTIME_DENIAL}
        assert not (ws / "made.txt").exists()
        with acp_driver(config) as driver:
            session = driver.new_session("a", ws)
            response = driver.prompt(session, "make it", reject_once)
            assert response["result"]["stopReason"] == "end_turn"
            assert len(driver.permission_requests) == 1
        assert tool_results(captured.one("a", "acp")) == {"shell": "Denied by user."}
        assert not (ws / "made.txt").exists()
        # Control: the same call does run once the operator allows it.
        with acp_driver(config) as driver:
            session = driver.new_session("a", ws)
            driver.prompt(
                session,
                "make it",
                lambda r: {"outcome": {"outcome": "selected", "optionId": "allow-once"}},
            )
    assert (ws / "made.txt").exists()


@pytest.mark.req("POL-ENGINE-07", "POL-PARITY-08")
def test_parity_l1_max_tool_iterations_stops_loop(tmp_path: Path) -> None:
    read = {"tool_calls": [_call("file_read", path="note.txt")]}
    turns = [read, read, {"chunks": ["best answer"]}]
    config, ws = _setup(tmp_path, turns, runtime="max_tool_iterations = 2")
    (ws / "note.txt").write_text("hello\n", encoding="utf-8")
    with capturing() as captured:
        run = run_cli(config, "a", "loop")
        execution = captured.one("a", "cli-run")
        requests = requests_of(execution)
    assert (run.status, run.stdout) == (0, "best answer\n")
    assert run.stderr.count("[tool] file_read done") == 2
    assert len(requests) == 3
    last = requests[-1]
    messages: list[dict[str, Any]] = last["messages"]  # type: ignore[assignment]
    assert last["tools"] == []
    assert messages[-1] == {"role": "user", "content": MAX_ITERATIONS_PROMPT}
    assert sum(1 for m in messages if m.get("role") == "tool") == 2


@pytest.mark.req("POL-AUTO-05", "POL-AUTO-06", "POL-AUTO-09", "POL-PARITY-08")
def test_parity_l1_read_only_refuses_act_tools(tmp_path: Path) -> None:
    calls = [_call("file_write", path="ro.txt", content="x"), _call("srv__tool")]
    turns = [{"tool_calls": calls}, {"chunks": ["refused"]}]
    config, ws = _setup(tmp_path, turns, 'level = "read_only"')
    with capturing() as captured, acp_driver(config) as driver:
        session = driver.new_session("a", ws)
        response = driver.prompt(session, "write")  # no answer given: any prompt fails
        assert response["result"]["stopReason"] == "end_turn"
        assert driver.permission_requests == []
        results = tool_results(captured.one("a", "acp"))
    assert results == {
        "file_write": "Error: Security policy: read-only mode, cannot perform 'file_write'",
        # The granted server never started: the model is told why (issue 16 item 6).
        "srv__tool": "Error: Failed to connect to MCP server `srv`: failed to create transport"
        " for MCP server `srv`: failed to spawn MCP server `srv`: [Errno 2] No such file or"
        " directory: 'parity-l1-never-started'",
    }
    assert not (ws / "ro.txt").exists()


class _Tty(io.StringIO):
    """A terminal stand-in: `run_agent` treats the run as interactive."""

    def isatty(self) -> bool:
        return True


@pytest.mark.req("POL-APPROVE-12", "POL-APPROVE-15", "POL-APPROVE-16", "POL-PARITY-08")
def test_parity_l1_model_cannot_set_approved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = _call("shell", command="touch made.txt", approved=True)
    turns = [{"tool_calls": [call]}, {"chunks": ["no"]}]
    config, ws = _setup(tmp_path, turns, 'level = "supervised"')
    with capturing() as captured:
        # ACP: the operator rejects; the request shows no `approved` at all.
        with acp_driver(config) as driver:
            session = driver.new_session("a", ws)
            response = driver.prompt(session, "go", reject_once)
            assert response["result"]["stopReason"] == "end_turn"
            [request] = driver.permission_requests
        raw = request["params"]["toolCall"]["rawInput"]
        assert "approved" not in raw and "approved" not in str(raw)
        assert tool_results(captured.one("a", "acp")) == {"shell": "Denied by user."}
        # Terminal: the operator answers no; the prompt shows the runtime's value.
        monkeypatch.setattr(cli_agent, "_line_reader", lambda stream: lambda timeout: "n\n")
        stderr, stdout = _Tty(), io.StringIO()
        status = cli_agent.run_agent(config, "a", "go", False, _Tty(""), stdout, stderr)
        assert (status, stdout.getvalue()) == (0, "no\n")
        execution = captured.one("a", "cli-run")
        assert execution.snapshot()["approval.interaction"] == "terminal"
        assert tool_results(execution) == {"shell": "Denied by user."}
    shown = stderr.getvalue()
    assert "🔧 Agent wants to execute: shell" in shown
    assert "approved: false" in shown and "approved: true" not in shown
    assert not (ws / "made.txt").exists()
