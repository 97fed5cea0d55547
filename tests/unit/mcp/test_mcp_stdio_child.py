"""The stdio child process: how it is spawned, what reaches its stdin (one compact line a
message), the one reader of its stdout, and its exit and broken pipes (mcp.md §3, §7.3),
against the scripted server of `tests/helpers/mcp_server.py` with `--more-tools`.

The handshake, request/response flow and lifecycle over stdio live in test_mcp_stdio.py."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import pytest

from tests.conftest import wait_for
from tests.helpers.internals import stdio_pid as _pid
from tests.helpers.internals import stdio_proc
from tests.helpers.mcp_server import more_tools_config
from tests.unit.mcp.conftest import FAST, Connect
from zeroclaw_ref.core.cancel import Slot
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.mcp import ClientHandlers, McpOptions, McpTimeoutError
from zeroclaw_ref.mcp import connection as connection_module
from zeroclaw_ref.mcp.lifecycle import State

SERVER = Path(__file__).resolve().parents[2] / "helpers" / "mcp_server.py"


def _raw_lines(path: Path) -> list[bytes]:
    if not path.exists():
        return []
    return [line for line in path.read_bytes().split(b"\n") if line]


def _recorded(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _raw_lines(path)]


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


@pytest.fixture
def popen_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, dict[str, Any]]]]:
    """Record every `subprocess.Popen` made while the test runs (the real one still runs)."""
    calls: list[tuple[Any, dict[str, Any]]] = []

    class Spy(subprocess.Popen[bytes]):  # defined before the patch: the real Popen
        def __init__(self, args: Any, **kwargs: Any) -> None:
            calls.append((args, dict(kwargs)))
            super().__init__(args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Spy)
    yield calls


# --- spawning ----------------------------------------------------------------------------


@pytest.mark.req("MCP-STDIO-01")
def test_the_child_is_spawned_without_a_shell_on_binary_pipes(
    connect: Connect, popen_calls: list[tuple[Any, dict[str, Any]]]
) -> None:
    tricky = ("a b", "$HOME;echo hi", "*", "`id`")
    probe = [part for arg in tricky for part in ("--probe-arg", arg)]
    reg = connect(more_tools_config(*probe))
    [(argv, kwargs)] = popen_calls
    executable = shutil.which(sys.executable) or sys.executable
    assert argv == [
        executable,
        str(SERVER),
        "--more-tools",
        *probe,
    ]  # a list: never a command string
    assert not kwargs.get("shell", False)
    assert kwargs["stdin"] == kwargs["stdout"] == kwargs["stderr"] == subprocess.PIPE
    for text_mode in ("text", "universal_newlines", "encoding", "errors"):
        assert not kwargs.get(text_mode)
    proc = stdio_proc(reg)
    assert isinstance(proc.stdin, io.BufferedWriter) and isinstance(proc.stdout, io.BufferedReader)
    # the arguments reach the child verbatim: nothing expanded, split or globbed
    assert json.loads(_text(reg.call_tool("peer__argv", {}))) == ["--more-tools", *probe]


@pytest.mark.req("MCP-STDIO-03")
def test_the_child_inherits_the_working_directory(
    connect: Connect,
    popen_calls: list[tuple[Any, dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    here = tmp_path / "cwd here"
    here.mkdir()
    monkeypatch.chdir(here)
    reg = connect(more_tools_config())
    assert "cwd" not in popen_calls[0][1] or popen_calls[0][1]["cwd"] is None
    assert Path(_text(reg.call_tool("peer__cwd", {}))).resolve() == here.resolve()


# --- writing -----------------------------------------------------------------------------


class _CountingPipe:
    """Wraps the child's stdin to record each write and flush, in order."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.events: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()

    def write(self, data: bytes) -> int:
        with self.lock:
            self.events.append(("write", bytes(data)))
        return int(self.inner.write(data))

    def flush(self) -> None:
        with self.lock:
            self.events.append(("flush", b""))
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.req("MCP-STDIO-06")
def test_each_message_is_one_compact_utf8_line_written_once_and_flushed(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(more_tools_config("--record", str(record)))
    proc = stdio_proc(reg)
    pipe = _CountingPipe(proc.stdin)
    # the stand-in has the write/flush/close the transport calls, and delegates the rest
    proc.stdin = cast(IO[bytes], pipe)
    message = 'é☃ "quoted"\nsecond line\ttab'
    assert _text(reg.call_tool("peer__echo", {"message": message})) == f"Echo: {message}"

    def call(i: int) -> None:
        reg.call_tool("peer__echo", {"message": str(i) * 50_000})

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    # one write then one flush per message, each a single line ending in \n
    kinds = [kind for kind, _ in pipe.events]
    assert kinds == ["write", "flush"] * 9
    for _, data in pipe.events[::2]:
        assert data.endswith(b"\n") and data.count(b"\n") == 1
        value = json.loads(data)
        assert data == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    first = pipe.events[0][1]
    assert "é☃".encode() in first and b"\\n" in first  # raw UTF-8; the newline escaped
    # the server saw every line whole: nothing interleaved
    calls = [m for m in _recorded(record) if m.get("method") == "tools/call"]
    assert sorted(len(c["params"]["arguments"]["message"]) for c in calls)[1:] == [50_000] * 8


@pytest.mark.req("MCP-STDIO-08")
def test_nothing_but_json_rpc_messages_reaches_the_child_stdin(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    hooks = ClientHandlers(elicitation=lambda params: {"action": "decline"})
    opts = McpOptions(default_tool_timeout_s=0.5, close_grace_s=1)
    reg = connect(more_tools_config("--record", str(record)), options=opts, handlers=hooks)
    reg.call_tool("peer__echo", {"message": "x"})
    reg.call_tool("peer__elicit", {})  # a response to a server request
    reg.call_tool("peer__ping_client", {})
    with pytest.raises(McpTimeoutError):
        reg.call_tool("peer__slow", {})  # a cancellation notification
    reg.list_resources()
    reg.close()
    lines = _raw_lines(record)
    assert len(lines) >= 9
    for line in lines:
        message = json.loads(line)
        assert isinstance(message, dict) and message["jsonrpc"] == "2.0"
        is_request_or_note = isinstance(message.get("method"), str)
        is_response = "id" in message and ("result" in message or "error" in message)
        assert is_request_or_note or is_response, message
    kinds = {m.get("method") for m in map(json.loads, lines)}
    assert {"initialize", "notifications/initialized", "notifications/cancelled"} <= kinds


# --- the reader thread -------------------------------------------------------------------


@pytest.mark.req("MCP-STDIO-09")
def test_one_reader_per_child_routes_responses_requests_and_notifications(
    connect: Connect,
) -> None:
    handled_on: list[str] = []
    notes: list[str] = []

    def elicit(params: JSONObject) -> JSONObject:
        handled_on.append(threading.current_thread().name)
        return {"action": "decline"}

    hooks = ClientHandlers(
        elicitation=elicit,
        on_notification=lambda server, method, params: notes.append(method),
    )
    reg = connect(more_tools_config(), handlers=hooks)
    assert len(_threads("mcp-peer-stdout")) == 1
    assert json.loads(_text(reg.call_tool("peer__elicit", {})))["result"] == {"action": "decline"}
    assert handled_on and handled_on[0] != "mcp-peer-stdout"  # the handler pool, not the reader
    assert handled_on[0].startswith("mcp-peer")
    reg.call_tool("peer__notify_lists", {})
    assert {"notifications/resources/list_changed", "notifications/prompts/list_changed"} <= set(
        notes
    )
    # a new child gets its own reader; the old one ends with its child
    first = _pid(reg)
    with pytest.raises(Exception, match="outcome unknown"):
        reg.call_tool("peer__crash", {})
    assert _text(reg.call_tool("peer__echo", {"message": "again"})) == "Echo: again"
    assert _pid(reg) != first
    wait_for(lambda: len(_threads("mcp-peer-stdout")) == 1, "one stdout reader")


@pytest.mark.req("MCP-STDIO-10")
def test_messages_from_an_ended_generation_are_discarded(connect: Connect) -> None:
    reg = connect(more_tools_config())
    conn = reg.connection("peer")
    with pytest.raises(Exception, match="outcome unknown"):
        reg.call_tool("peer__crash", {})
    reg.call_tool("peer__echo", {"message": "respawned"})
    current = conn._generation
    old = current - 1
    results: list[object] = []
    caller = threading.Thread(
        target=lambda: results.append(reg.call_tool("peer__slow", {})), daemon=True
    )
    caller.start()
    wait_for(lambda: conn.pending_count() == 1, "pending slow call")
    [pending_id] = list(conn._pending)
    stale: JSONObject = {
        "jsonrpc": "2.0",
        "id": pending_id,
        "result": {"content": [], "from": "old"},
    }
    conn.route(stale, old)
    conn.transport_failed(old, "old child died")
    assert conn.pending_count() == 1 and conn.state is State.READY  # both ignored
    fresh: JSONObject = {
        "jsonrpc": "2.0",
        "id": pending_id,
        "result": {"content": [], "from": "new"},
    }
    conn.route(fresh, current)
    caller.join(5)
    assert results == [{"content": [], "from": "new"}]


@pytest.mark.req("MCP-STDIO-11")
def test_each_request_waits_on_its_own_slot_without_polling(
    connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[tuple[int, float | None]] = []
    offers: list[tuple[int, str]] = []

    class Recording(Slot[Any]):
        def get(self, timeout: float | None) -> Any:
            waits.append((id(self), timeout))
            return super().get(timeout)

        def offer(self, value: Any) -> bool:
            offers.append((id(self), threading.current_thread().name))
            return super().offer(value)

    reg = connect(more_tools_config())
    monkeypatch.setattr(connection_module, "Slot", Recording)
    results: list[str] = []

    def call(i: int) -> None:
        results.append(_text(reg.call_tool("peer__sleep", {"seconds": 0.3})))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == ["slept"] * 3
    slots = [slot for slot, _ in waits]
    assert len(set(slots)) == 3 and len(slots) == 3  # one slot each, waited on exactly once
    assert all(timeout is not None and timeout > 5 for _, timeout in waits)  # the whole deadline
    assert sorted(slot for slot, _ in offers) == sorted(slots)
    assert {name for _, name in offers} == {"mcp-peer-stdout"}  # the reader fills each slot


# --- child exit --------------------------------------------------------------------------


@pytest.mark.req("MCP-STDIO-18")
@pytest.mark.parametrize("size", [10, 4_000_000])
def test_a_reply_written_just_before_exit_is_delivered(connect: Connect, size: int) -> None:
    reg = connect(more_tools_config())
    for _ in range(4):
        result = reg.call_tool("peer__reply_and_exit", {"bytes": size})
        assert _text(result) == "x" * size
        wait_for(lambda: reg.connection("peer").state is State.BROKEN, "exit noticed")


@pytest.mark.req("MCP-STDIO-24")
def test_closing_does_not_wait_for_a_reader_held_open_by_a_grandchild(connect: Connect) -> None:
    reg = connect(more_tools_config(), options=McpOptions(close_grace_s=1))
    grandchild = int(_text(reg.call_tool("peer__hold_grandchild", {})))
    try:
        [reader] = _threads("mcp-peer-stdout")
        closer = threading.Thread(target=reg.close)
        closer.start()
        closer.join(10)
        assert not closer.is_alive()  # close returned while the grandchild holds stdout
        assert reader.is_alive()  # the reader was abandoned, not joined
    finally:
        os.kill(grandchild, signal.SIGKILL)
    wait_for(lambda: not reader.is_alive(), "abandoned reader ends at EOF")


@pytest.mark.req("MCP-STDIO-27", "MCP-REC-03")
def test_a_broken_pipe_on_write_respawns_and_sends_once(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(
        more_tools_config("--record", str(record)),
        options=McpOptions(init_timeout_s=10, default_tool_timeout_s=10, close_grace_s=0.2),
    )
    first = _pid(reg)
    assert _text(reg.call_tool("peer__close_stdin", {})) == "stdin closing"
    assert reg.connection("peer").state is State.READY  # the child is alive, stdin closed
    assert _text(reg.call_tool("peer__echo", {"message": "after"})) == "Echo: after"
    assert _pid(reg) != first
    sent = _recorded(record)
    assert [m.get("method") for m in sent].count("initialize") == 2
    echoes = [m for m in sent if m.get("params", {}).get("name") == "echo"]
    assert len(echoes) == 1  # written once, to the new child only


@pytest.mark.req("MCP-SIZE-11")
def test_stdio_ignores_max_response_bytes(connect: Connect) -> None:
    reg = connect(more_tools_config(max_response_bytes=1000), options=FAST)
    result = reg.call_tool("peer__big", {"bytes": 200_000})
    assert len(_text(result)) == 200_000
    assert reg.connection("peer").state is State.READY
