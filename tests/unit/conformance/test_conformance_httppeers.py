"""The oracle's HTTP and legacy SSE fake MCP servers (transcripts.md §8.3, §8.4).

Each peer is driven the way the runner drives it (``deliver``, ``next_message``,
``kill``, ``close_output``) while a plain ``http.client`` plays the IUT. The last
tests run whole scenarios against a tiny fake agent that speaks MCP over HTTP.
"""

from __future__ import annotations

import fcntl
import http.client
import json
import queue
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.core.header import Channel
from zeroclaw_ref.conformance.core.runner import RunOptions, ScenarioResult, run_scenario
from zeroclaw_ref.conformance.peers import httpwire
from zeroclaw_ref.conformance.peers.httppeers import HttpPeer, PeerFailure, SsePeer
from zeroclaw_ref.conformance.peers.httpwire import Mailbox, Out

REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}


def compact(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def soon(seconds: float = 5.0) -> float:
    return time.monotonic() + seconds


@pytest.fixture
def http_peer() -> Iterator[HttpPeer]:
    peer = HttpPeer(Channel("web", "http", {}), 1.0)
    yield peer
    peer.stop()


@pytest.fixture
def stream_peer() -> Iterator[HttpPeer]:
    peer = HttpPeer(Channel("web", "http", {"get": "stream"}), 1.0)
    yield peer
    peer.stop()


@pytest.fixture
def sse_peer() -> Iterator[SsePeer]:
    peer = SsePeer(Channel("old", "sse", {}), 1.0)
    yield peer
    peer.stop()


def connect(url: str) -> http.client.HTTPConnection:
    host, port = url.split("//")[1].split("/")[0].split(":")
    return http.client.HTTPConnection(host, int(port), timeout=5)


def post_in_thread(
    url: str, body: bytes, headers: dict[str, str] | None = None
) -> queue.Queue[tuple[int, dict[str, str], bytes]]:
    """POST from a thread (a request body blocks until the runner answers it)."""
    out: queue.Queue[tuple[int, dict[str, str], bytes]] = queue.Queue()

    def run() -> None:
        conn = connect(url)
        conn.request("POST", "/mcp", body, {"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        out.put((resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()))
        conn.close()

    threading.Thread(target=run, daemon=True).start()
    return out


@pytest.mark.req("TX-PEER-01", "TX-PEER-03", "TX-PEER-07", "TX-PEER-08")
def test_a_request_post_waits_for_the_send_that_answers_its_id(http_peer: HttpPeer) -> None:
    assert http_peer.placeholder == "URL_WEB"
    assert http_peer.value.startswith("http://127.0.0.1:") and http_peer.value.endswith("/mcp")
    answer = post_in_thread(http_peer.value, compact(REQUEST), {"Mcp-Session-Id": "s-1"})
    value, headers = http_peer.next_message(5)
    assert value == REQUEST
    assert headers is not None and headers["mcp-session-id"] == "s-1"
    assert answer.empty()  # [TX-PEER-02] nothing is invented while the frame is not reached
    http_peer.deliver(
        "send", compact(ANSWER) + b"\n", {"headers": {"Mcp-Session-Id": "s-2"}}, soon()
    )
    status, got, body = answer.get(timeout=5)
    assert status == 200 and got["content-type"] == "application/json"
    assert got["mcp-session-id"] == "s-2"
    assert json.loads(body) == ANSWER


@pytest.mark.req("TX-PEER-07", "TX-PEER-04")
def test_notifications_get_and_delete_get_their_automatic_replies(http_peer: HttpPeer) -> None:
    conn = connect(http_peer.value)

    def status(method: str, body: bytes | None = None) -> int:
        conn.request(method, "/mcp", body)
        resp = conn.getresponse()
        resp.read()
        return resp.status

    assert status("POST", compact({"jsonrpc": "2.0", "method": "notifications/initialized"})) == 202
    assert status("POST", b"not json") == 202
    assert status("GET") == 405
    assert http_peer.eofs.empty()
    assert status("DELETE") == 200
    conn.close()
    http_peer.eofs.get(timeout=5)
    assert http_peer.drain() == [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"$raw": "not json"},
    ]


@pytest.mark.req("TX-PEER-07")
def test_an_sse_answer_carries_later_post_sends_until_end(http_peer: HttpPeer) -> None:
    answer = post_in_thread(http_peer.value, compact(REQUEST))
    http_peer.next_message(5)
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
    http_peer.deliver("send", compact(note) + b"\n", {"sse": True, "via": "post"}, soon())
    http_peer.deliver("send", compact(ANSWER) + b"\n", {"via": "post", "end": True}, soon())
    status, headers, body = answer.get(timeout=5)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = [e for e in body.decode().split("\n\n") if e]
    assert events == [
        "event: message\ndata: " + compact(note).decode(),
        "event: message\ndata: " + compact(ANSWER).decode(),
    ]


@pytest.mark.req("TX-PEER-07", "TX-RUN-06")
def test_answering_an_abandoned_post_fails_as_exchange_closed(http_peer: HttpPeer) -> None:
    conn = connect(http_peer.value)
    conn.request("POST", "/mcp", compact(REQUEST))
    http_peer.next_message(5)
    conn.close()  # the IUT gives up on the request
    with pytest.raises(PeerFailure) as caught:
        http_peer.deliver("send", compact(ANSWER) + b"\n", None, soon())
    assert caught.value.reason == "peer-exchange-closed"
    with pytest.raises(PeerFailure) as nothing:
        http_peer.deliver("send_raw", b"{}", None, soon(0.2))
    assert nothing.value.reason == "peer-exchange-closed"


@pytest.mark.req("TX-PEER-07", "TX-RUN-06")
def test_a_get_send_without_a_stream_fails_as_stream_not_open(http_peer: HttpPeer) -> None:
    with pytest.raises(PeerFailure) as caught:
        http_peer.deliver("send", b"{}\n", {"via": "get"}, soon(0.2))
    assert caught.value.reason == "peer-stream-not-open"


@pytest.mark.req("TX-PEER-07", "TX-FRAME-08")
def test_the_get_stream_carries_via_get_sends_and_kill_drops_it(stream_peer: HttpPeer) -> None:
    conn = connect(stream_peer.value)
    conn.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    stream_peer.deliver("send", compact(note) + b"\n", {"via": "get"}, soon())
    assert resp.readline() == b"event: message\n"
    assert resp.readline() == b"data: " + compact(note) + b"\n"
    assert stream_peer.kill(None)
    with pytest.raises(http.client.IncompleteRead):
        resp.read()  # closed without the final chunk
    conn.close()


@pytest.mark.req("TX-PEER-09", "TX-PEER-04", "TX-PEER-03")
def test_the_sse_peer_names_its_endpoint_and_streams_sends(sse_peer: SsePeer) -> None:
    assert sse_peer.placeholder == "URL_OLD" and sse_peer.value.endswith("/sse")
    conn = connect(sse_peer.value)
    conn.request("GET", "/sse")
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.readline() == b"event: endpoint\n"
    assert resp.readline() == b"data: /messages?session_id=1\n"
    assert resp.readline() == b"\n"
    poster = connect(sse_peer.value)
    poster.request("POST", "/messages?session_id=1", compact(REQUEST))
    assert poster.getresponse().status == 202
    poster.close()
    value, headers = sse_peer.next_message(5)
    assert value == REQUEST and headers is not None
    sse_peer.deliver("send", compact(ANSWER) + b"\n", None, soon())
    assert resp.readline() == b"event: message\n"
    assert resp.readline() == b"data: " + compact(ANSWER) + b"\n"
    assert resp.readline() == b"\n"
    sse_peer.deliver("send_raw", b": keep-alive\n", None, soon())
    assert resp.readline() == b": keep-alive\n"
    assert sse_peer.eofs.empty()
    resp.close()
    conn.close()  # the IUT closes the event stream
    sse_peer.eofs.get(timeout=5)


@pytest.mark.req("TX-PEER-09", "TX-RUN-06")
def test_an_sse_send_without_a_stream_fails_as_stream_not_open(sse_peer: SsePeer) -> None:
    with pytest.raises(PeerFailure) as caught:
        sse_peer.deliver("send", b"{}\n", None, soon(0.2))
    assert caught.value.reason == "peer-stream-not-open"


@pytest.mark.req("TX-PEER-09")
def test_the_sse_endpoint_option_is_sent_verbatim() -> None:
    peer = SsePeer(Channel("old", "sse", {"endpoint": "http://127.0.0.1:1/rpc"}), 1.0)
    try:
        conn = connect(peer.value)
        conn.request("GET", "/sse")
        resp = conn.getresponse()
        assert resp.readline() == b"event: endpoint\n"
        assert resp.readline() == b"data: http://127.0.0.1:1/rpc\n"
        conn.close()
    finally:
        peer.stop()


# -- whole scenarios against a fake agent that is an MCP client over HTTP ------------

FAKE_AGENT = """
import json, os, sys, urllib.request
method = sys.argv[1]
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}).encode()
req = urllib.request.Request(os.environ["MCP_URL"], body, {
    "Content-Type": "application/json", "Mcp-Session-Id": sys.argv[2]})
with urllib.request.urlopen(req, timeout=5) as resp:
    answer = json.loads(resp.read())
print(json.dumps({"jsonrpc": "2.0", "method": "done", "params": answer["result"]}), flush=True)
sys.stdin.read()
"""


def http_scenario(tmp_path: Path) -> tuple[Path, Path]:
    fixtures = tmp_path / "fixtures"
    path = fixtures / "mcp" / "oracle" / "http-request.jsonl"
    path.parent.mkdir(parents=True)
    (fixtures / "VERSION").write_text("1.0\n")
    header = {
        "format": 2,
        "scenario": "mcp/oracle/http-request",
        "description": "The fake agent lists tools over HTTP.",
        "requirements": ["MCP-DISC-02"],
        "level": "required",
        "profile": "zeroclaw-mcp",
        "setup": {"env": {"MCP_URL": "${URL_WEB}"}},
        "timeouts": {"expect": 5, "exit": 1},  # a failed fake agent still waits on its POST
        "channels": {"web": {"role": "mcp-server", "transport": "http"}},
    }
    frames = [
        {
            "expect": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            "ch": "web",
            "http": {"headers": {"mcp-session-id": "s-1"}},
        },
        {"send": {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}, "ch": "web"},
        {"expect": {"jsonrpc": "2.0", "method": "done", "params": {"tools": []}}},
    ]
    lines = [json.dumps(header)] + [json.dumps(f) for f in frames]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, fixtures


def run_fake(
    tmp_path: Path, path: Path, fixtures: Path, method: str, session: str
) -> ScenarioResult:
    script = tmp_path / "fake_mcp_agent.py"
    script.write_text(FAKE_AGENT, encoding="utf-8")
    agent = f"{sys.executable} {script} {method} {session}"
    return run_scenario(path, fixtures, RunOptions(agent=agent))


@pytest.mark.req("TX-PEER-07", "TX-PEER-08", "TX-FRAME-04", "TX-RUN-06")
def test_the_runner_catches_a_wrong_request_on_an_http_channel(tmp_path: Path) -> None:
    path, fixtures = http_scenario(tmp_path)
    control = run_fake(tmp_path, path, fixtures, "tools/list", "s-1")
    assert control.status == "pass", control.report
    wrong = run_fake(tmp_path, path, fixtures, "tools/lst", "s-1")
    assert (wrong.status, wrong.reason) == ("fail", "mismatch"), wrong.report
    assert wrong.pointer == "/method"


@pytest.mark.req("TX-PEER-08", "TX-RUN-06")
def test_the_runner_catches_a_wrong_request_header_on_an_http_channel(tmp_path: Path) -> None:
    path, fixtures = http_scenario(tmp_path)
    wrong = run_fake(tmp_path, path, fixtures, "tools/list", "s-9")
    assert (wrong.status, wrong.reason) == ("fail", "mismatch"), wrong.report
    assert wrong.pointer == "(request headers)/mcp-session-id"


# -- request bodies the peer refuses, and the message queue ------------------------


def raw_post(url: str, head: bytes, body: bytes) -> bytes:
    """Send one hand-framed POST; the status line of the answer (b"" if the peer reset)."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n" + body)
        try:
            return sock.makefile("rb").readline()
        except ConnectionResetError:  # the peer closed with the refused bytes unread
            return b""


def refusal(peer: HttpPeer) -> PeerFailure:
    with pytest.raises(PeerFailure) as caught:
        peer.next_message(5)
    assert caught.value.reason == "peer-exchange-closed"
    return caught.value


@pytest.mark.req("TX-PEER-03", "TX-PEER-07", "TX-RUN-06")
def test_a_chunk_over_the_limit_fails_the_exchange_instead_of_being_cut(
    http_peer: HttpPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(httpwire, "CHUNK_LIMIT", 16)
    # the tail of the oversized chunk looks like framing: cut at 16 bytes, it would be
    # parsed as a size line and a message of its own
    data = b'{"pad":"xxx"}\r\n' + b"7\r\n" + b'{"a":1}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)
    status = raw_post(http_peer.value, b"Transfer-Encoding: chunked\r\n", chunked)
    assert status in (b"", b"HTTP/1.1 413 Request Entity Too Large\r\n"), status
    failure = refusal(http_peer)
    assert f"a chunk of {len(data)} bytes is over the 16-byte limit" in str(failure)
    assert http_peer.drain() == [], "nothing of the refused body is queued"


@pytest.mark.req("TX-PEER-03", "TX-PEER-07", "TX-RUN-06")
def test_a_body_over_the_limit_fails_the_exchange(
    http_peer: HttpPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(httpwire, "BODY_LIMIT", 64)
    body = compact({**REQUEST, "params": {"pad": "x" * 100}})
    conn = connect(http_peer.value)
    conn.request("POST", "/mcp", body, {"Content-Type": "application/json"})
    assert conn.getresponse().status == 413
    conn.close()
    assert f"a request body of {len(body)} bytes is over the 64-byte limit" in str(
        refusal(http_peer)
    )


@pytest.mark.req("TX-PEER-03", "TX-FLOW-08")
def test_chunks_that_add_up_to_over_the_limit_are_refused_and_left_over(
    sse_peer: SsePeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(httpwire, "BODY_LIMIT", 20)
    chunked = b"".join(b"a\r\n" + b"0123456789" + b"\r\n" for _ in range(3)) + b"0\r\n\r\n"
    status = raw_post(sse_peer.value, b"Transfer-Encoding: chunked\r\n", chunked)
    assert status in (b"", b"HTTP/1.1 413 Request Entity Too Large\r\n"), status
    (left,) = sse_peer.drain()  # a refusal nobody expected still shows at quiescence
    assert left == {
        "$peer-failure": "peer-exchange-closed: the peer refused a POST:"
        " the chunked request body is over the 20-byte limit"
    }


@pytest.mark.req("TX-PEER-03", "TX-RUN-06")
@pytest.mark.parametrize(
    "chunked",
    [b"0x5\r\nhello\r\n0\r\n\r\n", b"-1\r\n\r\n", b"5\r\nhello, world\r\n0\r\n\r\n"],
    ids=["prefixed-size", "negative-size", "chunk-longer-than-its-size"],
)
def test_broken_chunked_framing_is_refused(http_peer: HttpPeer, chunked: bytes) -> None:
    status = raw_post(http_peer.value, b"Transfer-Encoding: chunked\r\n", chunked)
    assert status in (b"", b"HTTP/1.1 400 Bad Request\r\n"), status
    refusal(http_peer)


@pytest.mark.req("TX-PEER-08")
def test_headers_stay_with_their_message_after_a_drain(http_peer: HttpPeer) -> None:
    conn = connect(http_peer.value)
    for session in ("s-1", "s-2", "s-3"):
        note = {"jsonrpc": "2.0", "method": "notifications/" + session}
        conn.request("POST", "/mcp", compact(note), {"Mcp-Session-Id": session})
        conn.getresponse().read()
        if session == "s-2":
            assert len(http_peer.drain()) == 2
    conn.close()
    value, headers = http_peer.next_message(5)
    assert value == {"jsonrpc": "2.0", "method": "notifications/s-3"}
    assert headers is not None and headers["mcp-session-id"] == "s-3"


class _LateQueue(queue.Queue[Out]):
    """Says "empty" once, so the mailbox must go through its descriptor wait."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = True

    def get_nowait(self) -> Out:
        if self.hidden:
            self.hidden = False
            raise queue.Empty
        return super().get_nowait()


def test_a_mailbox_waits_on_a_descriptor_numbered_over_1024() -> None:
    near, far = socket.socketpair()
    high = fcntl.fcntl(near.fileno(), fcntl.F_DUPFD_CLOEXEC, 1500)  # select() stops at 1023
    sock = socket.socket(fileno=high)
    box = Mailbox(sock)
    try:
        box._items = _LateQueue()
        out = Out(b"answer")
        box.put(out)  # queued, and the wake-up pipe written
        assert box.wait() is out
        assert not box.gone
    finally:
        box.close()
        for s in (sock, near, far):
            s.close()
