"""Requirements that were implemented but cited by no test: the per-session runtime, the
ConversationMessage shape, the session workspace as the tools' root, the approval gate under
`supervised`, what an ACP session inherits from its agent, delivery projection, update shapes,
and the reader / writer / worker threading model (acp.md §0.6, §1.6, §5, §9, §10, §11).

In-process tests drive a real `AcpServer` through its endpoint; the threading tests run the
real `python -m zeroclaw_ref acp` process. Every wait is bounded.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_peer, wait_for
from tests.helpers.acp_client import AcpProcess
from zeroclaw_ref.acp.project import TurnProjector
from zeroclaw_ref.acp.server import AcpServer
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.clock import FixedClock
from zeroclaw_ref.core.ids import RandomIds
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine.events import (
    PlanUpdated,
    TextDelta,
    ThoughtDelta,
    ToolCallStarted,
    ToolFinished,
)
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import (
    PathRequest,
    add_resolve_observer,
    remove_resolve_observer,
    resolve,
)
from zeroclaw_ref.store.sessions import SessionStore
from zeroclaw_ref.store.sessions import store_path as session_store_path
from zeroclaw_ref.tools.base import ARTIFACT_KEY, ToolContext
from zeroclaw_ref.tools.catalogue import CATALOGUE_ORDER, MEMORY_TOOLS

Message = dict[str, Any]

RISK_FULL = 'level = "full"\n'
AGENT = 'model_provider = "{provider}"\nrisk_profile = "r"\nruntime_profile = "t"\n{extra}'


def config_text(
    agents: dict[str, str], risk: str = "", provider: str = "demo", extra: str = ""
) -> str:
    """A demo (or scripted, `script = "model.json"`) provider, profile `r`, runtime `t`."""
    text = (
        '[providers.demo]\nkind = "demo"\n'
        '[providers.s]\nkind = "scripted"\nscript = "model.json"\n'
        f"[risk_profiles.r]\n{risk}[runtime_profiles.t]\n{extra}"
    )
    for alias, more in agents.items():
        text += f"[agents.{alias}]\n" + AGENT.format(provider=provider, extra=more)
    return text


@dataclass
class Harness:
    """One in-process server; answers and notifications are collected as parsed JSON."""

    server: AcpServer
    out: list[Message]
    store: SessionStore | None
    executions: list[ResolvedAgentExecution]
    hooks: list[Callable[[Message], None]] = field(default_factory=list)

    def send(self, message: Message) -> None:
        self.server.endpoint.dispatch(json.dumps(message).encode())

    def answer(self, msg_id: object) -> Message:
        def found() -> list[Message]:
            return [m for m in list(self.out) if m.get("id") == msg_id and "method" not in m]

        wait_for(lambda: bool(found()), f"the answer to {msg_id!r}", detail=lambda: str(self.out))
        return found()[0]

    def call(self, msg_id: int, method: str, params: JSONObject) -> Message:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.answer(msg_id)

    def new(self, msg_id: int, **params: Any) -> tuple[str, ResolvedAgentExecution]:
        before = len(self.executions)
        answer = self.call(msg_id, "session/new", dict(params))
        assert "result" in answer, answer
        assert len(self.executions) == before + 1  # one execution resolved for this session
        return str(answer["result"]["sessionId"]), self.executions[-1]

    def updates(self, sid: str) -> list[Message]:
        return [
            m["params"]["update"]
            for m in list(self.out)
            if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
        ]

    def requests(self, method: str = "session/request_permission") -> list[Message]:
        return [m for m in list(self.out) if m.get("method") == method and "id" in m]


@pytest.fixture
def make_harness(tmp_path: Path) -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []
    observers: list[Callable[[ResolvedAgentExecution], None]] = []

    def make(text: str, *, store: bool = True, script: object = None) -> Harness:
        cfg = tmp_path / "cfg"
        cfg.mkdir(exist_ok=True)
        (cfg / "config.toml").write_text(text)
        if script is not None:
            (cfg / "model.json").write_text(json.dumps(script))
        else:
            (cfg / "model.json").write_text('{"turns": []}')
        config = load_config(cfg, tmp_path / "data", {})
        opened = SessionStore.open(tmp_path / "data") if store else None
        out: list[Message] = []
        executions: list[ResolvedAgentExecution] = []
        hooks: list[Callable[[Message], None]] = []

        def send(line: str) -> None:
            message = json.loads(line)
            for hook in list(hooks):
                hook(message)
            out.append(message)

        server = AcpServer(config, send, RandomIds(), FixedClock(), store=opened)
        observers.append(executions.append)
        add_resolve_observer(executions.append)
        harness = Harness(server, out, opened, executions, hooks)
        made.append(harness)
        return harness

    yield make
    for callback in observers:
        remove_resolve_observer(callback)
    for harness in made:
        harness.server.shutdown(5)
        if harness.store is not None:
            harness.store.close()


def _png() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + b"\0" * 32


# --- ACP-RT-01: one runtime per session, every turn through it ------------------------------


@pytest.mark.req("ACP-RT-01")
def test_each_session_owns_one_runtime_built_for_it_and_every_turn_uses_only_that_one(
    tmp_path: Path, make_harness: Callable[..., Harness]
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

    harness.server.engine.run_turn = spying  # type: ignore[method-assign]
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
        requests = execution.model.provider.requests  # type: ignore[attr-defined]
        assert len(requests) == count


# --- ACP-RT-05: the ConversationMessage shape ------------------------------------------------


@pytest.mark.req("ACP-RT-05")
def test_conversation_messages_are_plain_json_and_image_parts_are_rebuilt_never_stored(
    tmp_path: Path, make_harness: Callable[..., Harness]
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
    prompt = [
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
    requests = execution.model.provider.requests  # type: ignore[attr-defined]
    assert len(requests) == 3
    for request in requests:
        first_user = request["messages"][[m["role"] for m in request["messages"]].index("user")]
        assert first_user.get("images"), request  # rebuilt for every request, later turns too
        assert first_user["images"][0]["mime_type"] == "image/png"
    every_stored = json.dumps(turn_one + turn_two)
    assert "images" not in every_stored and base64.b64encode(_png()).decode() not in every_stored


# --- ACP-SEC-01: the session workspace is where the tools are rooted ---------------------------


@pytest.mark.req("ACP-SEC-01")
def test_file_tools_shell_uploads_and_the_prompt_all_use_the_session_workspace(
    tmp_path: Path, make_harness: Callable[..., Harness]
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
    prompt = [
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
    tmp_path: Path, make_harness: Callable[..., Harness]
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


# --- ACP-SEC-13: supervised tool calls go through the approval gate ---------------------------


@pytest.mark.req("ACP-SEC-13")
@pytest.mark.parametrize(("option", "runs"), [("allow-once", True), ("reject-once", False)])
def test_under_supervised_an_acting_call_waits_for_the_operator_and_obeys_the_answer(
    tmp_path: Path, make_harness: Callable[..., Harness], option: str, runs: bool
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    harness = make_harness(config_text({"a": ""}, risk='level = "supervised"\n'))
    sid, execution = harness.new(1, cwd=str(ws))
    assert execution.io.approval.level == "supervised"
    harness.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": "write: gated.txt payload"},
        }
    )
    wait_for(lambda: bool(harness.requests()), "a permission request")
    (request,) = harness.requests()
    assert request["params"]["sessionId"] == sid
    assert not (ws / "gated.txt").exists()  # nothing ran before the answer
    assert not [m for m in harness.out if m.get("id") == 2]  # the turn is parked
    harness.send(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": option}},
        }
    )
    answer = harness.answer(2)
    assert answer["result"]["stopReason"] == "end_turn", answer
    assert (ws / "gated.txt").exists() == runs
    # a read tool on the built-in auto-approve list passes the same gate without asking
    (ws / "r.txt").write_text("x")
    harness.call(3, "session/prompt", {"sessionId": sid, "prompt": "read: r.txt"})
    assert len(harness.requests()) == 1


@pytest.mark.req("ACP-SEC-13")
def test_the_same_call_under_full_is_not_gated(
    tmp_path: Path, make_harness: Callable[..., Harness]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    harness = make_harness(config_text({"a": ""}, risk=RISK_FULL))
    sid, _ = harness.new(1, cwd=str(ws))
    answer = harness.call(2, "session/prompt", {"sessionId": sid, "prompt": "write: f.txt x"})
    assert answer["result"]["stopReason"] == "end_turn"
    assert harness.requests() == [] and (ws / "f.txt").read_text() == "x"


# --- ACP-MEM-05: what an ACP session inherits from its agent ----------------------------------


@pytest.mark.req("ACP-MEM-05")
def test_an_acp_session_inherits_the_agent_except_memory_and_unrequested_mcp(
    tmp_path: Path, make_harness: Callable[..., Harness]
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
    tmp_path: Path, make_harness: Callable[..., Harness]
) -> None:
    text = config_text({"off": "", "on": "acp_enable_mcp = true\n"})
    harness = make_harness(text)
    _, off = harness.new(1, agentAlias="off")
    _, on = harness.new(2, agentAlias="on")
    assert off.assembly.connect_mcp is False
    assert on.assembly.connect_mcp is True


# --- ACP-DELIV-13: uri, path and title come only from the artifact ----------------------------


def _delivered(tmp_path: Path) -> tuple[Path, JSONObject, str]:
    """A real delivery from the real tool: (workspace, artifact, output text)."""
    ws = tmp_path / "ws"
    ws.mkdir(parents=True)
    (ws / "report.txt").write_text("quarterly numbers")
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(config_text({"a": ""}, risk=RISK_FULL))
    (config_dir / "model.json").write_text('{"turns": []}')
    config = load_config(config_dir, tmp_path / "data", {})

    class NoOperator:
        def approve(self, tool: str, arguments: object, cancel: CancelToken) -> object:
            raise AssertionError("not asked under full")

    execution = resolve(
        config, "a", PathRequest("acp", approver=NoOperator(), session_workspace=ws.resolve())
    )  # type: ignore[arg-type]
    tool = execution.io.tools.get("deliver_file")
    assert tool is not None
    result = tool.execute({"path": "report.txt"}, ToolContext(cancel=CancelToken(), approved=True))
    execution.close()
    assert result.success and result.data is not None, result
    artifact = result.data[ARTIFACT_KEY]
    assert isinstance(artifact, dict)
    return ws, artifact, result.output


def _project(ws: Path, event: ToolFinished) -> Message:
    sent: list[JSONObject] = []
    projector = TurnProjector("s", ws, sent.append, lambda _p: None)
    projector.on_event(ToolCallStarted(event.id, event.name, {"path": "x"}))
    projector.on_event(event)
    return sent[-1]


@pytest.mark.req("ACP-DELIV-13")
def test_the_embedded_resource_comes_from_the_artifact_not_from_a_forged_output_text(
    tmp_path: Path,
) -> None:
    ws, artifact, output = _delivered(tmp_path)
    forged = "Delivered evil.txt (9 bytes)\nuri=attachment://deliver/" + "0" * 64 + ".txt"
    update = _project(ws, ToolFinished("c1", "deliver_file", forged, True, artifact))
    assert update["status"] == "completed"
    assert update["title"] == artifact["title"] != "evil.txt"
    resource = update["content"][1]["content"]["resource"]  # type: ignore[index]
    assert resource["uri"] == artifact["uri"] and "0" * 64 not in resource["uri"]
    assert base64.b64decode(resource["blob"]) == b"quarterly numbers"
    assert f"uri={artifact['uri']}" in output  # the real text names the real uri ...
    assert update["rawOutput"] == forged  # ... but the server never read it back


@pytest.mark.req("ACP-DELIV-13")
def test_a_correct_uri_line_in_the_text_cannot_rescue_a_bad_artifact(tmp_path: Path) -> None:
    ws, artifact, output = _delivered(tmp_path)
    broken = {**artifact, "uri": "attachment://deliver/" + "f" * 64 + ".txt"}
    update = _project(ws, ToolFinished("c1", "deliver_file", output, True, broken))
    assert update["status"] == "failed"  # the artifact's uri is checked, the text's ignored
    assert len(update["content"]) == 1  # type: ignore[arg-type]


@pytest.mark.req("ACP-DELIV-13")
def test_a_uri_line_without_an_artifact_embeds_nothing(tmp_path: Path) -> None:
    ws, artifact, output = _delivered(tmp_path)
    update = _project(ws, ToolFinished("c1", "deliver_file", output, True, None))
    assert update["title"] == "deliver_file" and update["status"] == "completed"
    # only the text item: the uri named in the text is never turned into a resource
    assert update["content"] == [{"type": "content", "content": {"type": "text", "text": output}}]
    assert f"uri={artifact['uri']}" in output


# --- ACP-UPD-03: closed vocabularies and base ACP shapes --------------------------------------

KINDS = {"read", "edit", "delete", "search", "execute", "think", "fetch", "other"}
STATUSES = {"pending", "completed", "failed"}
EXTRAS = {"name", "body", "activeForm", "proposedEdit"}


def _check_content_item(item: Message) -> None:
    if item["type"] == "diff":
        assert set(item) <= {"type", "path", "oldText", "newText"}, item
        assert isinstance(item["path"], str) and Path(item["path"]).is_absolute()
        return
    assert item["type"] == "content" and set(item) == {"type", "content"}, item
    block = item["content"]
    assert isinstance(block, dict)
    if block["type"] == "text":
        assert set(block) == {"type", "text"} and isinstance(block["text"], str)
    else:
        assert block["type"] == "resource" and set(block) == {"type", "resource"}, block
        assert set(block["resource"]) <= {"uri", "mimeType", "blob", "text"}, block


def _check_update(update: Message) -> None:
    kind = update["sessionUpdate"]
    if kind in ("tool_call", "tool_call_update"):
        assert update["kind"] in KINDS, update
        assert update["status"] in STATUSES, update
        for item in update.get("content", []):
            _check_content_item(item)
    elif kind == "plan":
        for entry in update["entries"]:
            assert set(entry) <= {"content", "priority", "status", "activeForm"}, entry
            assert entry["priority"] in {"high", "medium", "low"}
            assert entry["status"] in {"pending", "in_progress", "completed"}
    else:
        assert kind in ("agent_message_chunk", "agent_thought_chunk"), update
        assert update["content"]["type"] == "text" and set(update["content"]) == {"type", "text"}


def _every_variant(tmp_path: Path) -> list[Message]:
    """Updates of every shape the projector makes: each built-in name, an unknown and an MCP
    name, edit diffs, plans, a delivery, failures and the cancel marker."""
    ws, artifact, output = _delivered(tmp_path)
    sent: list[JSONObject] = []
    projector = TurnProjector("s", ws, sent.append, lambda _p: None)
    projector.on_event(TextDelta("hi"))
    projector.on_event(ThoughtDelta("hmm"))
    names = [*CATALOGUE_ORDER, "tool_search", "srv__tool", "made_up", "turn"]
    for index, name in enumerate(names):
        args: JSONObject = {"path": "f.txt", "content": "c", "old_string": "a", "new_string": "b"}
        projector.on_event(ToolCallStarted(f"c{index}", name, args))
        projector.on_event(ToolFinished(f"c{index}", name, f"{name} done", True))
    projector.on_event(ToolCallStarted("d1", "deliver_file", {"path": "report.txt"}))
    projector.on_event(ToolFinished("d1", "deliver_file", output, True, artifact))
    projector.on_event(ToolCallStarted("d2", "deliver_file", {"path": "report.txt"}))
    projector.on_event(ToolFinished("d2", "deliver_file", output, True, {**artifact, "uri": "x"}))
    entries: tuple[JSONObject, ...] = (
        {"content": "a", "priority": "high", "status": "pending", "activeForm": "Doing a"},
        {"content": "b", "priority": "medium", "status": "in_progress"},
    )
    projector.on_event(PlanUpdated(entries))
    projector.on_event(ToolCallStarted("open", "shell", {"command": "ls"}))
    projector.close_open_calls("Agent turn failed: boom")
    projector.turn_cancelled("t1")
    return list(sent)


@pytest.mark.req("ACP-UPD-03")
def test_every_projected_update_uses_the_closed_kinds_statuses_and_base_shapes(
    tmp_path: Path,
) -> None:
    updates = _every_variant(tmp_path)
    seen_status = {u["status"] for u in updates if "status" in u}
    assert seen_status == STATUSES  # each status occurs, and nothing else
    assert {u["kind"] for u in updates if "kind" in u} <= KINDS
    assert {"read", "edit", "delete", "search", "execute", "think", "other"} <= {
        u["kind"] for u in updates if "kind" in u
    }
    for update in updates:
        _check_update(update)


@pytest.mark.req("ACP-UPD-03")
def test_updates_and_permission_requests_validate_against_the_acp_sdk_schema(
    tmp_path: Path, make_harness: Callable[..., Harness]
) -> None:
    """ZeroClaw's extra members must be additive: dropping them leaves valid base ACP."""
    sdk = require_peer("acp-python-sdk")
    schema = sdk.schema  # type: ignore[union-attr]
    updates = _every_variant(tmp_path / "p")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("old text")
    harness = make_harness(config_text({"a": ""}, risk='level = "supervised"\n'))
    sid, _ = harness.new(1, cwd=str(ws))
    harness.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {
                "sessionId": sid,
                "prompt": 'call: file_edit {"path": "f.txt", '
                '"old_string": "old", "new_string": "new"}',
            },
        }
    )
    wait_for(lambda: bool(harness.requests()), "a permission request")
    (request,) = harness.requests()
    harness.send(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}},
        }
    )
    harness.answer(2)
    updates += harness.updates(sid)

    def strip(value: JSONObject) -> JSONObject:
        """Drop the additive members where ZeroClaw puts them: on tool updates and the
        permission's toolCall (`name`, `body`, `proposedEdit`), on plan entries
        (`activeForm`)."""
        kept = {k: v for k, v in value.items() if k not in EXTRAS}
        if "entries" in kept:
            kept["entries"] = [
                {k: v for k, v in e.items() if k not in EXTRAS}  # type: ignore[union-attr]
                for e in kept["entries"]  # type: ignore[union-attr]
            ]
        return kept

    adapter = schema.SessionNotification
    for update in updates:
        adapter.model_validate({"sessionId": sid, "update": strip(update)})
    params = dict(request["params"])
    assert "proposedEdit" in params["toolCall"]  # the extra is present on the wire ...
    params["toolCall"] = strip(params["toolCall"])  # ... and only additive
    schema.RequestPermissionRequest.model_validate(params)


# --- ACP-TR-28 / TR-30 / TR-31: the threading model of the real process ----------------------

# Loaded into the real server process as `sitecustomize`: two public observation points, the
# resolve observer (it runs inside the session/new handler, on whichever thread dispatches it)
# and the turn engine (it runs wherever turns run). Each reports its thread and the names of
# all live threads on stderr.
PROBE = """
import sys, threading
from zeroclaw_ref.engine.resolve import add_resolve_observer
from zeroclaw_ref.engine.turn import TurnEngine

def report(what):
    names = sorted(t.name for t in threading.enumerate())
    sys.stderr.write("PROBE " + what + " " + threading.current_thread().name + " "
                     + ",".join(names) + "\\n")
    sys.stderr.flush()

add_resolve_observer(lambda execution: report("resolve"))
real_run_turn = TurnEngine.run_turn
def run_turn(self, *args, **kwargs):
    report("turn")
    return real_run_turn(self, *args, **kwargs)
TurnEngine.run_turn = run_turn
"""


def probed_agent(tmp_path: Path) -> AcpProcess:
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    (probe_dir / "sitecustomize.py").write_text(PROBE)
    return AcpProcess(tmp_path / "cfg", env={"PYTHONPATH": str(probe_dir)})


def probes(agent: AcpProcess) -> list[tuple[str, str, list[str]]]:
    found = []
    for line in list(agent.stderr_lines):
        if line.startswith("PROBE "):
            _, what, thread, names = line.rstrip("\n").split(" ", 3)
            found.append((what, thread, names.split(",")))
    return found


@pytest.mark.req("ACP-TR-28")
def test_handlers_run_on_the_reader_turns_on_one_worker_per_session_output_on_one_writer(
    tmp_path: Path,
) -> None:
    agent = probed_agent(tmp_path)
    try:
        sids = []
        for msg_id in (1, 2):
            agent.request(msg_id, "session/new", {})
            sids.append(agent.response(msg_id)["result"]["sessionId"])
        for msg_id, sid in ((3, sids[0]), (4, sids[1]), (5, sids[0])):
            agent.request(msg_id, "session/prompt", {"sessionId": sid, "prompt": "hello"})
            assert agent.response(msg_id, [])["result"]["stopReason"] == "end_turn"
        agent.request(6, "session/stop", {"sessionId": sids[0]})
        assert agent.response(6, [])["result"]["stopped"] is True
        agent.request(7, "session/prompt", {"sessionId": sids[1], "prompt": "again"})
        assert agent.response(7, [])["result"]["stopReason"] == "end_turn"
        assert agent.close_input() == 0
    finally:
        agent.kill()
    seen = probes(agent)
    resolves = [p for p in seen if p[0] == "resolve"]
    turns = [p for p in seen if p[0] == "turn"]
    assert len(resolves) == 2 and len(turns) == 4, agent.stderr_lines
    # both session/new handlers ran on one reader thread, neither the writer nor a worker
    (reader,) = {thread for _, thread, _ in resolves}
    assert reader != "writer" and not reader.startswith("session-")
    # each turn ran on its own session's worker, never on the reader
    assert all(reader in names for _, _, names in turns)  # the reader stays alive
    assert [thread for _, thread, _ in turns] == [
        f"session-{sids[0]}",
        f"session-{sids[1]}",
        f"session-{sids[0]}",
        f"session-{sids[1]}",
    ]
    for _, _, names in turns[:3]:
        # exactly one writer, and one worker per active session
        assert names.count("writer") == 1, names
        assert sorted(n for n in names if n.startswith("session-")) == sorted(
            f"session-{s}" for s in sids
        )
    # the stopped session's worker is gone once it drained
    last_names = turns[3][2]
    assert [n for n in last_names if n.startswith("session-")] == [f"session-{sids[1]}"]
    assert last_names.count("writer") == 1


def _line(msg_id: int, method: str, params: JSONObject) -> bytes:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
    return json.dumps(message).encode() + b"\n"


def _next_session_id(agent: AcpProcess) -> str:
    """With ZEROCLAW_REF_DETERMINISTIC=1 session ids count up in their last twelve digits:
    open one session and predict the id of the next."""
    agent.request(100, "session/new", {})
    first = str(agent.response(100)["result"]["sessionId"])
    return f"{first[:-12]}{int(first[-12:], 16) + 1:012x}"


@pytest.mark.req("ACP-TR-30")
def test_a_prompt_written_together_with_session_new_finds_the_session(tmp_path: Path) -> None:
    # All lines arrive in one write, so only the reader's ordering keeps them apart: the prompt
    # must see the published session, and the cancel must see the accepted turn.
    agent = AcpProcess(tmp_path / "cfg", env={"ZEROCLAW_REF_DETERMINISTIC": "1"})
    try:
        sid = _next_session_id(agent)
        agent.send(
            _line(1, "initialize", {})
            + _line(2, "session/new", {})
            + _line(3, "session/prompt", {"sessionId": sid, "prompt": "slow: 500"})
            + _line(4, "session/cancel", {"sessionId": sid})
        )
        seen: list[Message] = []
        first = agent.recv("the initialize response")
        assert first["id"] == 1 and "result" in first
        new = agent.recv("the session/new response")  # before any byte of the turn
        assert new["id"] == 2 and new["result"]["sessionId"] == sid, new
        cancel = agent.response(4, seen)
        assert cancel["result"] == {}
        prompt = agent.response(3, seen)
        assert prompt["result"]["stopReason"] == "cancelled", prompt  # the cancel hit the turn
        ticks = [m for m in seen if m.get("method") == "session/update"]
        assert len(ticks) < 500
        assert agent.close_input() == 0
    finally:
        agent.kill()


@pytest.mark.req("ACP-TR-30")
def test_a_prompt_written_together_with_session_stop_is_refused(tmp_path: Path) -> None:
    agent = AcpProcess(tmp_path / "cfg", env={"ZEROCLAW_REF_DETERMINISTIC": "1"})
    try:
        sid = _next_session_id(agent)
        agent.send(
            _line(1, "session/new", {})
            + _line(2, "session/stop", {"sessionId": sid})
            + _line(3, "session/prompt", {"sessionId": sid, "prompt": "hello"})
        )
        seen: list[Message] = []
        assert agent.response(1, seen)["result"]["sessionId"] == sid
        refused = agent.response(3, seen)
        assert refused["error"] == {  # stop already left the active set
            "code": -32000,
            "message": f"Session not found: {sid}",
        }
        assert agent.response(2, seen)["result"] == {"sessionId": sid, "stopped": True}
        assert agent.close_input() == 0
    finally:
        agent.kill()


@pytest.mark.req("ACP-TR-31")
def test_the_reader_keeps_serving_while_a_turn_waits_for_a_permission_answer(
    tmp_path: Path,
) -> None:
    agent = AcpProcess(tmp_path / "cfg")  # no configuration: the demo agent, supervised
    try:
        agent.request(1, "session/new", {})
        parked = agent.response(1)["result"]["sessionId"]
        agent.request(2, "session/prompt", {"sessionId": parked, "prompt": "write: a.txt x"})
        seen: list[Message] = []
        while True:
            message = agent.recv("the permission request")
            if message.get("method") == "session/request_permission":
                break
            seen.append(message)
        # The turn now waits for the client; the reader must not.
        agent.request(3, "initialize")
        assert "result" in agent.response(3, seen)
        agent.request(4, "session/new", {})
        other = agent.response(4, seen)["result"]["sessionId"]
        agent.request(5, "session/prompt", {"sessionId": other, "prompt": "hello"})
        assert agent.response(5, seen)["result"]["stopReason"] == "end_turn"
        agent.request(6, "session/prompt", {"sessionId": parked, "prompt": "again"})
        assert agent.response(6, seen)["error"]["code"] == -32002  # busy, answered at once
        assert not [m for m in seen if m.get("id") == 2]  # the parked turn is still parked
        agent.request(7, "session/cancel", {"sessionId": parked})
        assert agent.response(7, seen)["result"] == {}
        result = agent.response(2, seen)
        assert result["result"]["stopReason"] == "cancelled", result
        # the unanswered request never got an answer from us: nothing waited for one
        agent.send(
            {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "cancelled"}}}
        )
        agent.request(8, "session/prompt", {"sessionId": parked, "prompt": "hello"})
        assert agent.response(8, seen)["result"]["stopReason"] == "end_turn"
        assert agent.close_input() == 0
    finally:
        agent.kill()
    assert not (tmp_path / "cfg" / "agents" / "default" / "workspace" / "a.txt").exists()
