"""What one ACP session runs with: its own runtime for every turn (ACP-RT-01), the stored
ConversationMessage shape (ACP-RT-05), the session workspace as the tools' root while the
agent's state and the shared stores stay where they are (ACP-SEC-01, ACP-SEC-04), and what the
session inherits from its agent (ACP-MEM-05). Driven through an in-process `AcpServer`
(tests/helpers/acp_harness.py); every wait is bounded.
"""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.acp_harness import RISK_FULL, MakeHarness, config_text
from tests.helpers.internals import model_requests, request_messages
from tests.helpers.json_at import at
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.store.sessions import store_path as session_store_path
from zeroclaw_ref.tools.catalogue import MEMORY_TOOLS


def _png() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + b"\0" * 32


# --- ACP-RT-01: one runtime per session, every turn through it ------------------------------


@pytest.mark.req("ACP-RT-01")
def test_each_session_owns_one_runtime_built_for_it_and_every_turn_uses_only_that_one(
    tmp_path: Path, make_harness: MakeHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws_a, ws_b, home_a, home_b = (tmp_path / n for n in ("ws-a", "ws-b", "home-a", "home-b"))
    for directory in (ws_a, ws_b):
        directory.mkdir()
    harness = make_harness(
        config_text(
            {
                "a": f'[agents.a.workspace]\npath = "{home_a}"\n',
                "b": f'[agents.b.workspace]\npath = "{home_b}"\n',
            }
        )
    )
    used: list[tuple[ResolvedAgentExecution, str]] = []
    real_run = harness.server.engine.run_turn

    def spying(execution: ResolvedAgentExecution, *rest: Any) -> Any:
        used.append((execution, threading.current_thread().name))
        return real_run(execution, *rest)

    monkeypatch.setattr(harness.server.engine, "run_turn", spying)
    sid_a, ex_a = harness.new(1, agentAlias="a", cwd=str(ws_a))
    sid_b, ex_b = harness.new(2, agentAlias="b", cwd=str(ws_b))
    assert ex_a is not ex_b
    expected = {sid_a: (ex_a, "a", ws_a, home_a), sid_b: (ex_b, "b", ws_b, home_b)}
    for execution, alias, workspace, home in expected.values():
        assert execution.agent_alias == alias and execution.path == "acp"
        assert execution.security.workspace_dir == workspace.resolve()
        assert home.resolve() in execution.security.allowed_roots
    msg_id = 10
    for round_no in range(2):
        for sid in (sid_a, sid_b, sid_a):
            msg_id += 1
            text = f"turn {round_no} of {sid}"
            answer = harness.call(msg_id, "session/prompt", {"sessionId": sid, "prompt": text})
            assert answer["result"]["stopReason"] == "end_turn", answer
            # the turn ran with its own session's runtime, on its own session's worker
            assert used[-1] == (expected[sid][0], f"session-{sid}")
    assert len(harness.executions) == 2  # prompts never built another runtime
    # and the model that answered each turn is the one inside that session's runtime
    for execution, count in ((ex_a, 4), (ex_b, 2)):
        requests = model_requests(execution)
        assert len(requests) == count


# --- ACP-RT-05: the ConversationMessage shape ------------------------------------------------


@pytest.mark.req("ACP-RT-05")
def test_conversation_messages_are_plain_json_and_image_parts_are_rebuilt_never_stored(
    tmp_path: Path, make_harness: MakeHarness
) -> None:
    script = {
        "turns": [
            {
                "thoughts": ["pondering"],
                "chunks": ["let me look"],
                "tool_calls": [
                    {"id": "c1", "name": "file_read", "arguments": {"path": "notes.txt"}}
                ],
            },
            {"chunks": ["it says hello"]},
            {"chunks": ["again"]},
        ]
    }
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello")
    harness = make_harness(config_text({"a": ""}, risk=RISK_FULL, provider="s"), script=script)
    sid, execution = harness.new(1, cwd=str(ws))
    blob = base64.b64encode(_png()).decode()
    prompt: list[JSON] = [
        {"type": "text", "text": "look at this"},
        {
            "type": "resource",
            "resource": {"uri": "file:///pic.png", "mimeType": "image/png", "blob": blob},
        },
    ]
    first = harness.call(2, "session/prompt", {"sessionId": sid, "prompt": prompt})
    assert first["result"]["stopReason"] == "end_turn", first
    second = harness.call(3, "session/prompt", {"sessionId": sid, "prompt": "and now?"})
    assert second["result"]["stopReason"] == "end_turn", second

    assert harness.store is not None
    stored = harness.store.load(sid)
    assert stored is not None and len(stored.turns) == 2
    turn_one = json.loads(stored.turns[0].messages_json)
    turn_two = json.loads(stored.turns[1].messages_json)
    allowed_keys = {
        "user": {"role", "content"},
        "assistant": {"role", "content", "reasoning", "toolCalls"},
        "tool": {"role", "content", "toolCallId", "name", "attachments"},
    }
    for message in turn_one + turn_two:
        assert isinstance(message, dict)
        assert message["role"] in allowed_keys, message
        assert isinstance(message["content"], str), message
        assert set(message) <= allowed_keys[message["role"]], message
    assert [m["role"] for m in turn_one] == ["user", "assistant", "tool", "assistant"]
    user, calling, result, final = turn_one
    assert "[IMAGE:" in user["content"]  # the marker is stored, not the image
    assert calling["reasoning"] == "pondering"
    assert calling["toolCalls"] == [
        {"id": "c1", "name": "file_read", "arguments": {"path": "notes.txt"}}
    ]
    assert (result["toolCallId"], result["name"]) == ("c1", "file_read")
    assert "hello" in result["content"]
    assert final["content"] == "it says hello" and "toolCalls" not in final
    # the image part exists only in model requests, rebuilt from the marker before each one
    requests = model_requests(execution)
    assert len(requests) == 3
    for request in requests:
        messages = request_messages(request)
        first_user = messages[[m["role"] for m in messages].index("user")]
        assert first_user.get("images"), request  # rebuilt for every request, later turns too
        assert at(first_user, "images", 0, "mime_type") == "image/png"
    every_stored = json.dumps(turn_one + turn_two)
    assert "images" not in every_stored and base64.b64encode(_png()).decode() not in every_stored


# --- ACP-SEC-01: the session workspace is where the tools are rooted ---------------------------


@pytest.mark.req("ACP-SEC-01")
def test_file_tools_shell_uploads_and_the_prompt_all_use_the_session_workspace(
    tmp_path: Path, make_harness: MakeHarness
) -> None:
    ws = tmp_path / "session-ws"
    ws.mkdir()
    (ws / "marker-in-session.txt").write_text("found in the session workspace")
    home = tmp_path / "agent-home"
    home.mkdir()
    (home / "marker-in-session.txt").write_text("WRONG: the agent workspace")
    harness = make_harness(
        config_text({"a": f'[agents.a.workspace]\npath = "{home}"\n'}, risk=RISK_FULL)
    )
    sid, execution = harness.new(1, cwd=str(ws))
    real = ws.resolve()
    assert execution.security.workspace_dir == real
    assert f"Working directory: {real}" in execution.io.system_prompt
    assert str(home.resolve()) not in execution.io.system_prompt.split("Working directory:")[1]

    def output_of(msg_id: int, prompt: str) -> str:
        answer = harness.call(msg_id, "session/prompt", {"sessionId": sid, "prompt": prompt})
        assert answer["result"]["stopReason"] == "end_turn", answer
        finished = [u for u in harness.updates(sid) if u["sessionUpdate"] == "tool_call_update"]
        return str(finished[-1]["rawOutput"])

    assert "found in the session workspace" in output_of(2, "read: marker-in-session.txt")
    assert output_of(3, "run: pwd").strip() == str(real)  # the shell's launch directory
    output_of(4, "write: made-by-tool.txt written")
    assert (ws / "made-by-tool.txt").read_text() == "written"
    assert not (home / "made-by-tool.txt").exists()
    blob = base64.b64encode(b"document body").decode()
    prompt: list[JSON] = [
        {"type": "text", "text": "see"},
        {"type": "resource", "resource": {"uri": "file:///doc.bin", "blob": blob}},
    ]
    answer = harness.call(5, "session/prompt", {"sessionId": sid, "prompt": prompt})
    assert answer["result"]["stopReason"] == "end_turn", answer
    uploads = list((ws / "uploads").iterdir())
    assert [p.read_bytes() for p in uploads] == [b"document body"]
    assert not (home / "uploads").exists()


# --- ACP-SEC-04: the cwd never relocates persistent state -------------------------------------


@pytest.mark.req("ACP-SEC-04")
def test_a_session_cwd_does_not_move_the_agent_state_or_the_shared_stores(
    tmp_path: Path, make_harness: MakeHarness
) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    home = tmp_path / "agent-home"
    (home / "skills" / "mine").mkdir(parents=True)
    (home / "skills" / "mine" / "SKILL.md").write_text("A skill of the agent.")
    (ws / "skills" / "theirs").mkdir(parents=True)
    (ws / "skills" / "theirs" / "SKILL.md").write_text("A skill of the project.")
    script = {
        "turns": [
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "name": "cron_add",
                        "arguments": {
                            "name": "nightly",
                            "schedule": {"kind": "every", "every_ms": 60000},
                            "prompt": "check",
                        },
                    }
                ]
            },
            {"chunks": ["scheduled"]},
        ]
    }
    harness = make_harness(
        config_text({"a": f'[agents.a.workspace]\npath = "{home}"\n'}, risk=RISK_FULL, provider="s")
        + "[scheduler]\nenabled = true\n",
        script=script,
    )
    before = sorted(p.relative_to(ws) for p in ws.rglob("*"))
    sid, execution = harness.new(1, cwd=str(ws))
    assert [s.name for s in execution.skills] == ["mine"]  # agent state from the agent home
    answer = harness.call(2, "session/prompt", {"sessionId": sid, "prompt": "schedule it"})
    assert answer["result"]["stopReason"] == "end_turn", answer
    cron_output = [u for u in harness.updates(sid) if u["sessionUpdate"] == "tool_call_update"]
    assert "Error" not in str(cron_output[-1]["rawOutput"]), cron_output
    data = tmp_path / "data"
    from zeroclaw_ref.store.cron import store_path as cron_store_path

    assert cron_store_path(data).is_file()  # the shared job store, under the data dir
    assert session_store_path(data).is_file()  # the shared session store, under the data dir
    assert harness.store is not None and harness.store.load(sid) is not None
    assert sorted(p.relative_to(ws) for p in ws.rglob("*")) == before  # nothing landed in cwd


# --- ACP-MEM-05: what an ACP session inherits from its agent ----------------------------------


@pytest.mark.req("ACP-MEM-05")
def test_an_acp_session_inherits_the_agent_except_memory_and_unrequested_mcp(
    tmp_path: Path, make_harness: MakeHarness
) -> None:
    home = tmp_path / "agent-home"
    (home / "skills" / "mine").mkdir(parents=True)
    (home / "skills" / "mine" / "SKILL.md").write_text("Agent skill text.")
    extra = (
        f'system_prompt = "You are the PERSONA-7 agent."\n[agents.a.workspace]\npath = "{home}"\n'
    )
    text = config_text(
        {"a": extra},
        risk='level = "supervised"\nexcluded_tools = ["cron_list"]\n',
        extra="max_tool_iterations = 4\nmax_history_messages = 12\n",
    )
    harness = make_harness(text)
    ws = tmp_path / "ws"
    ws.mkdir()
    _, acp = harness.new(1, cwd=str(ws))
    config = harness.server.config
    cli = resolve(config, "a", PathRequest("cli-run"))
    try:
        assert "You are the PERSONA-7 agent." in acp.io.system_prompt  # personality
        assert [s.name for s in acp.skills] == [s.name for s in cli.skills] == ["mine"]
        assert acp.io.approval.level == "supervised"  # risk profile
        assert "cron_list" not in acp.io.tools.names  # ... with its exclusions
        assert acp.knobs == cli.knobs  # runtime profile
        assert acp.knobs.max_tool_iterations == 4 and acp.knobs.max_history_messages == 12
        assert (acp.model.provider_name, acp.model.model) == (
            cli.model.provider_name,
            cli.model.model,
        )
        # every non-memory tool of the agent, and no memory tool (deliver_file is ACP's own)
        assert set(acp.io.tools.names) - {"deliver_file"} == set(cli.io.tools.names) - MEMORY_TOOLS
        assert not set(acp.io.tools.names) & MEMORY_TOOLS
        assert {"shell", "file_write", "cron_add", "todo_write"} <= set(acp.io.tools.names)
        # MCP stays off unless the agent opts in; peripherals are connected on this path
        assert acp.mcp.connected is False and acp.assembly.connect_mcp is False
        assert acp.assembly.connect_peripherals is True
    finally:
        cli.close()


@pytest.mark.req("ACP-MEM-05")
def test_acp_enable_mcp_is_the_switch_for_mcp_in_acp_sessions(
    tmp_path: Path, make_harness: MakeHarness
) -> None:
    text = config_text({"off": "", "on": "acp_enable_mcp = true\n"})
    harness = make_harness(text)
    _, off = harness.new(1, agentAlias="off")
    _, on = harness.new(2, agentAlias="on")
    assert off.assembly.connect_mcp is False
    assert on.assembly.connect_mcp is True
