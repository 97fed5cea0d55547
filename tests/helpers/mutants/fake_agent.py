"""A tiny stdlib ACP-shaped agent for exercising the conformance runner.

Usage: python fake_agent.py [MUTATION]

Without a mutation it behaves: it answers `initialize`, `session/new`,
`session/prompt` (one update, then the result), `compute` (integer 1), `flag`
(true) and `spawn_peer` (starts a stdio MCP peer, forwards one request and
returns the peer's answer); anything else gets error -32601. It exits 0 on
stdin EOF. Each mutation breaks exactly one of these behaviours, so that a
scenario written for the good agent must fail for one stated reason
(`load-session` instead advertises a capability, for the needs tests).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid

MUTATION = sys.argv[1] if len(sys.argv) > 1 else "none"
SESSION = str(uuid.uuid4())
PEERS: list[subprocess.Popen[bytes]] = []


def emit(message: dict[str, object]) -> None:
    text = json.dumps(message, separators=(",", ":"))
    ending = "\r\n" if MUTATION == "crlf" else "\n"
    sys.stdout.write(text + ending)
    sys.stdout.flush()


def result(req_id: object, value: object) -> None:
    emit({"jsonrpc": "2.0", "id": req_id, "result": value})


def spawn_peer(req_id: object, argv: list[str]) -> None:
    peer = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    PEERS.append(peer)
    assert peer.stdin is not None and peer.stdout is not None
    peer.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}\n')
    peer.stdin.flush()
    answer = json.loads(peer.stdout.readline())
    result(req_id, {"peer": answer})


def handle(msg: dict[str, object]) -> None:
    method, req_id = msg.get("method"), msg.get("id")
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    assert isinstance(params, dict)
    if method == "initialize":
        if MUTATION == "pollution":
            print("starting up")  # a log line on stdout
        if MUTATION == "empty-line":
            sys.stdout.write("\n")  # a blank line between messages (TX-FLOW-05)
        answer: dict[str, object] = {"protocolVersion": 1}
        if MUTATION == "load-session":
            answer["agentCapabilities"] = {"loadSession": True}
        result(req_id, answer)
    elif method == "session/new":
        result(req_id, {"sessionId": SESSION})
    elif method == "session/prompt":
        if MUTATION == "timeout":
            return
        update = {"sessionId": SESSION, "update": {"sessionUpdate": "agent_message_chunk"}}
        emit({"jsonrpc": "2.0", "method": "session/update", "params": update})
        sid = str(uuid.uuid4()) if MUTATION == "session-changes" else SESSION
        result(req_id, {"sessionId": sid, "stopReason": "end_turn"})
        if MUTATION in ("extra-message", "extra-message-lingers"):
            emit({"jsonrpc": "2.0", "method": "session/update", "params": update})
    elif method == "compute":
        result(req_id, {"value": 1.0 if MUTATION == "real-for-int" else 1})
    elif method == "flag":
        result(req_id, {"ok": 1 if MUTATION == "int-for-bool" else True})
    elif method == "spawn_peer":
        argv = params.get("argv")
        assert isinstance(argv, list)
        spawn_peer(req_id, [str(a) for a in argv])
    elif MUTATION.startswith("ignores-extensions") and str(method).startswith("_"):
        return
    elif req_id is not None:
        code = -32600 if MUTATION == "wrong-error-code" else -32601
        emit({"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": "nope"}})


def main() -> int:
    for line in sys.stdin:
        handle(json.loads(line))
    for peer in PEERS:
        assert peer.stdin is not None
        peer.stdin.close()
        peer.wait()
    if MUTATION == "partial-line":
        sys.stdout.write('{"jsonrpc":"2.0"')  # cut short: no LF before EOF (TX-FLOW-05)
        sys.stdout.flush()
    if MUTATION in ("no-exit-on-eof", "extra-message-lingers", "ignores-extensions-lingers"):
        threading.Event().wait()  # never returns; the runner must kill us
    return 3 if MUTATION == "exit-status" else 0


if __name__ == "__main__":
    sys.exit(main())
