"""The stdio front door as a real process: signals, broken pipes, stray output, exit codes
(acp.md §1.1, §1.7), and its threading model: handlers on the reader, turns on one worker per
session, output on one writer, the reader's ordering of lines that arrive in one write
(ACP-TR-28, ACP-TR-30, ACP-TR-31)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers.acp_client import AcpProcess
from tests.helpers.acp_harness import Message
from tests.helpers.json_at import at, text_at
from zeroclaw_ref.acp.server import AcpServer
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.clock import FixedClock
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.store.sessions import store_path
from zeroclaw_ref.wire import acp as wire


def _start_slow_turn(agent: AcpProcess) -> str:
    agent.request(1, "session/new", {})
    sid = text_at(agent.response(1), "result", "sessionId")
    agent.request(2, "session/prompt", {"sessionId": sid, "prompt": "slow: 500"})
    first = agent.recv("the first tick")
    assert first["params"]["update"]["content"]["text"] == "tick 1 "
    return sid


@pytest.mark.req("ACP-TR-35", "ACP-TR-37")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_like_end_of_input_with_the_turn_cancelled(
    tmp_path: Path, signum: int
) -> None:
    agent = AcpProcess(tmp_path / "cfg")
    _start_slow_turn(agent)
    agent.proc.send_signal(signum)
    seen: list[dict[str, object]] = []
    result = agent.response(2, seen)
    assert at(result, "result", "stopReason") == "cancelled"
    assert agent.proc.wait(timeout=10) == 0


@pytest.mark.req("ACP-TR-35")
def test_end_of_input_cancels_the_running_turn_and_still_writes_its_result(tmp_path: Path) -> None:
    agent = AcpProcess(tmp_path / "cfg")
    _start_slow_turn(agent)
    assert agent.proc.stdin is not None
    agent.proc.stdin.close()
    result = agent.response(2, [])
    assert at(result, "result", "stopReason") == "cancelled"
    assert agent.proc.wait(timeout=10) == 0


@pytest.mark.req("ACP-TR-36")
def test_a_closed_stdout_is_an_ordinary_disconnect(tmp_path: Path) -> None:
    agent = AcpProcess(tmp_path / "cfg")
    _start_slow_turn(agent)
    assert agent.proc.stdout is not None
    agent.proc.stdout.close()  # the client stops reading: the next write fails
    assert agent.proc.wait(timeout=15) == 0


@pytest.mark.req("ACP-TR-02", "ACP-TR-03")
def test_stdout_carries_only_json_rpc_even_when_something_prints(tmp_path: Path) -> None:
    # A stray write to fd 1 from inside the server process (as a careless library or a child
    # process would do) must land on stderr, not on the protocol stream.
    code = (
        "import os, sys; from zeroclaw_ref.acp import stdio; orig = stdio._protocol_sink\n"
        "def sink():\n"
        "    out = orig(); os.write(1, b'stray output\\n'); print('a print'); sys.stdout.flush()\n"
        "    return out\n"
        "stdio._protocol_sink = sink\n"
        "from zeroclaw_ref.cli.main import main; raise SystemExit(main(['acp']))\n"
    )
    env = {**os.environ, "ZEROCLAW_CONFIG_DIR": str(tmp_path / "cfg"), "HOME": str(tmp_path)}
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize"}) + "\n"
    done = subprocess.run(
        [sys.executable, "-c", code], input=line.encode(), capture_output=True, env=env, timeout=30
    )
    assert done.returncode == 0
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["id"] == 1
    assert b"stray output" in done.stderr and b"a print" in done.stderr


@pytest.mark.req("ACP-TR-04", "ACP-CFG-09", "ACP-TR-05")
@pytest.mark.parametrize(
    ("args", "status", "stderr"),
    [
        (["--max-sessions", "0"], 1, "ERROR: invalid value for --max-sessions: 0"),
        (["--max-sessions", "abc"], 1, "ERROR: invalid value for --max-sessions: abc"),
        (["--session-timeout", "86401"], 1, "ERROR: invalid value for --session-timeout: 86401"),
        (["--bogus"], 2, "usage:"),
        (["extra"], 2, "usage:"),
    ],
)
def test_bad_command_lines_fail_before_reading_input(
    tmp_path: Path, args: list[str], status: int, stderr: str
) -> None:
    env = {**os.environ, "ZEROCLAW_CONFIG_DIR": str(tmp_path / "cfg"), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "zeroclaw_ref", "acp", *args],
        input=b"",
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == status
    assert done.stdout == b""
    assert stderr in done.stderr.decode()


@pytest.mark.req("ACP-TR-04", "ACP-INIT-06", "ACP-CFG-08")
def test_command_line_values_beat_the_environment(tmp_path: Path) -> None:
    agent = AcpProcess(
        tmp_path / "cfg",
        "--max-sessions",
        "3",
        "--config-dir",
        str(tmp_path / "cfg"),
        env={"ZEROCLAW_acp__max_sessions": "7", "ZEROCLAW_acp__session_timeout_secs": "9"},
    )
    agent.request(1, "initialize")
    meta = agent.response(1)["result"]["_meta"]["zeroclaw"]
    assert (meta["maxSessions"], meta["sessionTimeoutSecs"]) == (3, 9)
    assert agent.close_input() == 0


def test_no_handler_failure_puts_a_traceback_on_the_wire(tmp_path: Path) -> None:
    lines: list[str] = []
    config = load_config(tmp_path / "cfg", tmp_path / "data", {})
    server = AcpServer(config, lines.append, SequentialIds(), FixedClock())

    def broken(call: object) -> object:
        raise RuntimeError("Traceback (most recent call last): secret")

    methods = [
        v
        for k, v in vars(wire).items()
        if k.startswith("METHOD_SESSION") or k == "METHOD_INITIALIZE"
    ]
    for method in methods:
        server.endpoint._methods[method] = broken  # type: ignore[index]
        server.endpoint.dispatch(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}).encode())
    assert len(lines) == len(methods)
    assert all("Traceback" not in line and "secret" not in line for line in lines)


@pytest.mark.req("ACP-CFG-11")
def test_config_set_writes_the_acp_keys_and_keeps_other_settings(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text("[gateway]\nport = 4242\n[agents.a]\nenabled = false\n")
    for key, value in [
        ("acp.default_agent", "a"),
        ("acp.max_sessions", "4"),
        ("acp.session_timeout_secs", "600"),
    ]:
        command = [sys.executable, "-m", "zeroclaw_ref", "config", "--config-dir", str(cfg)]
        done = subprocess.run([*command, "set", key, value], capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
    data = tomllib.loads((cfg / "config.toml").read_text())
    assert data["acp"] == {"default_agent": "a", "max_sessions": 4, "session_timeout_secs": 600}
    assert data["gateway"] == {"port": 4242} and data["agents"] == {"a": {"enabled": False}}


@pytest.mark.req("ACP-CFG-01", "ACP-CFG-02")
@pytest.mark.parametrize("data_env", [True, False])
@pytest.mark.parametrize("use_flag", [True, False])
def test_config_and_data_dirs_follow_the_lookup_order(
    tmp_path: Path, data_env: bool, use_flag: bool
) -> None:
    flag, env_dir = tmp_path / "flag", tmp_path / "env"
    for directory, limit in ((flag, 5), (env_dir, 6)):
        directory.mkdir()
        (directory / "config.toml").write_text(f"[acp]\nmax_sessions = {limit}\n")
    env = {"ZEROCLAW_DATA_DIR": str(tmp_path / "d")} if data_env else {}
    args = ("--config-dir", str(flag)) if use_flag else ()
    agent = AcpProcess(env_dir, *args, env=env)  # env_dir is passed as ZEROCLAW_CONFIG_DIR
    agent.request(1, "initialize")
    assert agent.response(1)["result"]["_meta"]["zeroclaw"]["maxSessions"] == (5 if use_flag else 6)
    agent.request(2, "session/new", {})
    agent.response(2)
    assert agent.close_input() == 0
    config_dir, unused = (flag, env_dir) if use_flag else (env_dir, flag)
    data_dir = tmp_path / "d" if data_env else config_dir / "data"
    assert store_path(data_dir).is_file() and not (unused / "data").exists()


# --- hostile JSON: values a reply cannot carry as they were parsed ---------------------------

SID = "\udfff"  # what a client's `"\udfff"` decodes to: a lone surrogate, with no UTF-8 form
HOSTILE = [
    # (raw line, expected id of the reply, expected error or None for a result)
    (r'{"jsonrpc":"2.0","id":1e400,"method":"initialize"}', None, -32700),
    (r'{"jsonrpc":"2.0","id":-1e400,"method":"initialize"}', None, -32700),
    (r'{"jsonrpc":"2.0","id":1e999,"method":"session/new","params":{}}', None, -32700),
    (r'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":1e400}}', None, -32700),
    (r'{"jsonrpc":"2.0","id":"\udfff","method":"initialize"}', SID, None),
    (r'{"jsonrpc":"2.0","id":2,"method":"\ud800x"}', 2, (-32601, "Method not found: \ud800x")),
    (
        r'{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"\udfff","prompt":"x"}}',
        3,
        (-32000, f"Session not found: {SID}"),
    ),
    (
        r'{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"agentAlias":"\udfff"}}',
        4,
        (-32602, f"Unknown agent `{SID}` — no [agents.{SID}] entry configured"),
    ),
    (
        r'{"jsonrpc":"2.0","id":5,"method":"session/load","params":{"sessionId":"\udfff"}}',
        5,
        (-32000, f"Session not found: {SID}"),
    ),
    (
        r'{"jsonrpc":"2.0","id":6,"method":"session/resume","params":{"session_id":"\ud800"}}',
        6,
        (-32000, "Session not found: \ud800"),
    ),
]


@pytest.mark.req(
    "ACP-TR-06", "ACP-TR-12", "ACP-TR-15", "ACP-TR-18", "ACP-TR-22", "ACP-ERR-01", "ACP-NEW-05"
)
def test_lines_the_reply_cannot_carry_as_parsed_are_answered_and_the_server_stays_up(
    tmp_path: Path,
) -> None:
    """ACP-TR-12 / ACP-ERR-01: a number no float can hold (Python reads `1e400` as an
    infinity) leaves no id to echo: a −32700 parse error with id null. ACP-TR-06 / ACP-TR-15:
    a lone surrogate in an id, a method, a session id or an alias is echoed as its `\\u`
    escape, which decodes to the same string. Both used to end the process."""
    agent = AcpProcess(tmp_path / "cfg")
    for index, (line, reply_id, expected) in enumerate(HOSTILE):
        agent.send(line)
        answer = agent.recv(f"the reply to {line}")
        assert answer["id"] == reply_id, answer
        if expected is None:
            assert answer["result"]["protocolVersion"] == 1
        elif isinstance(expected, int):
            assert answer["error"]["code"] == expected
            assert answer["error"]["message"].startswith("Parse error: number out of range: ")
        else:
            assert answer["error"] == {"code": expected[0], "message": expected[1]}
        agent.request(f"next-{index}", "initialize")  # still serving
        assert agent.response(f"next-{index}")["result"]["protocolVersion"] == 1
    assert agent.close_input() == 0
    assert "Traceback" not in "".join(agent.stderr_lines)


@pytest.mark.req("ACP-TR-06", "ACP-STORE-09", "ACP-LOAD-09", "ACP-LOAD-10")
def test_a_prompt_with_a_lone_surrogate_completes_is_stored_and_replays_unchanged(
    tmp_path: Path,
) -> None:
    """ACP-STORE-09: the turn is stored (the store write used to raise on the surrogate and
    end the session's worker, so the prompt was never answered); ACP-LOAD-10: the replay
    shows the very text the client sent."""
    agent = AcpProcess(tmp_path / "cfg")
    agent.request(1, "session/new", {})
    sid = agent.response(1)["result"]["sessionId"]
    params = {"sessionId": sid, "prompt": "hi @"}
    line = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": params})
    agent.send(line.replace("@", r"\udfff"))  # the escape as a client writes it, in ASCII
    live: list[dict[str, object]] = []
    assert agent.response(2, live)["result"]["stopReason"] == "end_turn"
    agent.request(3, "session/close", {"sessionId": sid})
    assert agent.response(3)["result"] == {}
    replay: list[dict[str, object]] = []
    agent.request(4, "session/load", {"sessionId": sid})
    assert agent.response(4, replay)["result"] == {}
    updates = [at(m, "params", "update") for m in replay]
    assert updates[0] == {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": f"hi {SID}"},
    }
    assert updates[1:] == [at(m, "params", "update") for m in live]
    assert agent.close_input() == 0


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
