"""The stdio transport and the connection lifecycle against the scripted server (mcp.md §1-§3,
§7)."""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import threading
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.helpers.mcp_server import BASE_TOOLS
from tests.unit.mcp.conftest import FAST, LEGACY, SERVER, Connect, stdio_config
from zeroclaw_ref import __version__
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpCancelledError,
    McpClosedError,
    McpOptions,
    McpOutcomeUnknownError,
    McpRegistry,
    McpRpcError,
    McpTimeoutError,
    McpToolError,
    McpUnavailableError,
    accept_with_defaults,
)
from zeroclaw_ref.mcp.lifecycle import State


def _recorded(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _pid(reg: McpRegistry, server: str = "peer") -> int:
    pid = reg.connection(server)._transport.pid  # type: ignore[attr-defined]
    assert isinstance(pid, int)
    return pid


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.req(
    "MCP-INIT-01", "MCP-INIT-02", "MCP-INIT-03", "MCP-INIT-10", "MCP-RPC-01", "MCP-RPC-02"
)
def test_handshake_sends_exact_initialize_then_initialized(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(stdio_config("--record", str(record)), options=LEGACY)
    reg.call_tool("peer__echo", {"message": "x"})
    sent = _recorded(record)
    assert sent[0] == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "zeroclaw_ref", "version": __version__},
        },
    }
    assert sent[1] == {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}}
    assert sent[2] == {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    assert sent[3]["id"] == 3 and sent[3]["params"] == {
        "name": "echo",
        "arguments": {"message": "x"},
    }
    conn = reg.connection("peer")
    assert conn.state is State.READY and conn.protocol_version == "2025-11-25"
    assert conn.instructions == "be nice"


@pytest.mark.req("MCP-VER-01", "MCP-VER-03")
def test_an_older_counter_offer_is_accepted(connect: Connect) -> None:
    reg = connect(stdio_config("--version", "2024-11-05"))
    assert reg.connection("peer").protocol_version == "2024-11-05"


@pytest.mark.req("MCP-VER-01", "MCP-VER-02", "MCP-LIFE-04", "MCP-ERR-02", "MCP-ERR-07")
@pytest.mark.parametrize(
    ("version", "rendered"),
    [("2024-10-07", '"2024-10-07"'), ("missing", "null"), ("7", "7")],
)
def test_an_unsupported_version_fails_the_connect(
    connect: Connect, caplog: pytest.LogCaptureFixture, tmp_path: Path, version: str, rendered: str
) -> None:
    record = tmp_path / "rec.jsonl"
    with caplog.at_level(logging.WARNING):
        reg = connect(stdio_config("--version", version, "--record", str(record)))
    assert reg.tools() == [] and reg.servers() == ()
    assert (
        f"Failed to connect to MCP server `peer`: MCP server `peer` answered initialize with "
        f"unsupported protocolVersion {rendered}; supported: 2025-11-25, 2025-06-18, 2025-03-26, "
        "2024-11-05"
    ) in caplog.text
    # (the era probe first, answered -32601 as by any legacy server; no `initialized` after)
    assert [m.get("method") for m in _recorded(record)] == ["server/discover", "initialize"]


@pytest.mark.req("MCP-INIT-05", "MCP-INIT-06", "MCP-INIT-07", "MCP-INIT-11", "MCP-ERR-04")
@pytest.mark.parametrize(
    ("mode", "text"),
    [
        ("reject", "MCP server `peer` rejected initialize: error -32602: unsupported client"),
        ("invalid", "MCP server `peer` returned an invalid initialize result"),
        ("silent", "MCP server `peer` timed out after 0.5s waiting for initialize response"),
    ],
)
def test_initialize_failures(
    connect: Connect, caplog: pytest.LogCaptureFixture, tmp_path: Path, mode: str, text: str
) -> None:
    record = tmp_path / "rec.jsonl"
    opts = McpOptions(init_timeout_s=0.5, close_grace_s=0.5)
    with caplog.at_level(logging.WARNING):
        reg = connect(stdio_config("--init", mode, "--record", str(record)), options=opts)
    assert reg.servers() == ()
    assert f"Failed to connect to MCP server `peer`: {text}" in caplog.text
    sent = [m.get("method") for m in _recorded(record)]
    # the probe, then no cancellation; a refused initialize after the probe is tried once more
    # on a new child (MCP-MOD-04), which refuses it too
    expected = ["server/discover", "initialize", *(["initialize"] if mode == "reject" else [])]
    assert sent == expected


@pytest.mark.req("MCP-STDIO-04", "MCP-ERR-03", "MCP-API-02", "POL-ASSEMBLE-13")
def test_a_failed_spawn_is_logged_and_the_other_servers_connect(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    bad = McpServerConfig(name="bad", command="/nonexistent/zeroclaw-mcp")
    with caplog.at_level(logging.WARNING):
        reg = connect(bad, stdio_config(name="good"))
    assert reg.servers() == ("good",)
    names = [t.prefixed_name for t in reg.tools()]
    assert names and all(n.startswith("good__") for n in names)
    assert (
        "Failed to connect to MCP server `bad`: failed to create transport for MCP server `bad`: "
        "failed to spawn MCP server `bad`: [Errno 2]"
    ) in caplog.text


@pytest.mark.req("MCP-LIFE-03", "MCP-NAME-08")
def test_registry_order_is_grant_order(connect: Connect) -> None:
    reg = connect(stdio_config(name="b"), stdio_config(name="a"))
    assert reg.servers() == ("b", "a")
    names = [t.prefixed_name for t in reg.tools()]
    assert names[0] == "b__echo" and names.index("a__echo") > names.index("b__structured")


@pytest.mark.req("MCP-STDIO-02", "MCP-STDIO-05")
def test_child_environment_is_merged(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZC_PARENT_VAR", "parent")
    reg = connect(stdio_config(env={"ZC_CHILD_VAR": "child"}))
    for name, value in (("ZC_PARENT_VAR", "parent"), ("ZC_CHILD_VAR", "child")):
        result = reg.call_tool("peer__env", {"name": name})
        assert result["content"] == [{"type": "text", "text": value}]


@pytest.mark.req("MCP-STDIO-07")
def test_a_byte_order_mark_on_the_first_line_is_stripped(connect: Connect) -> None:
    assert connect(stdio_config("--bom")).servers() == ("peer",)


@pytest.mark.req("MCP-RESULT-01", "MCP-RPC-08", "MCP-RESULT-03", "MCP-ERR-57")
def test_tool_errors_carry_their_texts(connect: Connect) -> None:
    reg = connect(stdio_config())
    with pytest.raises(McpToolError) as err:
        reg.call_tool("peer__fail", {"message": "no https://h/p?secret=1 here"})
    assert str(err.value) == "MCP `fail` (server `peer`) returned isError: no https://h/p here"
    assert err.value.result["isError"] is True
    with pytest.raises(
        McpToolError, match=r"returned isError: \(no error detail returned by server\)$"
    ):
        reg.call_tool("peer__fail", {"message": ""})
    with pytest.raises(McpRpcError) as rpc:
        reg.call_tool("peer__rpcerror", {})
    assert str(rpc.value) == "MCP tool `rpcerror` error -32602: bad arguments: ?x"
    assert reg.connection("peer").state is State.READY


@pytest.mark.req(
    "MCP-STDIO-19", "MCP-STDIO-21", "MCP-STDIO-22", "MCP-STDIO-25", "MCP-STDIO-26", "MCP-REC-01",
    "MCP-REC-02", "MCP-ERR-27",
)  # fmt: skip
def test_a_crash_fails_the_call_at_once_and_the_next_call_respawns(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(stdio_config("--record", str(record)))
    first = _pid(reg)
    with pytest.raises(McpOutcomeUnknownError) as err:
        reg.call_tool("peer__crash", {"code": 3, "stderr": "peer: fatal: sk-abc123 gone"})
    assert str(err.value) == (
        "MCP server `peer` failed during tool call `crash`; outcome unknown and request was not "
        "replayed: process exited (exit code 3); stderr tail: peer: fatal: [REDACTED] gone"
    )
    assert "sk-abc123" in err.value.stderr_tail
    assert reg.connection("peer").state is State.BROKEN
    result = reg.call_tool("peer__echo", {"message": "hello"})
    assert result["content"] == [{"type": "text", "text": "Echo: hello"}]
    assert _pid(reg) != first and _gone(first)
    methods = [m.get("method") for m in _recorded(record)]
    assert methods.count("initialize") == 2 and methods[-1] == "tools/call"
    calls = [m for m in _recorded(record) if m.get("method") == "tools/call"]
    assert [c["params"]["name"] for c in calls] == ["crash", "echo"]  # type: ignore[index]
    ids = [m["id"] for m in _recorded(record) if "id" in m]
    assert ids == sorted(set(ids))  # the counter never restarts


@pytest.mark.req("MCP-STDIO-17", "MCP-STDIO-20")
def test_exit_is_seen_while_a_grandchild_holds_stdout(connect: Connect) -> None:
    reg = connect(stdio_config())
    with pytest.raises(McpOutcomeUnknownError, match=r"process exited \(exit code 5\)"):
        reg.call_tool("peer__grandchild", {"code": 5})


@pytest.mark.req("MCP-STDIO-12", "MCP-STDIO-13", "MCP-STDIO-14")
def test_a_stderr_flood_does_not_block_the_server(connect: Connect) -> None:
    reg = connect(stdio_config(), options=McpOptions(stderr_tail_bytes=1000))
    result = reg.call_tool("peer__stderr_spam", {"bytes": 2_000_000})
    assert result["content"] == [{"type": "text", "text": "spammed"}]


@pytest.mark.req("MCP-STDIO-15", "MCP-STDIO-16", "MCP-ERR-28")
def test_an_oversized_line_is_fatal_and_explained(connect: Connect) -> None:
    reg = connect(stdio_config(), options=McpOptions(stdio_max_message_bytes=5000))
    child = _pid(reg)
    with pytest.raises(McpOutcomeUnknownError) as err:
        reg.call_tool("peer__oversized", {"bytes": 10_000})
    assert str(err.value).endswith("request was not replayed: message exceeded the 5000-byte limit")
    assert reg.connection("peer").state is State.BROKEN
    # [MCP-STDIO-16] the child that wrote the line is closed and reaped, not left running
    # beside the one the next call starts (the fake exits at end of input).
    wait_for(lambda: _gone(child), "the oversized writer to be reaped")
    assert reg.call_tool("peer__big", {"bytes": 4000})["content"]


@pytest.mark.req("MCP-PEER-06")
def test_a_two_megabyte_single_line_result_is_delivered(connect: Connect) -> None:
    reg = connect(stdio_config())
    result = reg.call_tool("peer__big", {"bytes": 2_000_000})
    assert len(result["content"][0]["text"]) == 2_000_000  # type: ignore[index]


@pytest.mark.req("MCP-TIME-06", "MCP-CANCEL-01", "MCP-CANCEL-02", "MCP-CANCEL-04", "MCP-RPC-04")
def test_a_timeout_sends_cancelled_and_keeps_the_connection(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    opts = McpOptions(default_tool_timeout_s=0.5)
    reg = connect(stdio_config("--record", str(record)), options=opts)
    with pytest.raises(McpTimeoutError) as err:
        reg.call_tool("peer__slow", {})
    assert str(err.value) == (
        "MCP server `peer` timed out after 0.5s during tool call `slow`; outcome unknown and "
        "request was not replayed"
    )
    assert reg.connection("peer").state is State.READY
    assert reg.call_tool("peer__echo", {"message": "ok"})["content"]
    slow_id = next(m["id"] for m in _recorded(record) if m.get("params", {}).get("name") == "slow")  # type: ignore[union-attr]
    assert {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": slow_id, "reason": "timed out after 0.5s"},
    } in _recorded(record)


@pytest.mark.req("MCP-CANCEL-05", "MCP-CANCEL-06", "MCP-ERR-25", "MCP-ERR-26")
def test_caller_cancellation_before_and_during(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(stdio_config("--record", str(record)))
    fired = CancelToken()
    fired.fire()
    with pytest.raises(McpCancelledError) as before:
        reg.call_tool("peer__echo", {}, cancel=fired)
    assert str(before.value) == "MCP server `peer` call cancelled before writing tool call `echo`"
    token = CancelToken()
    threading.Timer(0.2, token.fire).start()
    with pytest.raises(McpCancelledError) as during:
        reg.call_tool("peer__slow", {}, cancel=token)
    assert str(during.value) == (
        "MCP server `peer` call cancelled during tool call `slow`; outcome unknown and request "
        "was not replayed"
    )
    wait_for(
        lambda: any(m.get("method") == "notifications/cancelled" for m in _recorded(record)),
        "cancel",
    )
    sent = _recorded(record)
    assert not any(m.get("params", {}).get("name") == "echo" for m in sent)  # type: ignore[union-attr]
    note = next(m for m in sent if m.get("method") == "notifications/cancelled")
    assert note["params"]["reason"] == "cancelled by client"  # type: ignore[index]
    assert reg.connection("peer").state is State.READY


@pytest.mark.req("MCP-S2C-01", "MCP-S2C-02", "MCP-S2C-06", "MCP-RPC-03")
def test_server_ping_is_answered_with_id_zero(connect: Connect) -> None:
    reg = connect(stdio_config())
    text = reg.call_tool("peer__ping_client", {})["content"][0]["text"]  # type: ignore[index]
    assert json.loads(text) == {"jsonrpc": "2.0", "id": 0, "result": {}}


@pytest.mark.req("MCP-RPC-05")
def test_a_server_request_reusing_a_pending_id_is_not_taken_as_the_reply(connect: Connect) -> None:
    reg = connect(stdio_config())
    result = reg.call_tool("peer__collide", {})
    answer = json.loads(result["content"][0]["text"])  # type: ignore[index]
    assert answer["result"] == {}


@pytest.mark.req("MCP-S2C-04", "MCP-S2C-09", "MCP-INIT-04")
def test_elicitation_declined_without_handler_and_accepted_with_one(
    connect: Connect, tmp_path: Path
) -> None:
    reg = connect(stdio_config())
    text = reg.call_tool("peer__elicit", {})["content"][0]["text"]  # type: ignore[index]
    assert json.loads(text)["result"] == {"action": "decline"}
    record = tmp_path / "rec.jsonl"
    hooks = ClientHandlers(elicitation=accept_with_defaults)
    reg2 = connect(stdio_config("--record", str(record), name="p2"), handlers=hooks)
    text = reg2.call_tool("p2__elicit", {})["content"][0]["text"]  # type: ignore[index]
    assert json.loads(text)["result"] == {"action": "accept", "content": {"name": "Ada"}}
    init = next(m for m in _recorded(record) if m.get("method") == "initialize")
    assert init["params"]["capabilities"] == {"elicitation": {}}
    roots = reg.call_tool("peer__roots", {})["content"][0]["text"]  # type: ignore[index]
    assert json.loads(roots)["error"] == {"code": -32601, "message": "Method not found"}


@pytest.mark.req("MCP-NOTE-02", "MCP-NOTE-03", "MCP-RPC-06", "MCP-RPC-07")
def test_notifications_reach_the_log_and_the_hook(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[str, str, object]] = []
    hooks = ClientHandlers(on_notification=lambda s, m, p: seen.append((s, m, p)))
    reg = connect(stdio_config(), handlers=hooks)
    with caplog.at_level(logging.DEBUG):
        reg.call_tool("peer__notify", {})
    record = next(
        r
        for r in caplog.records
        if r.name == "zeroclaw_ref.mcp.server.peer" and "careful" in r.getMessage()
    )
    assert record.levelno == logging.WARNING
    assert record.getMessage() == '{"level":"warning","data":"careful"}'
    methods = [m for _, m, _ in seen]
    assert "notifications/progress" in methods and "notifications/custom" in methods


@pytest.mark.req("MCP-DISC-15", "MCP-DISC-17", "MCP-DISC-19", "MCP-ERR-51")
def test_list_changed_marks_stale_and_refresh_replaces_tools(connect: Connect) -> None:
    reg = connect(stdio_config())
    assert "peer__add" in [t.prefixed_name for t in reg.tools()]
    reg.call_tool("peer__change_tools", {})
    wait_for(lambda: reg.connection("peer").tools_stale, "list_changed")
    assert reg.refresh_if_stale() is True
    names = [t.prefixed_name for t in reg.tools()]
    assert "peer__added" in names and "peer__add" not in names
    with pytest.raises(Exception, match=r"^unknown MCP tool `peer__add`$"):
        reg.call_tool("peer__add", {})
    assert reg.refresh_if_stale() is False


@pytest.mark.req("MCP-DISC-15", "MCP-PEER-01")
def test_tools_announced_after_initialisation_arrive_with_one_refresh(connect: Connect) -> None:
    reg = connect(stdio_config("--list-changed-after-init"))
    wait_for(
        lambda: (
            reg.connection("peer").tools_stale
            or "peer__late_tool" in [t.prefixed_name for t in reg.tools()]
        ),
        "late tool",
    )
    reg.refresh_if_stale()
    assert "peer__late_tool" in [t.prefixed_name for t in reg.tools()]


@pytest.mark.req("MCP-DISC-01")
def test_a_server_without_tools_capability_has_no_tools(
    connect: Connect, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = tmp_path / "rec.jsonl"
    with caplog.at_level(logging.INFO):
        reg = connect(stdio_config("--caps", "{}", "--record", str(record)))
    assert reg.servers() == ("peer",) and reg.tools() == []
    assert "tools/list" not in [m.get("method") for m in _recorded(record)]
    with pytest.raises(Exception, match=r"^MCP server `peer` does not support resources$"):
        reg.list_resources("peer")


@pytest.mark.req("MCP-DISC-10", "MCP-PEER-06")
def test_every_page_of_tools_is_collected(connect: Connect) -> None:
    reg = connect(stdio_config("--page-size", "10", "--fillers", "30"))
    assert len(reg.tools()) == len(BASE_TOOLS) + 30


@pytest.mark.req("MCP-DISC-09", "MCP-ERR-10")
def test_a_broken_listing_fails_the_connect(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        reg = connect(stdio_config("--tools-list", "bad"))
    assert reg.servers() == ()
    assert (
        "Failed to connect to MCP server `peer`: failed to parse tools/list from `peer`"
        in caplog.text
    )


@pytest.mark.req("MCP-LIFE-08", "MCP-LIFE-09", "MCP-STDIO-23")
def test_close_is_idempotent_and_reaps_the_child(connect: Connect) -> None:
    reg = connect(stdio_config())
    pid = _pid(reg)
    reg.close()
    reg.close()
    assert _gone(pid)
    with pytest.raises(McpClosedError) as err:
        reg.call_tool("peer__echo", {})
    assert str(err.value) == "MCP server `peer` is closed"


@pytest.mark.req("MCP-LIFE-09")
def test_close_fails_pending_requests(connect: Connect) -> None:
    reg = connect(stdio_config())
    errors: list[BaseException] = []

    def call() -> None:
        try:
            reg.call_tool("peer__slow", {})
        except Exception as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    wait_for(lambda: reg.connection("peer").pending_count() == 1, "pending call")
    reg.close()
    thread.join(5)
    assert len(errors) == 1 and isinstance(errors[0], McpClosedError)


@pytest.mark.req("MCP-STDIO-23")
@pytest.mark.parametrize("extra", [("--linger", "30"), ("--linger", "30", "--ignore-sigterm")])
def test_close_escalates_to_sigterm_and_sigkill(connect: Connect, extra: tuple[str, ...]) -> None:
    opts = McpOptions(close_grace_s=0.2)
    reg = connect(stdio_config(*extra), options=opts)
    pid = _pid(reg)
    reg.close()
    assert _gone(pid)


@pytest.mark.req("MCP-LIFE-10")
def test_dropping_a_registry_reaps_its_children() -> None:
    reg = McpRegistry.connect_all([stdio_config()], options=FAST)
    pid = _pid(reg)
    del reg
    gc.collect()
    assert _gone(pid)


@pytest.mark.req("MCP-REC-07", "MCP-ERR-24")
def test_failed_recovery_after_a_lost_request_poisons(connect: Connect, tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    shutil.copy(SERVER, script)
    config = McpServerConfig(name="peer", command=os.sys.executable, args=(str(script),))  # type: ignore[attr-defined]
    reg = connect(config, options=McpOptions(init_timeout_s=3, close_grace_s=0.5))
    with pytest.raises(McpOutcomeUnknownError):
        reg.call_tool("peer__crash", {})
    script.unlink()
    text = (
        "MCP server `peer` is unavailable: a prior request's outcome became unknown and "
        "recovery failed; not writing on an unrecovered session"
    )
    with pytest.raises(McpUnavailableError) as err:
        reg.call_tool("peer__echo", {})
    assert str(err.value) == text
    shutil.copy(SERVER, script)
    with pytest.raises(McpUnavailableError):
        reg.call_tool("peer__echo", {})
    assert reg.connection("peer").state is State.POISONED


@pytest.mark.req("MCP-REC-08", "MCP-REC-03", "MCP-REC-09")
def test_an_idle_death_recovers_and_a_failed_recovery_stays_broken(
    connect: Connect, tmp_path: Path
) -> None:
    script = tmp_path / "server.py"
    shutil.copy(SERVER, script)
    config = McpServerConfig(name="peer", command=os.sys.executable, args=(str(script),))  # type: ignore[attr-defined]
    reg = connect(config, options=McpOptions(init_timeout_s=3, close_grace_s=0.5))
    os.kill(_pid(reg), 9)
    wait_for(lambda: reg.connection("peer").state is State.BROKEN, "death noticed")
    script.unlink()
    with pytest.raises(Exception, match="outcome unknown"):
        reg.call_tool("peer__echo", {})
    assert reg.connection("peer").state is State.BROKEN
    shutil.copy(SERVER, script)
    assert reg.call_tool("peer__echo", {"message": "back"})["content"]
    assert reg.connection("peer").state is State.READY and reg.connection("peer").tools_stale


@pytest.mark.req("MCP-RPC-10", "MCP-API-06")
def test_concurrent_calls_are_routed_by_id(connect: Connect) -> None:
    reg = connect(stdio_config())
    results: dict[int, str] = {}

    def call(i: int) -> None:
        out = reg.call_tool("peer__echo", {"message": str(i)})
        results[i] = out["content"][0]["text"]  # type: ignore[index]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == {i: f"Echo: {i}" for i in range(16)}


@pytest.mark.req("MCP-S2C-08", "MCP-NOTE-01")
def test_a_server_cancelled_request_gets_no_answer(connect: Connect) -> None:
    def slow_handler(params: dict[str, object]) -> dict[str, object]:
        threading.Event().wait(0.4)
        return {"action": "accept", "content": {}}

    reg = connect(stdio_config(), handlers=ClientHandlers(elicitation=slow_handler))  # type: ignore[arg-type]
    assert reg.call_tool("peer__cancel_ask", {"wait": 1.0})["content"][0]["text"] == "silent"  # type: ignore[index]
