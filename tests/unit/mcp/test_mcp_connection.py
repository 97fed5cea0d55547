"""Cancellation and recovery of one server connection (`mcp/connection.py`, mcp.md §7): recovery
is lazy, shared and bounded; errors that are answers never retry; the model sees the specific
failure text."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import FakeMcpHttp
from tests.helpers.internals import stdio_pid, stdio_transport
from tests.helpers.mcp_server import more_tools_config
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.mcp import (
    McpCancelledError,
    McpOptions,
    McpProtocolError,
    McpRegistry,
    McpRpcError,
    McpSizeLimitError,
    McpToolError,
)
from zeroclaw_ref.mcp.adapters import McpToolAdapter
from zeroclaw_ref.mcp.lifecycle import State
from zeroclaw_ref.tools.base import ToolContext

HTTP_OPTS = McpOptions(init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5)


def _recorded(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _methods(path: Path) -> list[str | None]:
    return [m.get("method") for m in _recorded(path)]


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


def _pid(reg: McpRegistry) -> int:
    return stdio_pid(reg, "peer")


@pytest.fixture
def http_fake() -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp(more_tools=True)
    yield server
    server.close()


def _http(fake: FakeMcpHttp, **fields: Any) -> McpServerConfig:
    return replace(McpServerConfig(name="h", transport="http", url=fake.url), **fields)


# --- cancellation and recovery -----------------------------------------------------------


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[tuple[Path, list[int]]]:
    """A FIFO the extended server reads one byte from before answering `initialize`."""
    path = tmp_path / "gate"
    fds: list[int] = []
    yield path, fds
    for fd in fds:
        os.close(fd)


def _arm(path: Path, fds: list[int]) -> None:
    os.mkfifo(path)
    fds.append(os.open(path, os.O_RDWR))  # read-write: never blocks, keeps the pipe alive


def _kill_and_wait_broken(reg: McpRegistry) -> None:
    os.kill(_pid(reg), 9)
    wait_for(lambda: reg.connection("peer").state is State.BROKEN, "death noticed")


@pytest.mark.req("MCP-CANCEL-07", "MCP-CANCEL-05")
def test_a_cancel_during_recovery_lets_it_finish_then_fails_before_writing(
    connect: Connect, tmp_path: Path, gate: tuple[Path, list[int]]
) -> None:
    record = tmp_path / "rec.jsonl"
    path, fds = gate
    reg = connect(more_tools_config("--record", str(record), "--init-gate", str(path)))
    _arm(path, fds)
    _kill_and_wait_broken(reg)
    token = CancelToken()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            reg.call_tool("peer__echo", {"message": "never"}, cancel=token)
        except BaseException as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    wait_for(lambda: _methods(record).count("initialize") == 2, "re-handshake started")
    token.fire()  # while the recovery waits for its initialize response
    os.write(fds[0], b"x")
    caller.join(10)
    assert len(errors) == 1 and isinstance(errors[0], McpCancelledError)
    assert str(errors[0]) == "MCP server `peer` call cancelled before writing tool call `echo`"
    conn = reg.connection("peer")
    assert conn.state is State.READY  # the recovery completed
    wait_for(lambda: _methods(record).count("notifications/initialized") == 2, "handshake end")
    assert not [m for m in _recorded(record) if m.get("params", {}).get("name") == "echo"]
    pid = _pid(reg)
    assert _text(reg.call_tool("peer__echo", {"message": "next"})) == "Echo: next"
    assert _pid(reg) == pid and _methods(record).count("initialize") == 2


@pytest.mark.req("MCP-REC-06")
def test_recovery_is_lazy_in_the_caller_thread_and_shared_by_concurrent_callers(
    connect: Connect,
    tmp_path: Path,
    gate: tuple[Path, list[int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = tmp_path / "rec.jsonl"
    path, fds = gate
    reg = connect(more_tools_config("--record", str(record), "--init-gate", str(path)))
    conn = reg.connection("peer")
    transport = stdio_transport(reg)
    opened_on: list[str] = []
    real_open = transport.open

    def spy(generation: int, deadline: float) -> None:
        opened_on.append(threading.current_thread().name)
        real_open(generation, deadline)

    monkeypatch.setattr(transport, "open", spy)
    _arm(path, fds)
    _kill_and_wait_broken(reg)
    # nothing respawns in the background: the connection waits for its next caller
    assert opened_on == [] and _methods(record).count("initialize") == 1
    assert conn.state is State.BROKEN
    results: dict[str, str] = {}

    def call(i: int) -> None:
        results[threading.current_thread().name] = _text(
            reg.call_tool("peer__echo", {"message": str(i)})
        )

    callers = [threading.Thread(target=call, args=(i,), name=f"caller-{i}") for i in range(4)]
    callers[0].start()
    wait_for(lambda: _methods(record).count("initialize") == 2, "recovery started")
    for t in callers[1:]:
        t.start()
    wait_for(lambda: all(t.is_alive() for t in callers), "callers waiting")
    os.write(fds[0], b"x")
    for t in callers:
        t.join(10)
    assert sorted(results) == [f"caller-{i}" for i in range(4)]
    assert opened_on == ["caller-0"]  # one recovery, run by the first caller itself
    assert _methods(record).count("initialize") == 2


@pytest.mark.req("MCP-REC-05")
def test_errors_that_are_answers_never_retry_or_reset_stdio(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(more_tools_config("--record", str(record)))
    pid = _pid(reg)
    with pytest.raises(McpRpcError):
        reg.call_tool("peer__rpcerror", {})
    with pytest.raises(McpToolError):
        reg.call_tool("peer__fail", {})
    assert _pid(reg) == pid and reg.connection("peer").state is State.READY
    names = [m["params"]["name"] for m in _recorded(record) if m.get("method") == "tools/call"]
    assert names == ["rpcerror", "fail"]  # each sent exactly once
    assert _methods(record).count("initialize") == 1


@pytest.mark.req("MCP-REC-05")
def test_errors_that_are_answers_never_retry_or_reset_http(
    connect: Connect, http_fake: FakeMcpHttp
) -> None:
    reg = connect(_http(http_fake, max_response_bytes=5000), options=HTTP_OPTS)
    with pytest.raises(McpProtocolError, match="HTTP 500"):
        reg.call_tool("h__status500", {})
    with pytest.raises(McpSizeLimitError):
        reg.call_tool("h__big", {"bytes": 10_000})
    assert reg.connection("h").state is State.READY
    posts = [p.body for p in http_fake.seen("POST")]
    assert [p.get("method") for p in posts].count("initialize") == 1
    calls = [p["params"]["name"] for p in posts if p.get("method") == "tools/call"]
    assert calls == ["status500", "big"]
    assert not http_fake.seen("DELETE")


@pytest.mark.req("MCP-RPC-09")
def test_the_model_sees_the_specific_failure_text(connect: Connect) -> None:
    reg = connect(
        more_tools_config(), options=McpOptions(default_tool_timeout_s=0.5, close_grace_s=1)
    )
    ctx = ToolContext(cancel=CancelToken())
    by_name = {t.prefixed_name: McpToolAdapter(t, reg, None) for t in reg.tools()}
    expected = {
        "peer__rpcerror": "MCP tool `rpcerror` error -32602: bad arguments: ?x",
        "peer__fail": "MCP `fail` (server `peer`) returned isError: it failed",
        "peer__slow": (
            "MCP server `peer` timed out after 0.5s during tool call `slow`; outcome unknown and "
            "request was not replayed"
        ),
    }
    for name, text in expected.items():
        result = by_name[name].execute({}, ctx)
        assert not result.success and result.error == text
