"""serve judges real ACP clients (issue 15): the engine rules, `show --json`, `serve --suite`.

The scenarios are written into a scratch corpus; the "client" is this test, speaking JSON
lines to `serve` (a child process, or the suite coordinator through `serve --connect`).
Every wait is a bounded queue read or process wait (a safety net, never a timed assertion).
"""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.core.jsonlex import JSON
from zeroclaw_ref.conformance.core.runner import RunOptions, run_scenario
from zeroclaw_ref.conformance.core.transcript import TranscriptError, load
from zeroclaw_ref.conformance.serve.values import servable_problems

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"

INIT: JSON = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}
INIT_OK: JSON = {
    "jsonrpc": "2.0",
    "id": 0,
    "result": {"protocolVersion": 1, "agentCapabilities": {}},
}
NEW: JSON = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "session/new",
    "params": {"cwd": "${WORKSPACE}", "mcpServers": []},
}
NEW_OK: JSON = {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "${sid:string}"}}


def prompt(rid: int, text: str = "Hi") -> JSON:
    params: JSON = {"sessionId": "${sid}", "prompt": [{"type": "text", "text": text}]}
    return {"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": params}


def update(text: str) -> JSON:
    content: JSON = {"type": "text", "text": text}
    body: JSON = {"sessionUpdate": "agent_message_chunk", "content": content}
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "${sid}", "update": body},
    }


def result(rid: int, stop: str = "end_turn") -> JSON:
    return {"jsonrpc": "2.0", "id": rid, "result": {"stopReason": stop}}


def write(
    root: Path,
    name: str,
    frames: list[dict[str, JSON]],
    profile: str = "client",
    **header: JSON,
) -> Path:
    """acp/engine/<name>.jsonl in the scratch corpus ``root``."""
    head: dict[str, JSON] = {
        "format": 2,
        "scenario": f"acp/engine/{name}",
        "description": "A scratch scenario of the serve engine tests.",
        "requirements": ["ZC-SERVE-01"],
        "level": "required",
        "profile": profile,
        **header,
    }
    (root / "VERSION").write_text("2.9\n", encoding="utf-8")
    path = root / "acp" / "engine" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(obj, separators=(",", ":")) for obj in [head, *frames]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def oracle(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "zeroclaw_ref.conformance", *args]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)


CANCEL_FRAMES: list[dict[str, JSON]] = [
    {"send": INIT},
    {"expect": INIT_OK},
    {"send": NEW},
    {"expect": NEW_OK},
    {"send": prompt(2)},
    {"expect": update("Working")},
    {"send": {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "${sid}"}}},
    {"expect": result(2, "cancelled")},
    {"send": prompt(3, "Again")},
    {"expect": update("Done")},
    {"expect": result(3)},
]


# -- show --json -------------------------------------------------------------------------


@pytest.mark.req("ZC-SERVE-07")
def test_show_json_gives_the_steps_of_a_cancel_scenario(tmp_path: Path) -> None:
    write(tmp_path, "cancel", CANCEL_FRAMES)
    shown = oracle("show", "--json", "--fixtures", str(tmp_path), "acp/engine/cancel")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert (doc["scenario"], doc["profile"], doc["servable"]) == (
        "acp/engine/cancel",
        "client",
        True,
    )
    assert (doc["client_needs"], doc["client_files"]) == ([], {})
    steps = [(s["frame"], s["kind"], s["method"], s["after"]) for s in doc["steps"]]
    assert steps == [
        (2, "request", "initialize", {"updates": 0, "results": [], "requests": 0}),
        (4, "request", "session/new", {"updates": 0, "results": [2], "requests": 0}),
        (6, "request", "session/prompt", {"updates": 0, "results": [2, 4], "requests": 0}),
        # the cancel waits for the first update, not for the prompt's result
        (8, "notification", "session/cancel", {"updates": 1, "results": [2, 4], "requests": 0}),
        (10, "request", "session/prompt", {"updates": 1, "results": [2, 4, 6], "requests": 0}),
    ]
    assert doc["steps"][2]["params"] == {
        "sessionId": "${sid}",
        "prompt": [{"type": "text", "text": "Hi"}],
    }
    text = oracle("show", "--fixtures", str(tmp_path), "acp/engine/cancel").stdout
    assert "// what the client must do" in text
    assert "4. (line 8) after the answers to line(s) 2, 4 and 1 session/update" in text


@pytest.mark.req("ZC-SERVE-07", "ZC-SERVE-03", "ZC-SERVE-04")
def test_show_json_marks_answers_the_client_computes_itself(tmp_path: Path) -> None:
    read: JSON = {
        "jsonrpc": "2.0",
        "id": "r1",
        "method": "fs/read_text_file",
        "params": {"sessionId": "${sid}", "path": "${WORKSPACE}/notes.txt", "line": 2, "limit": 1},
    }
    frames: list[dict[str, JSON]] = [
        {"send": INIT},
        {"expect": INIT_OK},
        {"send": NEW},
        {"expect": NEW_OK},
        {"send": prompt(2)},
        {"expect": read},
        {"send": {"jsonrpc": "2.0", "id": "r1", "result": {"content": "two\n"}}},
        {"expect": result(2)},
    ]
    files: JSON = {"notes.txt": "one\ntwo\nthree\n"}
    write(tmp_path, "read", frames, client_needs=["fs.readTextFile"], client_files=files)
    doc = json.loads(
        oracle("show", "--json", "--fixtures", str(tmp_path), "acp/engine/read").stdout
    )
    assert doc["client_needs"] == ["fs.readTextFile"]
    assert doc["client_files"] == files
    answer = doc["steps"][-1]
    assert answer == {
        "frame": 8,
        "kind": "response",
        "method": "fs/read_text_file",
        "id": "r1",
        "result": {"content": "two\n"},
        "auto": True,
        "after": {"updates": 0, "results": [2, 4], "requests": 1},
    }


# -- what is servable ------------------------------------------------------------------------


@pytest.mark.req("ZC-SERVE-01", "ZC-SERVE-05", "ZC-SERVE-03")
@pytest.mark.parametrize(
    ("frames", "needs", "rule"),
    [
        ([{"send": NEW}, {"expect": NEW_OK}], [], "ZC-SERVE-01"),
        (
            [
                {"send": INIT},
                {"expect": INIT_OK},
                {"send": {"jsonrpc": "2.0", "id": 5, "method": "_zeroclaw/barrier"}},
                {"expect": {"jsonrpc": "2.0", "id": 5, "result": {}}},
            ],
            [],
            "ZC-SERVE-05",
        ),
        (
            [
                {"send": INIT},
                {"expect": INIT_OK},
                {"send": NEW},
                {"expect": NEW_OK},
                {
                    "expect": {
                        "jsonrpc": "2.0",
                        "id": "w",
                        "method": "fs/write_text_file",
                        "params": {"sessionId": "${sid}", "path": "/x", "content": "x"},
                    }
                },
                {"send": {"jsonrpc": "2.0", "id": "w", "result": None}},
            ],
            [],
            "ZC-SERVE-03",
        ),
    ],
    ids=["no-initialize", "oracle-hook", "write-without-client-need"],
)
def test_what_a_real_client_cannot_replay_is_not_servable(
    frames: list[dict[str, JSON]], needs: list[str], rule: str, tmp_path: Path
) -> None:
    path = write(tmp_path, "refused", frames, profile="zeroclaw", client_needs=needs)
    problems = servable_problems(load(path, tmp_path))
    assert rule in {p.rule for p in problems}, problems
    listed = oracle("list", "--servable", "--json", "--fixtures", str(tmp_path))
    assert json.loads(listed.stdout) == []
    served = oracle("serve", "--fixtures", str(tmp_path), "acp/engine/refused")
    assert served.returncode == 2 and rule in served.stderr, served.stderr


@pytest.mark.req("ZC-SERVE-01", "ZC-SERVE-03", "ZC-SERVE-04")
def test_a_client_scenario_header_is_checked(tmp_path: Path) -> None:
    frames: list[dict[str, JSON]] = [{"send": NEW}, {"expect": NEW_OK}]
    path = write(tmp_path, "bad", frames, client_needs=["fs.chmod"], client_files={"../x": "y"})
    with pytest.raises(TranscriptError) as caught:
        load(path, tmp_path)
    rules = {p.rule for p in caught.value.problems}
    assert rules == {"ZC-SERVE-01", "ZC-SERVE-03", "ZC-SERVE-04"}, caught.value.problems


@pytest.mark.req("ZC-SERVE-02")
def test_run_reports_a_client_scenario_not_applicable_without_starting_an_agent(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "cancel", CANCEL_FRAMES)
    got = run_scenario(path, tmp_path, RunOptions(agent="/nonexistent/agent"))
    assert (got.status, got.reason) == ("not-applicable", "judges clients; play it with serve")
    listed = oracle("list", "--servable", "--json", "--fixtures", str(tmp_path), "acp/engine")
    assert json.loads(listed.stdout) == ["acp/engine/cancel"]


# -- a scripted client against serve ---------------------------------------------------------

WAIT = 20.0


class Client:
    """A stdlib ACP "client": JSON lines to a child's stdin, its stdout read into a queue."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    @classmethod
    def serve(cls, root: Path, sid: str, *options: str) -> Client:
        argv = [sys.executable, "-m", "zeroclaw_ref.conformance", "serve", "--fixtures", str(root)]
        return cls([*argv, *options, sid])

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, value: JSON) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(value) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def recv(self) -> dict[str, JSON]:
        line = self.lines.get(timeout=WAIT)
        assert line, "serve closed its output early"
        value = json.loads(line)
        assert isinstance(value, dict)
        return value

    def finish(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        status = self.proc.wait(timeout=WAIT)
        return status, self.proc.stderr.read().decode("utf-8")

    def start(self, caps: JSON, cwd: Path) -> str:
        """initialize with ``caps``, then session/new in ``cwd``; returns the session id."""
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": 1,
                    "clientCapabilities": caps,
                    "clientInfo": {"name": "scripted", "version": "1"},
                },
            }
        )
        assert self.recv()["id"] == 0
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session/new",
                "params": {"cwd": str(cwd), "mcpServers": []},
            }
        )
        answer = self.recv()["result"]
        assert isinstance(answer, dict) and isinstance(answer["sessionId"], str)
        return answer["sessionId"]

    def prompt(self, sid: str, rid: int = 2) -> None:
        params: JSON = {"sessionId": sid, "prompt": [{"type": "text", "text": "Hi"}]}
        self.send({"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": params})


PERMISSION: JSON = {
    "jsonrpc": "2.0",
    "id": "p1",
    "method": "session/request_permission",
    "params": {
        "sessionId": "${sid}",
        "toolCall": {"toolCallId": "call-1", "title": "Run ls", "kind": "execute"},
        "options": [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ],
    },
}


def _permission_frames(late: bool = False) -> list[dict[str, JSON]]:
    picked: JSON = {
        "jsonrpc": "2.0",
        "id": "p1",
        "result": {"outcome": {"outcome": "selected", "optionId": "yes"}},
    }
    start = [
        {"send": INIT},
        {"expect": INIT_OK},
        {"send": NEW},
        {"expect": NEW_OK},
        {"send": prompt(2)},
    ]
    if not late:
        return [*start, {"expect": PERMISSION}, {"send": picked}, {"expect": result(2)}]
    cancelled: JSON = {
        "jsonrpc": "2.0",
        "id": "p1",
        "result": {"outcome": {"outcome": "cancelled"}},
    }
    cancel: JSON = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "${sid}"}}
    return [
        *start,
        {"expect": PERMISSION},
        {"send": cancel},
        {"expect": result(2, "cancelled")},
        {"send": cancelled},
    ]


@pytest.mark.req("TX-SERVE-06", "ZC-SERVE-06")
def test_a_scripted_client_passes_a_permission_scenario(tmp_path: Path) -> None:
    write(tmp_path, "perm", _permission_frames())
    client = Client.serve(tmp_path, "acp/engine/perm")
    sid = client.start({}, tmp_path)
    client.prompt(sid)
    asked = client.recv()
    assert asked["method"] == "session/request_permission" and asked["id"] == "p1"
    client.send(
        {
            "jsonrpc": "2.0",
            "id": "p1",
            "result": {"outcome": {"outcome": "selected", "optionId": "yes"}},
        }
    )
    assert client.recv() == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}
    status, report = client.finish()
    assert status == 0 and report.startswith("PASS  acp/engine/perm"), report
    assert "client: scripted 1" in report


@pytest.mark.req("TX-SERVE-06", "TX-SERVE-07")
def test_a_wrong_option_id_fails_naming_the_frame_and_pointer(tmp_path: Path) -> None:
    path = write(tmp_path, "perm", _permission_frames())
    client = Client.serve(tmp_path, "acp/engine/perm")
    client.prompt(client.start({}, tmp_path))
    client.recv()
    client.send(
        {
            "jsonrpc": "2.0",
            "id": "p1",
            "result": {"outcome": {"outcome": "selected", "optionId": "no"}},
        }
    )
    status, report = client.finish()
    assert status == 1, report
    assert f"frame: {load(path, tmp_path).display}:8 send on acp" in report, report
    assert "pointer: /result/outcome/optionId" in report, report


@pytest.mark.req("TX-SERVE-06")
def test_a_late_answer_after_the_turn_ended_is_judged(tmp_path: Path) -> None:
    write(tmp_path, "late", _permission_frames(late=True))
    client = Client.serve(tmp_path, "acp/engine/late")
    sid = client.start({}, tmp_path)
    client.prompt(sid)
    assert client.recv()["method"] == "session/request_permission"
    client.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    assert client.recv()["result"] == {"stopReason": "cancelled"}
    client.send({"jsonrpc": "2.0", "id": "p1", "result": {"outcome": {"outcome": "cancelled"}}})
    status, report = client.finish()
    assert status == 0, report


@pytest.mark.req("ZC-SERVE-08")
@pytest.mark.parametrize(
    ("stray", "why"),
    [
        ({"jsonrpc": "2.0", "id": None, "result": None}, "with id null: it answers no request"),
        (
            {"jsonrpc": "2.0", "id": "p9", "result": {}},
            'answered id "p9", but serve sent no request',
        ),
    ],
    ids=["answer-to-a-notification", "unknown-id"],
)
def test_a_client_message_that_answers_nothing_fails_naming_the_frame(
    stray: JSON, why: str, tmp_path: Path
) -> None:
    frames = [*CANCEL_FRAMES[:6], {"send": CANCEL_FRAMES[6]["send"]}, *CANCEL_FRAMES[7:]]
    path = write(tmp_path, "stray", frames)
    client = Client.serve(tmp_path, "acp/engine/stray")
    client.prompt(client.start({}, tmp_path))
    assert client.recv()["method"] == "session/update"
    client.send(stray)  # where the scenario awaits session/cancel (line 8)
    status, report = client.finish()
    assert status == 1, report
    assert "reason: unexpected-message" in report and why in report, report
    assert f"frame: {load(path, tmp_path).display}:8 send on acp" in report, report


def _write_frames() -> list[dict[str, JSON]]:
    write_req: JSON = {
        "jsonrpc": "2.0",
        "id": "w1",
        "method": "fs/write_text_file",
        "params": {"sessionId": "${sid}", "path": "${WORKSPACE}/out.txt", "content": "hi\n"},
    }
    return [
        {"send": INIT},
        {"expect": INIT_OK},
        {"send": NEW},
        {"expect": NEW_OK},
        {"send": prompt(2)},
        {"expect": write_req},
        {"send": {"jsonrpc": "2.0", "id": "w1", "result": None}},
        {"expect": result(2)},
    ]


@pytest.mark.req("ZC-SERVE-03")
def test_a_client_without_the_capability_is_never_sent_the_request(tmp_path: Path) -> None:
    write(tmp_path, "write", _write_frames(), client_needs=["fs.writeTextFile"])
    client = Client.serve(tmp_path, "acp/engine/write", "--idle-timeout", "5")
    client.send(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
        }
    )
    assert client.recv()["id"] == 0
    # the client goes on as clients do: its session/new is refused, not judged
    client.send(
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(tmp_path)}}
    )
    assert client.recv()["error"] == {"code": -32601, "message": "Method not found: session/new"}
    status, report = client.finish()
    assert status == 0 and report.startswith("NOT-APPLICABLE acp/engine/write"), report
    assert "did not advertise fs.writeTextFile" in report
    assert client.lines.get(timeout=WAIT) == b""  # nothing else was written, no fs/write_text_file


@pytest.mark.req("ZC-SERVE-03", "TX-SERVE-06")
def test_a_client_with_the_capability_gets_the_request_and_is_judged(tmp_path: Path) -> None:
    write(tmp_path, "write", _write_frames(), client_needs=["fs.writeTextFile"])
    client = Client.serve(tmp_path, "acp/engine/write")
    sid = client.start({"fs": {"writeTextFile": True}}, tmp_path)
    client.prompt(sid)
    asked = client.recv()
    assert asked["method"] == "fs/write_text_file"
    assert asked["params"] == {"sessionId": sid, "path": f"{tmp_path}/out.txt", "content": "hi\n"}
    client.send({"jsonrpc": "2.0", "id": "w1", "result": None})
    assert client.recv()["result"] == {"stopReason": "end_turn"}
    status, report = client.finish()
    assert status == 0, report


@pytest.mark.req("TX-SERVE-06", "ZC-SERVE-03")
def test_a_terminal_id_the_client_chose_is_bound_and_reused(tmp_path: Path) -> None:
    create: JSON = {
        "jsonrpc": "2.0",
        "id": "t1",
        "method": "terminal/create",
        "params": {"sessionId": "${sid}", "command": "echo", "args": ["hi"]},
    }
    output: JSON = {
        "jsonrpc": "2.0",
        "id": "t2",
        "method": "terminal/output",
        "params": {"sessionId": "${sid}", "terminalId": "${tid}"},
    }
    big = "x" * (1 << 20)  # a 1 MiB update line, written and read whole
    frames: list[dict[str, JSON]] = [
        {"send": INIT},
        {"expect": INIT_OK},
        {"send": NEW},
        {"expect": NEW_OK},
        {"send": prompt(2)},
        {"expect": create},
        {"send": {"jsonrpc": "2.0", "id": "t1", "result": {"terminalId": "${tid:nonempty}"}}},
        {"expect": output},
        {"send": {"jsonrpc": "2.0", "id": "t2", "result": {"output": "hi\n", "truncated": False}}},
        {"expect": update(big)},
        {"expect": result(2)},
    ]
    path = write(tmp_path, "term", frames, client_needs=["terminal"])
    assert servable_problems(load(path, tmp_path)) == []
    client = Client.serve(tmp_path, "acp/engine/term")
    sid = client.start({"terminal": True}, tmp_path)
    client.prompt(sid)
    assert client.recv()["method"] == "terminal/create"
    client.send({"jsonrpc": "2.0", "id": "t1", "result": {"terminalId": "term-77"}})
    asked = client.recv()
    assert asked["params"] == {"sessionId": sid, "terminalId": "term-77"}
    client.send({"jsonrpc": "2.0", "id": "t2", "result": {"output": "hi\n", "truncated": False}})
    chunk = client.recv()
    assert chunk["params"]["update"]["content"]["text"] == big  # type: ignore[index]
    assert client.recv()["id"] == 2
    status, report = client.finish()
    assert status == 0, report


# -- serve --suite ---------------------------------------------------------------------------


def _suite(root: Path, *options: str) -> tuple[subprocess.Popen[str], str]:
    sock = str(root / "suite.sock")
    argv = [
        sys.executable,
        "-m",
        "zeroclaw_ref.conformance",
        "serve",
        "--suite",
        "--fixtures",
        str(root),
        "--socket",
        sock,
        *options,
    ]
    proc = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    for _ in range(3):  # the coordinator's first lines name the agent command
        line = proc.stderr.readline()
        if "--connect" in line:
            return proc, line.strip()
    raise AssertionError("the coordinator printed no agent command")


@pytest.mark.req("ZC-SERVE-09")
def test_a_suite_plays_three_scenarios_over_three_connections(tmp_path: Path) -> None:
    write(tmp_path, "a-perm", _permission_frames())
    write(tmp_path, "b-write", _write_frames(), client_needs=["fs.writeTextFile"])
    write(tmp_path, "c-cancel", CANCEL_FRAMES)
    order = oracle("list", "--servable", "--json", "--fixtures", str(tmp_path)).stdout
    assert json.loads(order) == ["acp/engine/a-perm", "acp/engine/b-write", "acp/engine/c-cancel"]
    report = tmp_path / "suite.json"
    proc, command = _suite(tmp_path, "--json", str(report), "--idle-timeout", "5")
    argv = shlex.split(command)
    # 1: passes
    client = Client(argv)
    client.prompt(client.start({}, tmp_path))
    client.recv()
    client.send(
        {
            "jsonrpc": "2.0",
            "id": "p1",
            "result": {"outcome": {"outcome": "selected", "optionId": "yes"}},
        }
    )
    client.recv()
    assert client.finish()[0] == 0
    # 2: no writeTextFile advertised: not-applicable
    client = Client(argv)
    client.send(INIT)
    client.recv()
    assert client.finish()[0] == 0
    # 3: the client answers a notification: fails
    client = Client(argv)
    client.prompt(client.start({}, tmp_path))
    client.recv()
    client.send({"jsonrpc": "2.0", "id": None, "result": None})
    client.finish()
    out, _ = proc.communicate(timeout=WAIT)
    assert proc.returncode == 1, out
    assert "contract 2.9: 3 scenarios: pass 1, fail 1, not-applicable 1" in out, out
    doc = json.loads(report.read_text(encoding="utf-8"))
    outcomes = {r["id"]: (r["outcome"], r.get("frame")) for r in doc["results"]}
    assert outcomes == {
        "acp/engine/a-perm": ("pass", None),
        "acp/engine/b-write": ("not-applicable", None),
        "acp/engine/c-cancel": ("fail", 8),
    }


@pytest.mark.req("ZC-SERVE-09")
def test_a_client_that_never_connects_fails_the_remaining_scenarios(tmp_path: Path) -> None:
    write(tmp_path, "a-perm", _permission_frames())
    write(tmp_path, "c-cancel", CANCEL_FRAMES)
    junit = tmp_path / "suite.xml"
    proc, _command = _suite(tmp_path, "--junit", str(junit), "--idle-timeout", "0.5")
    out, _ = proc.communicate(timeout=WAIT)
    assert proc.returncode == 1, out
    assert out.count("fail acp/engine/") == 2 and "timeout" in out, out
    assert "client never connected" in junit.read_text(encoding="utf-8")
