"""`serve`: the oracle plays the agent and judges an ACP client (transcripts.md §14).

A small stdlib client replays scenarios against `python -m zeroclaw_ref.conformance serve`
run as a child process: it sends each `send` frame with concrete values (its own request
ids, its own workspace) and matches what serve writes against the `expect` frames,
binding as it goes. Every wait is a bounded queue read, a safety net and never a timed
assertion; the idle-timeout tests only give serve a short bound to reach.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.core.agent import Message, Pollution
from zeroclaw_ref.conformance.core.jsonlex import JSON, dumps, loads, strict_equal
from zeroclaw_ref.conformance.core.match import MatchContext, match, match_unordered
from zeroclaw_ref.conformance.core.placeholders import substitute
from zeroclaw_ref.conformance.core.transcript import Frame, Scenario, load
from zeroclaw_ref.conformance.serve.play import ClientEvent, ClientInput
from zeroclaw_ref.conformance.serve.values import (
    HostNames,
    Instantiator,
    invented,
    servable_problems,
)

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"
WAIT = 15.0
EXIT_WAIT = 30.0
# Mutates the concrete message of a send frame; None means "send nothing".
Mutation = Callable[[Frame, dict[str, JSON]], JSON | None]


class Serve:
    """`serve` as a child process; its stdout is read by a thread into a queue."""

    def __init__(self, scenario: str | Path, *options: str, fixtures: Path = FIXTURES) -> None:
        argv = [sys.executable, "-m", "zeroclaw_ref.conformance", "serve", str(scenario)]
        argv += ["--fixtures", str(fixtures), *options]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, value: JSON) -> None:
        self.send_bytes((dumps(value) + "\n").encode("utf-8"))

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv_line(self) -> bytes:
        try:
            line = self.lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"serve wrote nothing within {WAIT} s") from None
        if not line:
            self.finish()
            raise AssertionError(f"serve closed its stdout early:\n{self.stderr}")
        return line

    def recv(self) -> JSON:
        return loads(self.recv_line().decode("utf-8"))

    def close(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()

    def finish(self, close: bool = True) -> int:
        """Close stdin (unless told not to), wait for the exit, keep the report."""
        if close:
            self.close()
        try:
            status = self.proc.wait(timeout=EXIT_WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("serve did not exit") from None
        assert self.proc.stderr is not None
        self.stderr += self.proc.stderr.read().decode("utf-8")
        return status

    def written_after(self) -> list[bytes]:
        """Lines serve wrote that the client has not read (after it exited)."""
        out: list[bytes] = []
        while (line := self.lines.get(timeout=WAIT)) != b"":
            out.append(line)
        return out


def _response_shaped(value: JSON) -> bool:
    return isinstance(value, dict) and "method" not in value and "id" in value


class Replay:
    """Plays the client side of a scenario against serve, frame by frame."""

    def __init__(self, serve: Serve, sc: Scenario, workspace: str, renumber: bool = True) -> None:
        self.serve = serve
        self.sc = sc
        self.host = {
            "WORKSPACE": workspace,
            "CONFIG_DIR": workspace + "/config",
            "DATA_DIR": workspace + "/config/data",
            "HOME": workspace + "/home",
        }
        self.bindings: dict[str, JSON] = {}
        self.renumber = renumber
        self.ids: list[tuple[JSON, JSON]] = []  # (frame id, the id this client used)
        self.received: list[JSON] = []

    def run(self, mutate: Mutation | None = None, stop_after: int | None = None) -> None:
        """Replay every frame; stop right after the send on line ``stop_after``."""
        for frame in self.sc.frames:
            if frame.verb == "send":
                self.send(frame, mutate)
                if frame.line == stop_after:
                    return
            elif frame.verb == "expect":
                self.expect(frame.value)
            elif frame.verb == "expect_unordered":
                self.expect_unordered(frame.value)
            elif frame.verb == "do":
                self.serve.close()

    def send(self, frame: Frame, mutate: Mutation | None) -> None:
        value = substitute(frame.value, self.host, self.bindings)
        if isinstance(value, dict) and "method" in value and "id" in value and self.renumber:
            client_id = f"client-{len(self.ids)}"
            self.ids.append((value["id"], client_id))
            value = {k: client_id if k == "id" else v for k, v in value.items()}
        if mutate is not None and isinstance(value, dict):
            changed = mutate(frame, value)
            if changed is None:
                return
            value = changed
        self.serve.send(value)

    def _own_id(self, expected: JSON, got: JSON) -> JSON:
        """A reply to one of this client's requests must carry this client's id."""
        if not (self.renumber and _response_shaped(expected) and isinstance(got, dict)):
            return got
        assert isinstance(expected, dict)
        for frame_id, client_id in reversed(self.ids):
            if strict_equal(frame_id, expected["id"]):
                assert strict_equal(got.get("id"), client_id), f"not answered with own id: {got}"
                return {k: frame_id if k == "id" else v for k, v in got.items()}
        return got

    def expect(self, expected: JSON) -> None:
        got = self.serve.recv()
        self.received.append(got)
        ctx = MatchContext(self.host, self.bindings, lenient_host=True)
        miss = match(expected, self._own_id(expected, got), ctx)
        assert miss is None, f"serve wrote {dumps(got)}: {miss}"

    def expect_unordered(self, values: JSON) -> None:
        assert isinstance(values, list)
        got = [self.serve.recv() for _ in values]
        ctx = MatchContext(self.host, self.bindings, lenient_host=True)
        assert match_unordered(values, got, ctx).complete, got


def scenario(sid: str) -> Scenario:
    return load(FIXTURES / f"{sid}.jsonl", FIXTURES)


def write_scenario(root: Path, name: str, frames: list[dict[str, JSON]]) -> Path:
    """A scenario acp/serve-test/<name> in a scratch corpus; returns its file."""
    header = {
        "format": 2,
        "scenario": f"acp/serve-test/{name}",
        "description": "A scratch scenario for the serve tests runs.",
        "requirements": ["TX-SERVE-01"],
        "level": "required",
        "profile": "zeroclaw",
    }
    (root / "VERSION").write_text("1.2\n", encoding="utf-8")
    path = root / "acp" / "serve-test" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(obj, ensure_ascii=False, separators=(",", ":")) for obj in [header, *frames]
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


INIT_SEND: dict[str, JSON] = {
    "send": {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
}
INIT_EXPECT: dict[str, JSON] = {
    "expect": {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}
}
# What a client sends to begin [ZC-SERVE-06]: serve holds initialize to its ACP types.
CLIENT_INIT: JSON = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1},
}
# The handshake a scratch copy of a corpus scenario gains [ZC-SERVE-01]; its id is one
# no corpus scenario uses, so the copy's own ids keep their meaning.
COPY_INIT: list[dict[str, JSON]] = [
    {
        "send": {
            "jsonrpc": "2.0",
            "id": "zc-init",
            "method": "initialize",
            "params": {"protocolVersion": 1},
        }
    },
    {"expect": {"jsonrpc": "2.0", "id": "zc-init", "result": {"protocolVersion": 1}}},
]


def served(sid: str, root: Path) -> tuple[Path, Path, Scenario]:
    """(file, fixtures, scenario) serve can play for a corpus id [ZC-SERVE-01].

    A corpus scenario that judges our agent may begin with session/new (ZeroClaw
    accepts that); serve offers only what real clients do, so such a scenario is
    played from a scratch copy that begins with initialize. Its setup is left out:
    serve ignores it, and its support files are not copied.
    """
    sc = scenario(sid)
    first = sc.frames[0].value
    if isinstance(first, dict) and first.get("method") == "initialize":
        return FIXTURES / f"{sid}.jsonl", FIXTURES, sc
    lines = (FIXTURES / f"{sid}.jsonl").read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header.pop("setup", None)
    extra = [json.dumps(obj, separators=(",", ":")) for obj in COPY_INIT]
    path = root / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    (root / "VERSION").write_text("1.2\n", encoding="utf-8")
    text = "\n".join([json.dumps(header, ensure_ascii=False), *extra, *lines[1:]]) + "\n"
    path.write_text(text, encoding="utf-8")
    return path, root, load(path, root)


def initialize(serve: Serve) -> None:
    """The client's handshake a scratch scenario begins with (INIT_SEND, INIT_EXPECT)."""
    serve.send(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    assert serve.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}


# -- a conforming client passes ---------------------------------------------------------


@pytest.mark.req("TX-SERVE-01", "TX-SERVE-03", "TX-SERVE-05", "TX-SERVE-06", "TX-SERVE-08")
@pytest.mark.parametrize(
    "sid",
    [
        "acp/permission/allow-once-runs-the-tool",
        "acp/cancel/cancel-during-permission-request",
        "acp/transport/params-absent-null-or-not-object",
        "acp/store/initialize-with-store",
        "acp/store/close-then-resume",
        "acp/prompt/busy-session",
        "acp/prompt/empty-completion",
        "acp/new/cwd-equal-config-dir",
    ],
)
def test_a_client_that_replays_a_servable_scenario_passes(sid: str, tmp_path: Path) -> None:
    path, root, sc = served(sid, tmp_path / "corpus")
    assert servable_problems(sc) == []
    serve = Serve(path, fixtures=root)
    Replay(serve, sc, str(tmp_path)).run()
    assert serve.finish() == 0, serve.stderr
    assert serve.stderr.startswith(f"PASS  {sid}"), serve.stderr


@pytest.mark.req("TX-SERVE-01", "TX-SERVE-05")
def test_request_ids_of_every_kind_come_back_unchanged(tmp_path: Path) -> None:
    init_p: JSON = {"protocolVersion": 1}
    ids: list[JSON] = ["s-1", 0, -7, 2.5, "", "\u00fcn\u00ef", 9007199254740993]
    frames: list[dict[str, JSON]] = []
    for n, rid in enumerate(ids):
        if n == 0:
            frames += [
                {"send": {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": init_p}},
                {"expect": {"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1}}},
            ]
            continue
        new = {"jsonrpc": "2.0", "id": rid, "method": "session/new", "params": {"cwd": "/w"}}
        result = {"sessionId": f"${{s{n}:string}}"}
        frames += [{"send": new}, {"expect": {"jsonrpc": "2.0", "id": rid, "result": result}}]
    path = write_scenario(tmp_path, "ids", frames)
    serve = Serve(path, fixtures=tmp_path)
    Replay(serve, load(path, tmp_path), str(tmp_path), renumber=False).run()
    assert serve.finish() == 0, serve.stderr


@pytest.mark.req("TX-SERVE-05")
def test_a_real_id_is_answered_in_its_own_lexical_form(tmp_path: Path) -> None:
    path = write_scenario(
        tmp_path,
        "real-id",
        [
            {"send": {"jsonrpc": "2.0", "id": 1, "method": "initialize"}},
            {"expect": {"jsonrpc": "2.0", "id": 1, "result": {}}},
        ],
    )
    serve = Serve(path, fixtures=tmp_path)
    serve.send_bytes(
        b'{"jsonrpc":"2.0","id":1.50,"method":"initialize","params":{"protocolVersion":1}}\n'
    )
    assert serve.recv_line() == b'{"jsonrpc":"2.0","id":1.50,"result":{}}\n'
    assert serve.finish() == 0, serve.stderr


@pytest.mark.req("TX-SERVE-04")
def test_the_workspace_is_bound_from_the_clients_cwd(tmp_path: Path) -> None:
    sid = "acp/permission/allow-once-runs-the-tool"
    serve = Serve(sid)
    replay = Replay(serve, scenario(sid), str(tmp_path))
    replay.run()
    assert serve.finish() == 0, serve.stderr
    dirs = [
        m["result"]["workspaceDir"]
        for m in replay.received
        if isinstance(m, dict)
        and isinstance(m.get("result"), dict)
        and "workspaceDir" in m["result"]
    ]
    assert dirs == [str(tmp_path)]


@pytest.mark.req("TX-SERVE-04")
def test_without_a_cwd_the_workspace_is_a_fresh_directory_of_serves_own(tmp_path: Path) -> None:
    path, root, sc = served("acp/new/cwd-relative", tmp_path / "corpus")
    serve = Serve(path, fixtures=root)
    replay = Replay(serve, sc, str(tmp_path))
    replay.run()
    first = replay.received[1]
    assert isinstance(first, dict) and isinstance(first["result"], dict)
    shown = first["result"]["workspaceDir"]
    assert isinstance(shown, str) and shown.endswith("/sub")
    workspace = Path(shown.removesuffix("/sub"))
    assert workspace.is_absolute() and workspace.is_dir() and workspace != tmp_path
    assert serve.finish() == 0, serve.stderr
    assert not workspace.exists(), "serve removes its scratch directories"


# -- a client that deviates fails, and the report names the frame -------------------------


def _set(path: tuple[str, ...], new: JSON) -> Callable[[dict[str, JSON]], JSON]:
    def change(value: dict[str, JSON]) -> JSON:
        copy = loads(dumps(value))
        assert isinstance(copy, dict)
        node: JSON = copy
        for key in path[:-1]:
            assert isinstance(node, dict)
            node = node[key]
        assert isinstance(node, dict)
        if new is None:
            del node[path[-1]]
        else:
            node[path[-1]] = new
        return copy

    return change


def _first_send(sc: Scenario, method: str | None = None, response: bool = False) -> Frame:
    for frame in sc.frames:
        if frame.verb != "send" or not isinstance(frame.value, dict):
            continue
        if response and "result" in frame.value:
            return frame
        if method is not None and frame.value.get("method") == method:
            return frame
    raise AssertionError("no such send frame")


ALLOW = "acp/permission/allow-once-runs-the-tool"
CANCEL = "acp/cancel/cancel-during-permission-request"


@pytest.mark.req("TX-SERVE-05", "TX-SERVE-06", "TX-SERVE-07", "TX-SERVE-01")
@pytest.mark.parametrize(
    ("sid", "method", "response", "change", "pointer", "reason"),
    [
        (ALLOW, "session/prompt", False, _set(("method",), "session/promptx"), "/method", "value"),
        (ALLOW, "session/prompt", False, _set(("id",), None), "/id", "missing-key"),
        (CANCEL, "session/cancel", False, _set(("id",), 99), "/id", "extra-key"),
        (
            ALLOW,
            "session/prompt",
            False,
            _set(("params", "sessionId"), "not-the-session"),
            "/params/sessionId",
            "binding-conflict",
        ),
        (
            ALLOW,
            None,
            True,
            _set(("result", "outcome", "optionId"), "reject-once"),
            "/result/outcome/optionId",
            "value",
        ),
    ],
    ids=[
        "wrong-method",
        "notification-for-request",
        "request-for-notification",
        "wrong-session",
        "wrong-permission-answer",
    ],
)
def test_a_deviating_client_fails_and_the_report_names_the_frame(
    sid: str,
    method: str | None,
    response: bool,
    change: Callable[[dict[str, JSON]], JSON],
    pointer: str,
    reason: str,
    tmp_path: Path,
) -> None:
    sc = scenario(sid)
    bad = _first_send(sc, method, response)
    report = tmp_path / "report.txt"
    serve = Serve(sid, "--report", str(report))

    def mutate(frame: Frame, value: dict[str, JSON]) -> JSON:
        return change(value) if frame is bad else value

    Replay(serve, sc, str(tmp_path / "ws")).run(mutate, stop_after=bad.line)
    assert serve.finish() == 1, serve.stderr
    # [TX-SERVE-07] nothing more is written once the client has failed
    assert serve.written_after() == []
    text = serve.stderr
    assert text.startswith(f"FAIL  {sid}"), text
    assert f"frame: {sc.display}:{bad.line} send on acp" in text, text
    assert f"pointer: {pointer}\nmismatch: {reason}\n" in text, text
    assert report.read_text(encoding="utf-8") == text


@pytest.mark.req("TX-SERVE-01", "TX-SERVE-07")
def test_a_line_that_is_not_json_fails_as_pollution(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, "pollution", [INIT_SEND, INIT_EXPECT])
    serve = Serve(path, fixtures=tmp_path)
    serve.send_bytes(b"hello there\n")
    assert serve.finish() == 1
    assert "reason: stdout-pollution: not a JSON value: b'hello there\\n'" in serve.stderr


@pytest.mark.req("TX-SERVE-07")
def test_closing_stdin_before_an_awaited_message_fails(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, "early-eof", [INIT_SEND, INIT_EXPECT])
    serve = Serve(path, fixtures=tmp_path)
    assert serve.finish() == 1
    assert "acp/serve-test/early-eof.jsonl:2 send on acp" in serve.stderr
    assert "reason: unexpected-exit" in serve.stderr


@pytest.mark.req("TX-SERVE-01", "TX-SERVE-07")
def test_a_client_that_stops_reading_fails_with_status_1(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, "deaf", [INIT_SEND, INIT_EXPECT])
    argv = [sys.executable, "-m", "zeroclaw_ref.conformance", "serve", str(path)]
    proc = subprocess.Popen(
        [*argv, "--fixtures", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n',
        EXIT_WAIT,
    )
    assert proc.returncode == 1, err
    assert b"reason: unexpected-exit: the client stopped reading" in err


@pytest.mark.req("TX-SERVE-01")
def test_client_lines_are_assembled_across_reads_and_judged_like_iut_output() -> None:
    read_end, write_end = os.pipe()
    lines = ClientInput(read_end)
    long_text = "x" * 300_000
    with os.fdopen(write_end, "wb") as pipe:
        pipe.write(b'{"a":"' + long_text.encode()[:100_000])
        pipe.flush()
        pipe.write(long_text.encode()[100_000:] + b'"}\n{"b":1}\r\n[1]')
    first, second, third = (lines.next(WAIT) for _ in range(3))
    assert isinstance(first, Message) and first.value == {"a": long_text}
    assert isinstance(second, Pollution) and second.why == "CR before LF"
    assert isinstance(third, Pollution) and third.why == "partial line at EOF"
    assert lines.next(WAIT) is not None and lines.closed
    os.close(read_end)


# -- the check level, and serve_strict --------------------------------------------------------


STRICT_NEW: dict[str, JSON] = {
    "send": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/new",
        "params": {"cwd": "${WORKSPACE}", "mcpServers": []},
    }
}
NEW_RESULT: dict[str, JSON] = {
    "expect": {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "${sid:uuid}"}}
}


@pytest.mark.req("TX-SERVE-05")
@pytest.mark.parametrize(
    ("strict", "params", "status"),
    [
        (False, {"cwd": "/elsewhere", "extra": True}, 0),
        (True, {"cwd": "/w", "mcpServers": []}, 0),
        (True, {"cwd": "/w", "mcpServers": [], "extra": True}, 1),
        (True, {"cwd": "/w", "mcpServers": [{}]}, 1),
    ],
    ids=["level-checks-ignore-params", "strict-match", "strict-extra-key", "strict-value"],
)
def test_serve_strict_matches_the_whole_message_except_its_id(
    strict: bool, params: dict[str, JSON], status: int, tmp_path: Path
) -> None:
    frame = dict(STRICT_NEW, serve_strict=True) if strict else STRICT_NEW
    path = write_scenario(tmp_path, "strict", [INIT_SEND, INIT_EXPECT, frame, NEW_RESULT])
    serve = Serve(path, fixtures=tmp_path)
    initialize(serve)
    serve.send({"jsonrpc": "2.0", "id": "any-id", "method": "session/new", "params": params})
    if status == 0:
        reply = serve.recv()
        assert isinstance(reply, dict) and reply["id"] == "any-id"
    assert serve.finish() == status, serve.stderr
    if status:
        assert "(checked: the whole message (serve_strict))" in serve.stderr


# -- scenarios serve must refuse ------------------------------------------------------------------


@pytest.mark.req("TX-SERVE-02", "TX-SERVE-01")
@pytest.mark.parametrize(
    ("frames", "why"),
    [
        ([INIT_SEND, {"send_raw": "{}x"}, INIT_EXPECT], "send_raw"),
        ([INIT_SEND, INIT_EXPECT, {"do": "restart"}, INIT_SEND, INIT_EXPECT], 'do "restart"'),
        ([INIT_SEND, {"do": "close_input"}, INIT_EXPECT], 'do "close_input"'),
        (
            [INIT_SEND, {"expect": {"jsonrpc": "2.0", "id": 1, "result": "${r}"}}],
            "${r} at /result is any-typed",
        ),
        (
            [INIT_SEND, {"expect": {"jsonrpc": "2.0", "id": 1, "result": {"v": "${_}"}}}],
            "${_} at /result/v is any-typed",
        ),
    ],
    ids=["send-raw", "restart", "close-not-final", "any-binding", "any-wildcard"],
)
def test_a_scenario_that_cannot_be_served_is_a_transcript_error(
    frames: list[dict[str, JSON]], why: str, tmp_path: Path
) -> None:
    path = write_scenario(tmp_path, "refused", frames)
    serve = Serve(path, fixtures=tmp_path)
    assert serve.finish() == 2
    assert "TX-SERVE-02" in serve.stderr and why in serve.stderr, serve.stderr
    assert serve.written_after() == []


@pytest.mark.req("TX-SERVE-02")
def test_a_scenario_with_peer_channels_is_refused() -> None:
    with_peers = next(
        p
        for p in sorted((FIXTURES / "mcp").rglob("*.jsonl"))
        if '"channels"' in p.read_text(encoding="utf-8").split("\n", 1)[0]
    )
    serve = Serve(with_peers)
    assert serve.finish() == 2
    assert "TX-SERVE-02" in serve.stderr and "peer channels" in serve.stderr, serve.stderr


@pytest.mark.req("TX-SERVE-01")
def test_an_unknown_or_broken_scenario_exits_2(tmp_path: Path) -> None:
    serve = Serve("acp/no-such/scenario")
    assert serve.finish() == 2 and "no scenario" in serve.stderr
    path = write_scenario(tmp_path, "broken", [INIT_SEND])
    path.write_text(path.read_text(encoding="utf-8") + "not json\n", encoding="utf-8")
    serve = Serve(path, fixtures=tmp_path)
    assert serve.finish() == 2 and "TX-FORMAT-03" in serve.stderr


@pytest.mark.req("TX-SERVE-02")
def test_references_to_bound_names_need_no_example() -> None:
    # ${sid} after ${sid:uuid} is uuid-typed, and "turn-cancelled-${sid}" is embedded
    assert servable_problems(scenario(CANCEL)) == []


@pytest.mark.req("TX-SERVE-02", "TX-SERVE-04")
def test_an_any_typed_placeholder_with_an_example_is_served_from_it(tmp_path: Path) -> None:
    expect: dict[str, JSON] = {
        "expect": {"jsonrpc": "2.0", "id": 1, "result": {"r": "${r}", "w": "${_}"}},
        "example": {"jsonrpc": "2.0", "id": 1, "result": {"r": {"deep": [1, 2.5]}, "w": None}},
    }
    path = write_scenario(tmp_path, "example", [INIT_SEND, expect])
    serve = Serve(path, fixtures=tmp_path)
    serve.send(CLIENT_INIT)
    line = serve.recv_line()
    assert line == b'{"jsonrpc":"2.0","id":0,"result":{"r":{"deep":[1,2.5]},"w":null}}\n'
    assert serve.finish() == 0, serve.stderr


# -- the ending: tail messages and the idle timeout -------------------------------------------


@pytest.mark.req("TX-SERVE-08")
def test_a_tail_message_fails_without_allow_tail(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, "tail", [INIT_SEND, INIT_EXPECT])
    serve = Serve(path, fixtures=tmp_path)
    serve.send(CLIENT_INIT)
    serve.recv()
    serve.send({"jsonrpc": "2.0", "id": 7, "method": "foo/bar"})
    assert serve.finish() == 1
    assert serve.written_after() == []
    assert "reason: unexpected-message" in serve.stderr and '"foo/bar"' in serve.stderr


@pytest.mark.req("TX-SERVE-08")
def test_with_allow_tail_requests_get_method_not_found_and_notifications_nothing(
    tmp_path: Path,
) -> None:
    path = write_scenario(tmp_path, "tail", [INIT_SEND, INIT_EXPECT])
    serve = Serve(path, "--allow-tail", fixtures=tmp_path)
    serve.send(CLIENT_INIT)
    serve.recv()
    serve.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}})
    serve.send({"jsonrpc": "2.0", "id": 7, "method": "foo/bar"})
    error = {"code": -32601, "message": "Method not found: foo/bar"}
    assert serve.recv() == {"jsonrpc": "2.0", "id": 7, "error": error}
    assert serve.finish() == 0, serve.stderr
    assert serve.written_after() == []


@pytest.mark.req("TX-SERVE-07")
def test_a_silent_client_fails_after_the_idle_timeout(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, "silent", [INIT_SEND, INIT_EXPECT])
    serve = Serve(path, "--idle-timeout", "0.3", fixtures=tmp_path)
    assert serve.finish(close=False) == 1
    assert "acp/serve-test/silent.jsonl:2 send on acp" in serve.stderr
    assert "reason: timeout: no client message within 0.3 s" in serve.stderr


@pytest.mark.req("TX-SERVE-07")
def test_after_a_mismatch_serve_exits_at_the_idle_timeout_if_stdin_stays_open(
    tmp_path: Path,
) -> None:
    path = write_scenario(tmp_path, "mismatch-open", [INIT_SEND, INIT_EXPECT])
    serve = Serve(path, "--idle-timeout", "0.3", fixtures=tmp_path)
    serve.send({"jsonrpc": "2.0", "id": 0, "method": "shutdown"})
    assert serve.finish(close=False) == 1
    assert "pointer: /method" in serve.stderr


@pytest.mark.req("TX-SERVE-08")
def test_after_the_last_frame_an_open_stdin_is_let_go_at_the_idle_timeout(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, "open-end", [INIT_SEND, INIT_EXPECT])
    serve = Serve(path, "--idle-timeout", "0.3", fixtures=tmp_path)
    serve.send(CLIENT_INIT)
    serve.recv()
    assert serve.finish(close=False) == 0, serve.stderr
    assert "note: the client kept its output open 0.3 s after the end" in serve.stderr


@pytest.mark.req("TX-SERVE-02", "TX-SERVE-08")
def test_a_final_close_input_must_be_performed_by_the_client(tmp_path: Path) -> None:
    frames = [INIT_SEND, INIT_EXPECT, {"do": "close_input"}, {"expect_exit": 0}]
    path = write_scenario(tmp_path, "close", frames)
    serve = Serve(path, "--idle-timeout", "0.3", fixtures=tmp_path)
    serve.send(CLIENT_INIT)
    serve.recv()
    assert serve.finish(close=False) == 1
    assert "acp/serve-test/close.jsonl:4 do on acp" in serve.stderr
    assert "did not close its output" in serve.stderr


@pytest.mark.req("TX-SERVE-01")
def test_sigterm_after_the_conversation_still_gives_the_verdict(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, "term", [INIT_SEND, INIT_EXPECT])
    serve = Serve(path, fixtures=tmp_path)
    serve.send(CLIENT_INIT)
    serve.recv()
    serve.proc.send_signal(signal.SIGTERM)
    assert serve.finish(close=False) == 0, serve.stderr
    assert serve.stderr.startswith("PASS  acp/serve-test/term")


@pytest.mark.req("TX-SERVE-01")
def test_sigterm_while_serve_waits_for_the_client_fails_with_a_verdict(tmp_path: Path) -> None:
    second: dict[str, JSON] = {
        "send": {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {}}
    }
    path = write_scenario(tmp_path, "term-wait", [INIT_SEND, INIT_EXPECT, second])
    serve = Serve(path, fixtures=tmp_path)
    serve.send(CLIENT_INIT)
    serve.recv()  # serve now waits for the session/new request
    serve.proc.send_signal(signal.SIGTERM)
    assert serve.finish(close=False) == 1, serve.stderr
    assert serve.stderr.startswith("FAIL  acp/serve-test/term-wait"), serve.stderr
    assert "acp/serve-test/term-wait.jsonl:4 send on acp" in serve.stderr
    assert "reason: unexpected-exit: serve was terminated (SIGTERM) first" in serve.stderr
    assert "Traceback" not in serve.stderr


class _SignalledQueue(queue.Queue[ClientEvent]):
    """Runs the SIGTERM handler from inside a wait, as a signal landing there would."""

    def __init__(self, on_signal: Callable[[], None]) -> None:
        super().__init__()
        self.on_signal = on_signal
        self.raised: list[BaseException] = []

    def get(self, block: bool = True, timeout: float | None = None) -> ClientEvent:
        try:
            self.on_signal()
        except BaseException as exc:  # what a real handler would throw into the wait
            self.raised.append(exc)
        return super().get(block, timeout)


@pytest.mark.req("TX-SERVE-01")
def test_the_sigterm_handler_never_raises_and_ends_the_input_in_order() -> None:
    read_end, write_end = os.pipe()
    lines = ClientInput(read_end)
    os.write(write_end, b'{"a":1}\n')
    first = lines.next(WAIT)  # a line that arrived before the signal is still read
    assert isinstance(first, Message) and first.value == {"a": 1}
    waiting = _SignalledQueue(lambda: lines.on_sigterm(signal.SIGTERM, None))
    lines.events = waiting
    end = lines.next(WAIT)
    assert waiting.raised == [], "a handler that raises can escape from any line of serve"
    assert end is not None and type(end).__name__ == "_Terminated" and lines.closed
    assert lines.next(WAIT) is end
    lines.close()
    os.close(write_end)


@pytest.mark.req("TX-SERVE-01")
def test_the_sigterm_handler_takes_no_lock_the_interrupted_code_may_hold() -> None:
    read_end, write_end = os.pipe()
    lines = ClientInput(read_end)
    with lines.events.mutex:  # as if the signal landed inside a queue call
        lines.on_sigterm(signal.SIGTERM, None)
    end = lines.next(WAIT)
    assert end is not None and type(end).__name__ == "_Terminated"
    lines.close()
    lines.on_sigterm(signal.SIGTERM, None)  # after close: ignored, no error
    os.close(write_end)


# -- deterministic values -------------------------------------------------------------------------


@pytest.mark.req("TX-SERVE-04")
def test_invented_values_follow_their_type() -> None:
    def ws() -> str:
        return "/w"

    assert invented("sid", "uuid", 10, ws) == "00000000-0000-4000-8000-00000000000a"
    assert invented("name", "string", 3, ws) == "name-3"
    assert invented("_", None, 4, ws) == "value-4"
    assert invented("_", "nonempty", 5, ws) == "value-5"
    assert invented("n", "int", 6, ws) == 6
    assert invented("t", "rfc3339", 7, ws) == "2026-01-01T00:00:00Z"
    assert invented("p", "path", 8, ws) == "/w/p"
    assert invented("b", "bool", 9, ws) is False
    assert invented("d", "base64", 1, ws) == ""
    assert invented("h", "sha256", 2, ws) == hashlib.sha256(b"h").hexdigest()


@pytest.mark.req("TX-SERVE-04")
def test_serve_writes_the_deterministic_values_and_keeps_them_bound(tmp_path: Path) -> None:
    result = {
        "sessionId": "${sid:uuid}",
        "workspaceDir": "${WORKSPACE}",
        "n": "${n:int}",
        "when": "${t:rfc3339}",
        "file": "${p:path}",
        "flag": "${b:bool}",
        "blob": "${d:base64}",
        "hash": "${h:sha256}",
        "label": "${s:string}",
        "tag": "approval-${_:uuid}",
        "version": "${_:nonempty}",
        "mixed": "n=${k:int}/${m}",
    }
    update = {"sessionId": "${sid}", "again": "${n}", "marker": "turn-${sid}", "file": "${p}"}
    frames: list[dict[str, JSON]] = [
        INIT_SEND,
        INIT_EXPECT,
        {
            "send": {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session/new",
                "params": {"cwd": "${WORKSPACE}"},
            }
        },
        {"expect": {"jsonrpc": "2.0", "id": 1, "result": result}},
        {"expect": {"jsonrpc": "2.0", "method": "session/update", "params": update}},
    ]
    path = write_scenario(tmp_path, "values", frames)
    serve = Serve(path, fixtures=tmp_path)
    initialize(serve)
    cwd = str(tmp_path / "client-cwd")
    serve.send({"jsonrpc": "2.0", "id": 0, "method": "session/new", "params": {"cwd": cwd}})
    sid = "00000000-0000-4000-8000-000000000001"
    assert serve.recv() == {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {
            "sessionId": sid,
            "workspaceDir": cwd,
            "n": 2,
            "when": "2026-01-01T00:00:00Z",
            "file": cwd + "/p",
            "flag": False,
            "blob": "",
            "hash": hashlib.sha256(b"h").hexdigest(),
            "label": "s-8",
            "tag": "approval-00000000-0000-4000-8000-000000000009",
            "version": "value-10",
            "mixed": "n=11/m-12",
        },
    }
    params = {"sessionId": sid, "again": 2, "marker": "turn-" + sid, "file": cwd + "/p"}
    assert serve.recv() == {"jsonrpc": "2.0", "method": "session/update", "params": params}
    assert serve.finish() == 0, serve.stderr


@pytest.mark.req("TX-SERVE-04")
def test_an_embedded_wildcard_takes_the_example_string_when_it_fits(tmp_path: Path) -> None:
    host = HostNames(tmp_path)
    bindings: dict[str, JSON] = {"sid": "abc"}
    values = Instantiator(host, bindings)
    example = "approval-0f0f0f0f-0000-4000-8000-000000000042"
    assert values.instantiate("approval-${_:uuid}", example) == example
    # an example recorded with another session id does not fit: invent instead
    assert values.instantiate("turn-${sid}-${x}", "turn-zzz-9") == "turn-abc-x-1"
    assert bindings["x"] == "x-1"
    host.cleanup()


@pytest.mark.req("TX-RUN-12", "TX-SERVE-02")
def test_list_servable_names_exactly_the_scenarios_serve_accepts() -> None:
    """`list --servable` and `serve` share one definition, so they cannot drift apart."""
    from zeroclaw_ref.conformance.core.suite import discover

    listed = subprocess.run(
        [sys.executable, "-m", "zeroclaw_ref.conformance", "list", "--servable"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    accepted = {
        sc.id
        for sc in (load(path, FIXTURES) for path in discover(FIXTURES))
        if not servable_problems(sc)
    }
    ids = {token for token in listed if "/" in token}
    assert ids == accepted
    # The permission scenarios bind ${sid:uuid} once and reuse ${sid}: still servable.
    assert "acp/permission/allow-once-runs-the-tool" in ids
