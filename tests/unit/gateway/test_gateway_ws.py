"""`/acp` over WebSocket, driven by an independent client library (`websocket-client`)
(acp.md §13.1, DESIGN §7.9)."""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import require_peer, wait_for
from tests.unit.gateway.conftest import MAX_MESSAGE, TOKEN, Running, demo_config
from zeroclaw_ref.gateway.server import UNAUTHORIZED

Start = Callable[..., Running]


@pytest.fixture
def websocket() -> ModuleType:
    module = require_peer("websocket-client")
    assert isinstance(module, ModuleType)
    return module


class Client:
    """A tiny ACP client over a websocket-client connection; every read is bounded (10 s)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 1
        self.notes: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        self.ws.send(json.dumps(message))

    def request(self, method: str, params: dict[str, Any]) -> int:
        msg_id, self.next_id = self.next_id, self.next_id + 1
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def recv(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.ws.recv())
        return message

    def until(self, msg_id: int, on_request: Callable[[dict[str, Any]], None] | None = None):  # type: ignore[no-untyped-def]
        while True:
            message = self.recv()
            if message.get("id") == msg_id and "method" not in message:
                return message
            if "method" in message and "id" in message:
                assert on_request is not None, f"unexpected request {message}"
                on_request(message)
            else:
                self.notes.append(message)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = self.until(self.request(method, params))
        return reply

    def new_session(self, **params: Any) -> str:
        reply = self.call("session/new", params)
        assert "result" in reply, reply
        session_id: str = reply["result"]["sessionId"]
        return session_id


def connect(websocket: ModuleType, running: Running, query: str = "", **kwargs: Any) -> Client:
    kwargs.setdefault("header", [f"Authorization: Bearer {TOKEN}"])
    ws = websocket.create_connection(running.url("/acp" + query), timeout=10, **kwargs)
    return Client(ws)


def close_code(ws: Any, websocket: ModuleType) -> int:
    """Read frames until the server's close frame; return its status code."""
    while True:
        opcode, frame = ws.recv_data_frame(True)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            code: int = struct.unpack("!H", frame.data[:2])[0]
            return code


def chunks(notes: list[dict[str, Any]]) -> str:
    return "".join(
        n["params"]["update"]["content"]["text"]
        for n in notes
        if n.get("method") == "session/update"
        and n["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    )


# --- ACP end to end ---------------------------------------------------------------------


@pytest.mark.req("ACP-GW-01", "ACP-GW-05", "ACP-GW-09", "ACP-BR-09")
def test_client_initializes_opens_a_session_and_streams_a_prompt(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway()
    client = connect(websocket, running, subprotocols=["zeroclaw.acp.v1"])
    assert client.ws.getsubprotocol() == "zeroclaw.acp.v1"
    init = client.call("initialize", {"protocolVersion": 1})
    assert init["result"]["protocolVersion"] == 1
    session = client.new_session()
    reply = client.call("session/prompt", {"sessionId": session, "prompt": "hello"})
    assert reply["result"]["stopReason"] == "end_turn"
    assert chunks(client.notes) == "Echo: hello"
    client.ws.close()


@pytest.mark.req("ACP-GW-07", "ACP-PERM-01")
def test_permission_round_trip_runs_the_tool_after_allow_once(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway()
    client = connect(websocket, running)
    session = client.new_session()
    asked: list[dict[str, Any]] = []

    def allow(request: dict[str, Any]) -> None:
        asked.append(request)
        outcome = {"outcome": "selected", "optionId": "allow-once"}
        client.send({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": outcome}})

    msg_id = client.request(
        "session/prompt", {"sessionId": session, "prompt": "write: out.txt hello"}
    )
    reply = client.until(msg_id, allow)
    assert [r["method"] for r in asked] == ["session/request_permission"]
    assert asked[0]["id"] == "zc-out-0"
    assert reply["result"]["stopReason"] == "end_turn"
    assert (running.config_dir / "agents" / "a" / "workspace" / "out.txt").read_text() == "hello"


@pytest.mark.req("ACP-CANCEL-01", "ACP-GW-09")
def test_cancel_over_websocket_ends_the_turn_cancelled(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway()
    client = connect(websocket, running)
    session = client.new_session()
    msg_id = client.request("session/prompt", {"sessionId": session, "prompt": "slow: 200"})
    first = client.recv()
    assert first["method"] == "session/update"
    client.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
    reply = client.until(msg_id)
    assert reply["result"]["stopReason"] == "cancelled"


@pytest.mark.req("ACP-GW-09")
def test_fragmented_message_is_reassembled_and_blank_frames_are_ignored(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway()
    client = connect(websocket, running)
    abnf = websocket.ABNF
    text = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}})
    client.ws.send("   ")
    client.ws.send_frame(abnf.create_frame(text[:10], abnf.OPCODE_TEXT, fin=0))
    client.ws.send_frame(abnf.create_frame(text[10:20], abnf.OPCODE_CONT, fin=0))
    client.ws.send_frame(abnf.create_frame(text[20:], abnf.OPCODE_CONT, fin=1))
    reply = client.recv()
    assert reply["id"] == 7 and reply["result"]["protocolVersion"] == 1
    client.ws.send_binary(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "initialize"}).encode())
    assert client.recv()["id"] == 8


def test_ping_is_answered_with_a_pong(websocket: ModuleType, start_gateway: Start) -> None:
    running = start_gateway()
    client = connect(websocket, running)
    client.ws.ping(b"abc")
    opcode, frame = client.ws.recv_data_frame(True)
    assert (opcode, frame.data) == (websocket.ABNF.OPCODE_PONG, b"abc")


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.req("ACP-GW-09")
def test_oversized_message_closes_with_1009_and_other_connections_continue(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway()
    bystander = connect(websocket, running)
    client = connect(websocket, running)
    client.ws.send("x" * (MAX_MESSAGE + 1))
    assert close_code(client.ws, websocket) == 1009
    assert bystander.call("initialize", {})["result"]["protocolVersion"] == 1


@pytest.mark.req("ACP-GW-09")
def test_non_utf8_text_frame_closes_with_1007(websocket: ModuleType, start_gateway: Start) -> None:
    running = start_gateway()
    client = connect(websocket, running)
    abnf = websocket.ABNF
    client.ws.send_frame(abnf.create_frame(b"\xff\xfe{}", abnf.OPCODE_TEXT))
    assert close_code(client.ws, websocket) == 1007


@pytest.mark.req("ACP-GW-09", "ACP-TR-06", "ACP-TR-12", "ACP-TR-15", "ACP-ERR-01")
def test_messages_the_reply_cannot_carry_as_parsed_are_answered_on_a_live_connection(
    websocket: ModuleType, start_gateway: Start
) -> None:
    """ACP-TR-12 / ACP-ERR-01: `1e400` (an infinity once parsed) is a −32700 parse error with
    id null; ACP-TR-06 / ACP-TR-15: a lone surrogate in an id, an alias or a session id comes
    back as its `\\u` escape. Each used to raise on the connection's reader and end it."""
    running = start_gateway()
    client = connect(websocket, running)
    client.ws.send(r'{"jsonrpc":"2.0","id":1e400,"method":"initialize"}')
    assert client.recv() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: number out of range: 1e400"},
    }
    client.ws.send(r'{"jsonrpc":"2.0","id":"\udfff","method":"initialize"}')
    reply = client.recv()
    assert reply["id"] == "\udfff" and reply["result"]["protocolVersion"] == 1
    client.ws.send(r'{"jsonrpc":"2.0","id":20,"method":"session/new","params":{"agent":"\ud800"}}')
    assert client.recv()["error"] == {
        "code": -32602,
        "message": "Unknown agent `\ud800` — no [agents.\ud800] entry configured",
    }
    client.ws.send(
        r'{"jsonrpc":"2.0","id":21,"method":"session/load","params":{"sessionId":"\udfff"}}'
    )
    assert client.recv()["error"] == {"code": -32000, "message": "Session not found: \udfff"}
    session = client.new_session()  # the connection is still up, and serves a prompt
    reply = client.call("session/prompt", {"sessionId": session, "prompt": "hello"})
    assert reply["result"]["stopReason"] == "end_turn"
    client.ws.close()


@pytest.mark.req("ACP-GW-09")
def test_binary_frame_that_is_not_utf8_is_dropped(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway()
    client = connect(websocket, running)
    client.ws.send_binary(b"\xff\xfe")
    assert client.call("initialize", {})["result"]["protocolVersion"] == 1


@pytest.mark.req("ACP-GW-02", "ACP-GW-03", "ACP-GW-04")
@pytest.mark.parametrize(
    "carrier",
    [
        {},
        {"header": ["Authorization: Bearer wrong"]},
        {"header": [], "subprotocols": ["zeroclaw.acp.v1", "bearer.wrong"]},
        {"header": [], "query": "?token=wrong"},
        {"header": ["Authorization: Basic " + TOKEN]},
    ],
    ids=["none", "bearer-wrong", "subprotocol-wrong", "query-wrong", "not-bearer"],
)
def test_upgrade_without_a_valid_token_gets_401_with_the_exact_body(
    websocket: ModuleType, start_gateway: Start, carrier: dict[str, Any]
) -> None:
    running = start_gateway()
    query = carrier.pop("query", "")
    carrier.setdefault("header", [])
    with pytest.raises(websocket.WebSocketBadStatusException) as caught:
        websocket.create_connection(running.url("/acp" + query), timeout=10, **carrier)
    assert caught.value.status_code == 401
    assert caught.value.resp_body == UNAUTHORIZED.encode()


@pytest.mark.req("ACP-GW-02", "ACP-GW-03", "ACP-GW-05")
@pytest.mark.parametrize(
    "carrier",
    [
        {"header": [f"Authorization: Bearer {TOKEN}"]},
        {"header": [], "subprotocols": ["zeroclaw.acp.v1", f"bearer.{TOKEN}"]},
        {"header": [], "query": f"?token={TOKEN}"},
    ],
    ids=["bearer", "subprotocol", "query"],
)
def test_each_token_carrier_is_accepted(
    websocket: ModuleType, start_gateway: Start, carrier: dict[str, Any]
) -> None:
    running = start_gateway()
    query = carrier.pop("query", "")
    client = connect(websocket, running, query, **carrier)
    if "subprotocols" in carrier:
        assert client.ws.getsubprotocol() == "zeroclaw.acp.v1"  # never the bearer entry
    assert client.call("initialize", {})["result"]["protocolVersion"] == 1


def test_plain_get_on_acp_is_refused_without_upgrading(start_gateway: Start) -> None:
    import requests

    running = start_gateway()
    answer = requests.get(
        running.http("/acp"), headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
    )
    assert answer.status_code == 426


# --- connections -----------------------------------------------------------------------


@pytest.mark.req("ACP-GW-10")
def test_abrupt_disconnect_mid_turn_cancels_the_turn_and_ends_the_connection(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway()
    client = connect(websocket, running)
    session = client.new_session()
    client.request("session/prompt", {"sessionId": session, "prompt": "slow: 10000"})
    assert client.recv()["method"] == "session/update"  # the turn is running

    def worker_alive() -> bool:
        return any(t.name == f"session-{session}" for t in threading.enumerate())

    assert worker_alive()
    client.ws.shutdown()  # no close frame: the socket just goes away
    wait_for(lambda: not worker_alive(), "the session worker to end after the disconnect")
    wait_for(lambda: not running.gateway.state.connections(), "the connection to be forgotten")


@pytest.mark.req("ACP-GW-07", "ACP-CFG-05")
def test_two_connections_have_independent_sessions_capacity_and_counters(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway(demo_config(more="[acp]\nmax_sessions = 1"))
    first, second = connect(websocket, running), connect(websocket, running)
    one, two = first.new_session(), second.new_session()
    full = first.call("session/new", {})
    assert full["error"]["code"] == -32001  # the budget is per connection
    unknown = second.call("session/prompt", {"sessionId": one, "prompt": "hi"})
    assert unknown["error"] == {"code": -32000, "message": f"Session not found: {one}"}
    ids: list[str] = []
    for client, session in ((first, one), (second, two)):

        def allow(request: dict[str, Any], client: Client = client) -> None:
            ids.append(request["id"])
            outcome = {"outcome": "selected", "optionId": "reject-once"}
            client.send({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": outcome}})

        msg_id = client.request("session/prompt", {"sessionId": session, "prompt": "write: f x"})
        assert client.until(msg_id, allow)["result"]["stopReason"] == "end_turn"
    assert ids == ["zc-out-0", "zc-out-0"]


@pytest.mark.req("ACP-GW-06", "ACP-NEW-03")
def test_agent_query_parameter_is_the_connection_default(
    websocket: ModuleType, start_gateway: Start, tmp_path: Path
) -> None:
    running = start_gateway(demo_config(agents=("a", "b")))
    with_default = connect(websocket, running, "?agent=%20b%20")
    reply = with_default.call("session/new", {})
    assert reply["result"]["workspaceDir"].endswith("/agents/b/workspace")
    explicit = with_default.call("session/new", {"agentAlias": "a"})
    assert explicit["result"]["workspaceDir"].endswith("/agents/a/workspace")
    no_default = connect(websocket, running, "?agent=%20")
    refused = no_default.call("session/new", {})
    assert refused["error"]["code"] == -32602
    unknown = connect(websocket, running, "?agent=zz").call("session/new", {})
    assert "Unknown agent `zz`" in unknown["error"]["message"]
