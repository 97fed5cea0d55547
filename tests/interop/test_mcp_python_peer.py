"""The MCP client against the Python SDK peer, tests/peers/python_mcp_peer.py (mcp.md §15.2).

MCP-PEER-05 asks for the peer; MCP-PEER-06 lists what the suite must show against it. Each
point runs on every transport where it means something: results and pagination on stdio,
Streamable HTTP (SSE and JSON responses) and legacy SSE; a crash and a stderr flood only on
stdio (the child is ours); a deleted session only on Streamable HTTP (§4.7).

Skipped without the `mcp` package (failed instead under ZEROCLAW_REF_REQUIRE_PEERS=1, as for
every peer, tests/conftest.py). The network peers are started once per module on free
loopback ports and always terminated; every wait is bounded.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests

from tests.conftest import require_peer, wait_for
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpOptions,
    McpOutcomeUnknownError,
    McpRegistry,
    McpRpcError,
    McpTimeoutError,
    McpToolError,
    accept_with_defaults,
    format_result_for_model,
)
from zeroclaw_ref.mcp.lifecycle import State

pytestmark = pytest.mark.peer("mcp-python-sdk")

PEER_SCRIPT = Path(__file__).resolve().parents[1] / "peers" / "python_mcp_peer.py"
# The peer is dual-era (mcp 2.3.0 serves 2026-07-28 too), and era auto would connect to it in
# the modern era; MCP-PEER-06 is about the handshake era (sessions, the GET stream, server
# requests, initialize counts), so this module pins `era = "legacy"`. The same peer in the
# modern era: tests/interop/test_mcp_modern_peer.py.
OPTS = McpOptions(init_timeout_s=30, list_timeout_s=30, default_tool_timeout_s=30, era="legacy")
# Transports of the client, and the peer mode behind each test parameter.
CLIENT_TRANSPORT = {
    "stdio": "stdio",
    "http": "http",
    "http-json": "http",
    "http-stateless": "http",
    "sse": "sse",
}
EVERY = ["stdio", "http", "http-json", "sse"]
NAMED_TOOLS = [
    "echo",
    "add",
    "image",
    "audio",
    "embedded",
    "link",
    "fail",
    "big",
    "crash",
    "stderr_spam",
    "slow",
    "ask_name",
]
TWO_MIB = 2 * 1024 * 1024


def _sdk() -> ModuleType:
    """The peer module, importable only with the SDK; skip (fail in CI) without it."""
    require_peer("mcp-python-sdk")
    return importlib.import_module("tests.peers.python_mcp_peer")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def peer() -> ModuleType:
    return _sdk()


@pytest.fixture(scope="module")
def network_peer(
    peer: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], str]]:
    """Start the peer in a network mode once per module; yields mode -> endpoint URL."""
    logs = tmp_path_factory.mktemp("python-peer-logs")
    running: dict[str, tuple[subprocess.Popen[bytes], str]] = {}

    def start(mode: str) -> str:
        if mode in running:
            proc, url = running[mode]
            assert proc.poll() is None, f"python peer ({mode}) exited: {proc.returncode}"
            return url
        port = _free_port()
        log_path = logs / f"{mode}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, str(PEER_SCRIPT), "--transport", mode, "--port", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        path = "/sse" if mode == "sse" else "/mcp"
        running[mode] = (proc, f"http://127.0.0.1:{port}{path}")
        wait_for(
            lambda: _listening(port) or proc.poll() is not None,
            f"python peer ({mode}) on port {port}",
            timeout=30,
            detail=lambda: log_path.read_text(errors="replace")[-2000:],
        )
        if proc.poll() is not None:
            pytest.fail(f"python peer ({mode}) exited:\n{log_path.read_text(errors='replace')}")
        return running[mode][1]

    yield start
    for proc, _ in running.values():
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _config(
    network_peer: Callable[[str], str], mode: str, name: str = "peer", **fields: Any
) -> McpServerConfig:
    if mode == "stdio":
        return McpServerConfig(
            name=name, command=sys.executable, args=(str(PEER_SCRIPT),), **fields
        )
    return McpServerConfig(
        name=name, transport=CLIENT_TRANSPORT[mode], url=network_peer(mode), **fields
    )


Connect = Callable[..., McpRegistry]


@pytest.fixture
def connect(network_peer: Callable[[str], str]) -> Iterator[Connect]:
    """connect(mode, handlers=None, **server fields): a registry closed after the test."""
    made: list[McpRegistry] = []

    def make(mode: str, handlers: ClientHandlers | None = None, **fields: Any) -> McpRegistry:
        reg = McpRegistry.connect_all(
            [_config(network_peer, mode, **fields)], handlers=handlers, options=OPTS
        )
        made.append(reg)
        assert reg.servers() == ("peer",), f"the python peer ({mode}) did not connect"
        return reg

    yield make
    for reg in made:
        reg.close()


@pytest.fixture(scope="module")
def shared(network_peer: Callable[[str], str]) -> Iterator[Callable[[str], McpRegistry]]:
    """One registry per mode for the tests that leave the connection as they found it."""
    made: dict[str, McpRegistry] = {}

    def get(mode: str) -> McpRegistry:
        if mode not in made:
            reg = McpRegistry.connect_all([_config(network_peer, mode)], options=OPTS)
            made[mode] = reg
            assert reg.servers() == ("peer",), f"the python peer ({mode}) did not connect"
        return made[mode]

    yield get
    for reg in made.values():
        reg.close()


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


def _state(reg: McpRegistry) -> State:
    return reg.connection("peer").state


def _transport(reg: McpRegistry) -> Any:
    """The connection's transport (diagnostics: pid, session id, retained stderr)."""
    return reg.connection("peer")._transport


def _journal(reg: McpRegistry) -> dict[str, Any]:
    """What the peer process has seen (slow calls, cancellations, handshakes)."""
    journal: dict[str, Any] = json.loads(_text(reg.call_tool("peer__journal", {})))
    return journal


# --- the peer itself (MCP-PEER-05) ---------------------------------------------------------


@pytest.mark.req("MCP-PEER-05", "MCP-PEER-06", "MCP-DISC-10", "MCP-NAME-08")
@pytest.mark.parametrize("mode", [*EVERY, "http-stateless"])
def test_every_page_of_tools_is_collected(mode: str, connect: Connect, peer: ModuleType) -> None:
    reg = connect(mode)
    names = [t.name for t in reg.tools()]
    # 43 tools at ten per page: the client followed nextCursor through five pages
    assert names == [tool.name for tool, _ in peer.TOOLS]
    assert len(names) == 43 and len(names) > 4 * peer.PAGE_SIZE
    assert names[: len(NAMED_TOOLS)] == NAMED_TOOLS
    assert [n for n in names if n.startswith("filler_")] == [f"filler_{i:02d}" for i in range(30)]
    assert [t.prefixed_name for t in reg.tools()] == [f"peer__{n}" for n in names]
    # one page as the server sends it: ten tools and an opaque cursor
    first = reg.connection("peer").request("tools/list", {}, 10)
    assert isinstance(first, dict) and len(first["tools"]) == 10  # type: ignore[arg-type]
    assert isinstance(first["nextCursor"], str) and first["nextCursor"]
    assert _text(reg.call_tool("peer__echo", {"message": "hi"})) == "Echo: hi"


@pytest.mark.req("MCP-PEER-05", "MCP-RPC-08")
@pytest.mark.parametrize("mode", EVERY)
def test_an_invalid_cursor_is_answered_invalid_params(
    mode: str, shared: Callable[[str], McpRegistry]
) -> None:
    reg = shared(mode)
    with pytest.raises(McpRpcError) as caught:
        reg.connection("peer").request("tools/list", {"cursor": "not-a-cursor"}, 10)
    assert caught.value.code == -32602
    assert str(caught.value) == "MCP `tools/list` error -32602: Invalid cursor"
    assert _state(reg) is State.READY  # an error response resets nothing


@pytest.mark.req("MCP-PEER-05", "MCP-NAME-02", "MCP-NAME-04")
@pytest.mark.parametrize("mode", EVERY)
def test_the_resource_and_the_prompt(
    mode: str, shared: Callable[[str], McpRegistry], peer: ModuleType
) -> None:
    reg = shared(mode)
    listing = reg.list_resources()
    assert listing == {
        "resources": [{"name": "hello", "uri": "peer__peer://hello", "mimeType": "text/plain"}]
    }
    read = reg.read_resource("peer__peer://hello")
    assert isinstance(read, dict)
    assert read["contents"] == [
        {"uri": "peer://hello", "mimeType": "text/plain", "text": peer.HELLO_TEXT}
    ]
    prompts = reg.list_prompts("peer")
    assert isinstance(prompts, dict)
    assert [p["name"] for p in prompts["prompts"]] == ["greet"]  # type: ignore[call-overload, index, union-attr]
    greeting = reg.get_prompt("peer__greet", {"name": "Ada"})
    assert isinstance(greeting, dict)
    assert greeting["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Please greet Ada."}}
    ]


# --- tool results (MCP-PEER-06) -----------------------------------------------------------


@pytest.mark.req("MCP-PEER-06", "MCP-RESULT-07", "MCP-RESULT-17", "MCP-RESULT-19")
@pytest.mark.parametrize("mode", EVERY)
def test_plain_results_image_and_link(
    mode: str, shared: Callable[[str], McpRegistry], tmp_path: Path
) -> None:
    reg = shared(mode)
    added = reg.call_tool("peer__add", {"a": 2, "b": 3})
    assert added["structuredContent"] == {"sum": 5} and _text(added) == "5"
    output, attachments = format_result_for_model(added, tmp_path)
    assert json.loads(output) == added and attachments == []
    link = reg.call_tool("peer__link", {})
    assert link["content"] == [
        {"type": "resource_link", "name": "hello", "uri": "peer://hello", "mimeType": "text/plain"}
    ]
    image = reg.call_tool("peer__image", {})
    output, attachments = format_result_for_model(image, tmp_path)
    assert len(attachments) == 1 and attachments[0]["mime_type"] == "image/png"
    saved = Path(attachments[0]["path"])
    assert saved.parent == tmp_path.resolve() / "uploads" and saved.suffix == ".png"
    assert saved.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert json.loads(output)["content"][1] == {"type": "text", "text": str(saved)}


@pytest.mark.req("MCP-PEER-06", "MCP-RESULT-18", "MCP-RESULT-08")
@pytest.mark.parametrize("mode", EVERY)
def test_audio_becomes_a_placeholder(
    mode: str, shared: Callable[[str], McpRegistry], tmp_path: Path
) -> None:
    result = shared(mode).call_tool("peer__audio", {})
    assert result["content"][1]["data"]  # type: ignore[index, call-overload]
    output, attachments = format_result_for_model(result, tmp_path)
    assert json.loads(output)["content"] == [
        {"type": "text", "text": "a short sound"},
        {"type": "audio", "mimeType": "audio/wav", "materialized": "[audio attachment: audio/wav]"},
    ]
    assert attachments == [] and not (tmp_path / "uploads").exists()  # nothing written


@pytest.mark.req("MCP-PEER-06", "MCP-RESULT-16", "MCP-RESULT-28", "MCP-RESULT-30")
@pytest.mark.parametrize("mode", EVERY)
def test_an_embedded_blob_is_materialised(
    mode: str, shared: Callable[[str], McpRegistry], peer: ModuleType, tmp_path: Path
) -> None:
    result = shared(mode).call_tool("peer__embedded", {})
    output, attachments = format_result_for_model(result, tmp_path)
    digest = hashlib.sha256(peer.EMBEDDED_BYTES).hexdigest()
    saved = tmp_path.resolve() / "uploads" / f"{digest}.txt"
    assert saved.read_bytes() == peer.EMBEDDED_BYTES
    assert json.loads(output)["content"] == [
        {
            "type": "resource",
            "resource": {
                "uri": peer.EMBEDDED_URI,
                "mimeType": "text/plain",
                "materialized": f"[Document: peer-report.txt] {saved}",
            },
        }
    ]
    assert attachments == []  # only images are declared (MCP-RESULT-19)


@pytest.mark.req("MCP-PEER-06", "MCP-RESULT-01", "MCP-RESULT-03", "MCP-REC-05")
@pytest.mark.parametrize("mode", EVERY)
def test_is_error_is_surfaced(mode: str, shared: Callable[[str], McpRegistry]) -> None:
    reg = shared(mode)
    with pytest.raises(McpToolError) as caught:
        reg.call_tool("peer__fail", {})
    assert str(caught.value) == "MCP `fail` (server `peer`) returned isError: deliberate failure"
    assert caught.value.result["isError"] is True and caught.value.server == "peer"
    assert _state(reg) is State.READY
    assert _text(reg.call_tool("peer__echo", {"message": "after"})) == "Echo: after"


@pytest.mark.req("MCP-PEER-06")
@pytest.mark.parametrize("mode", EVERY)
def test_a_two_mib_single_line_result_is_delivered(
    mode: str, shared: Callable[[str], McpRegistry]
) -> None:
    reg = shared(mode)
    text = _text(reg.call_tool("peer__big", {}))
    assert len(text) == TWO_MIB and text == "x" * TWO_MIB
    assert _text(reg.call_tool("peer__echo", {"message": "small"})) == "Echo: small"


# --- stdio child death and stderr (MCP-PEER-06, §3.4, §3.6, §7.4) ------------------------


@pytest.mark.req(
    "MCP-PEER-06",
    "MCP-STDIO-19",
    "MCP-STDIO-20",
    "MCP-STDIO-21",
    "MCP-STDIO-22",
    "MCP-STDIO-25",
    "MCP-STDIO-26",
    "MCP-REC-02",
    "MCP-REC-06",
    "MCP-REC-09",
)
def test_crash_fails_the_pending_call_at_once_and_the_next_call_respawns(
    connect: Connect, peer: ModuleType
) -> None:
    # a long tool timeout: only the child's exit can end the call with this text
    reg = connect("stdio", tool_timeout_secs=120)
    conn = reg.connection("peer")
    first_pid = _transport(reg).pid
    with pytest.raises(McpOutcomeUnknownError) as caught:
        reg.call_tool("peer__crash", {})
    assert str(caught.value) == (
        "MCP server `peer` failed during tool call `crash`; outcome unknown and request was not "
        f"replayed: process exited (exit code 3); stderr tail: {peer.CRASH_LINE}"
    )
    assert peer.CRASH_LINE in caught.value.stderr_tail
    assert _state(reg) is State.BROKEN
    # the next call spawns a new child, shakes hands, and only then writes
    assert _text(reg.call_tool("peer__echo", {"message": "reborn"})) == "Echo: reborn"
    assert _state(reg) is State.READY and conn.tools_stale
    assert _transport(reg).pid not in (None, first_pid)
    # a fresh process that saw one handshake and no replayed `crash` (it is still alive)
    assert _journal(reg)["inits"] == 1


@pytest.mark.req("MCP-PEER-06", "MCP-STDIO-12", "MCP-STDIO-13", "MCP-STDIO-14")
def test_two_mib_on_stderr_does_not_deadlock(
    connect: Connect, peer: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    reg = connect("stdio")
    with caplog.at_level(logging.INFO, logger="zeroclaw_ref.mcp.server.peer"):
        done = _text(reg.call_tool("peer__stderr_spam", {}))
        assert done.startswith("wrote ") and int(done.split()[1]) >= TWO_MIB
        wait_for(
            lambda: any(
                r.getMessage() == peer.SPAM_DONE and r.levelno == logging.INFO
                for r in caplog.records
            ),
            "the last stderr line forwarded to the server's logger",
        )
    child = _transport(reg)._child
    assert len(child.tail) <= OPTS.stderr_tail_bytes  # the retained tail stays bounded
    assert bytes(child.tail).endswith(f"{peer.SPAM_DONE}\n".encode())
    assert _text(reg.call_tool("peer__echo", {"message": "still"})) == "Echo: still"


# --- timeouts and cancellation (MCP-PEER-06, §7.2) ----------------------------------------


@pytest.mark.req(
    "MCP-PEER-06",
    "MCP-CANCEL-01",
    "MCP-CANCEL-04",
    "MCP-TIME-06",
    "MCP-HTTP-45",
)
@pytest.mark.parametrize("mode", EVERY)
def test_slow_times_out_sends_cancelled_and_the_connection_stays_usable(
    mode: str, connect: Connect
) -> None:
    reg = connect(mode, tool_timeout_secs=1)
    with pytest.raises(McpTimeoutError) as caught:
        reg.call_tool("peer__slow", {})
    assert str(caught.value) == (
        "MCP server `peer` timed out after 1s during tool call `slow`; outcome unknown and "
        "request was not replayed"
    )
    assert _state(reg) is State.READY  # a timeout alone resets nothing
    slow_id = _journal(reg)["slow_started"][-1]
    expected = {"requestId": slow_id, "reason": "timed out after 1s"}
    # the peer received the cancellation and interrupted the call (bounded wait: it is a
    # notification, so nothing orders it against the journal calls of other connections)
    wait_for(
        lambda: expected in (j := _journal(reg))["cancelled"] and slow_id in j["slow_interrupted"],
        "the peer to see notifications/cancelled for `slow`",
        detail=lambda: json.dumps(_journal(reg)),
    )
    assert _text(reg.call_tool("peer__echo", {"message": "usable"})) == "Echo: usable"
    assert _state(reg) is State.READY


# --- stale session (MCP-PEER-06, §4.7) ----------------------------------------------------


@pytest.mark.req(
    "MCP-PEER-06", "MCP-HTTP-37", "MCP-HTTP-39", "MCP-HTTP-40", "MCP-HTTP-11", "MCP-REC-09"
)
@pytest.mark.parametrize("mode", ["http", "http-json"])
def test_a_deleted_session_answered_404_leads_to_reinitialisation(
    mode: str, connect: Connect
) -> None:
    reg = connect(mode)
    conn = reg.connection("peer")
    transport = _transport(reg)
    old = transport.session_id
    assert old
    inits = _journal(reg)["inits"]
    # end the session behind the client's back
    gone = requests.delete(
        transport.url,
        headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": transport.version},
        timeout=10,
    )
    assert gone.status_code == 200
    with pytest.raises(McpOutcomeUnknownError) as caught:
        reg.call_tool("peer__echo", {"message": "lost"})
    assert str(caught.value) == (
        "MCP server `peer` failed during tool call `echo`; outcome unknown and request was not "
        "replayed: session expired (HTTP 404)"
    )
    assert _state(reg) is State.BROKEN
    assert _text(reg.call_tool("peer__echo", {"message": "again"})) == "Echo: again"
    assert _state(reg) is State.READY and conn.tools_stale
    assert transport.session_id not in (None, old)
    assert _journal(reg)["inits"] == inits + 1  # exactly one new handshake


# --- elicitation (MCP-PEER-06, §2.2) ------------------------------------------------------


@pytest.mark.req(
    "MCP-PEER-06",
    "MCP-S2C-01",
    "MCP-S2C-02",
    "MCP-S2C-06",
    "MCP-INIT-03",
    "MCP-INIT-04",
    "MCP-RPC-12",
    "MCP-HTTP-31",
    "MCP-HTTP-34",
)
@pytest.mark.parametrize("mode", ["stdio", "http", "http-json", "sse"])
def test_ask_name_is_answered_by_the_elicitation_handler(mode: str, connect: Connect) -> None:
    seen: list[tuple[str, JSONObject]] = []

    def elicit(params: JSONObject) -> JSONObject:
        seen.append((threading.current_thread().name, params))
        return {"action": "accept", "content": {"name": "Grace"}}

    reg = connect(mode, handlers=ClientHandlers(elicitation=elicit))
    assert _journal(reg)["init_capabilities"][-1] == {"elicitation": {}}  # form mode only
    assert _text(reg.call_tool("peer__ask_name", {})) == "Hello, Grace!"
    # with JSON responses the request has no stream of its own: the peer uses the GET stream
    channel = "standalone" if mode == "http-json" else "request"
    assert _journal(reg)["elicited_on"][-1] == channel
    # [MCP-S2C-06] on the connection's handler pool, never on a transport reader thread
    assert seen[0][0].startswith("mcp-peer_")
    assert len(seen) == 1
    params = seen[0][1]
    assert params["message"] == "What is your name?"
    schema = params["requestedSchema"]
    assert isinstance(schema, dict) and schema["properties"]["name"]["default"] == "Ada"  # type: ignore[index, call-overload]
    # the schema default, as the conformance driver's handler fills it in
    assert accept_with_defaults(params) == {"action": "accept", "content": {"name": "Ada"}}


@pytest.mark.req("MCP-PEER-06", "MCP-S2C-01", "MCP-S2C-04", "MCP-INIT-03")
@pytest.mark.parametrize("mode", ["stdio", "http", "http-json", "sse"])
def test_ask_name_is_declined_without_a_handler(mode: str, connect: Connect) -> None:
    reg = connect(mode)
    assert _journal(reg)["init_capabilities"][-1] == {}  # nothing declared
    assert _text(reg.call_tool("peer__ask_name", {})) == "No name (decline)"
