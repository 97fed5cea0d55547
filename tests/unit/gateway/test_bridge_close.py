"""How `zeroclaw-acp-bridge` ends, against a scripted WebSocket server (acp.md ACP-BR-10).

The bridge runs as a real process (`python -m zeroclaw_ref acp-bridge`); the server side is a
small wsproto server in this test, because the real gateway cannot be made to send a frame
*after* it has received the bridge's close frame (ACP-GW-10 drops late results), and that is
exactly the window this rule is about: responses already on their way when standard input
ends must still reach standard output, and the bridge ends only once the close completes.
Frames the script sends after the bridge's close are written by hand (RFC 6455 §5.2: an
unmasked server frame), since wsproto refuses to send messages once the peer has closed.
"""

from __future__ import annotations

import os
import queue
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from wsproto import WSConnection
from wsproto.connection import ConnectionType
from wsproto.events import AcceptConnection, CloseConnection, Event, Request, TextMessage

from zeroclaw_ref.gateway.ws import SUBPROTOCOL

WAIT = 10.0  # a safety net for every wait; never a synchronisation
BRIDGE = (sys.executable, "-m", "zeroclaw_ref", "acp-bridge")


def server_text_frame(text: str) -> bytes:
    """One final, unmasked text frame (FIN + opcode 1), as a server sends it."""
    payload = text.encode("utf-8")
    assert len(payload) < 126  # the one-byte length form is enough for these lines
    return struct.pack("!BB", 0x81, len(payload)) + payload


@dataclass
class ScriptedServer:
    """One WebSocket connection on a loopback port; received events land in `events`."""

    listener: socket.socket
    events: queue.Queue[Event] = field(default_factory=queue.Queue)
    conn: socket.socket | None = None
    proto: WSConnection = field(default_factory=lambda: WSConnection(ConnectionType.SERVER))
    accepted: threading.Event = field(default_factory=threading.Event)

    @property
    def port(self) -> int:
        port: int = self.listener.getsockname()[1]
        return port

    def serve(self) -> None:
        """Accept one client, complete the handshake, then queue every event until EOF."""
        conn, _ = self.listener.accept()
        self.conn = conn
        while True:
            data = conn.recv(65536)
            self.proto.receive_data(data or None)
            for event in self.proto.events():
                if isinstance(event, Request):
                    conn.sendall(self.proto.send(AcceptConnection(subprotocol=SUBPROTOCOL)))
                    self.accepted.set()
                else:
                    self.events.put(event)
            if not data:
                return

    def next_event(self) -> Event:
        try:
            return self.events.get(timeout=WAIT)
        except queue.Empty:
            pytest.fail("the scripted server received nothing from the bridge")

    def send_raw(self, data: bytes) -> None:
        assert self.conn is not None
        self.conn.sendall(data)

    def send(self, event: Event) -> None:
        self.send_raw(self.proto.send(event))


@dataclass
class Bridge:
    proc: subprocess.Popen[bytes]
    lines: queue.Queue[bytes]

    def write(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def end_input(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def next_line(self) -> bytes:
        try:
            return self.lines.get(timeout=WAIT)
        except queue.Empty:
            pytest.fail("the bridge wrote no line to standard output")

    def wait(self) -> int:
        try:
            return self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            pytest.fail("the bridge did not exit")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    listener = socket.create_server(("127.0.0.1", 0))
    scripted = ScriptedServer(listener)
    thread = threading.Thread(target=scripted.serve, name="scripted-ws", daemon=True)
    thread.start()
    yield scripted
    if scripted.conn is not None:
        scripted.conn.close()
    listener.close()


@pytest.fixture
def bridge(tmp_path: Path, server: ScriptedServer) -> Iterator[Bridge]:
    config_dir = tmp_path / "bridge"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(
        f"[gateway]\nport = {server.port}\nrequire_pairing = false\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    env.update({"HOME": str(tmp_path), "LANG": "C.UTF-8"})
    proc = subprocess.Popen(
        [*BRIDGE, "--config-dir", str(config_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    lines: queue.Queue[bytes] = queue.Queue()
    stdout = proc.stdout
    assert stdout is not None

    def read_lines() -> None:
        for line in iter(stdout.readline, b""):
            lines.put(line)
        lines.put(b"")  # end of output

    threading.Thread(target=read_lines, name="bridge-stdout", daemon=True).start()
    if not server.accepted.wait(WAIT):
        proc.kill()
        pytest.fail("the bridge never completed the WebSocket handshake")
    try:
        yield Bridge(proc, lines)
    finally:
        proc.kill()
        proc.wait(timeout=WAIT)


@pytest.mark.req("ACP-BR-10", "ACP-BR-09")
def test_end_of_input_sends_a_close_and_frames_sent_before_its_reply_reach_stdout(
    server: ScriptedServer, bridge: Bridge
) -> None:
    bridge.write('{"id":1}')
    first = server.next_event()
    assert isinstance(first, TextMessage) and first.data == '{"id":1}'
    bridge.end_input()
    # [ACP-BR-10] end of input is a close frame (normal closure), not a dropped connection
    close = server.next_event()
    assert isinstance(close, CloseConnection), close
    assert close.code != 1006  # wsproto's code for a connection that ended without a frame
    # The answer to line 1 and a notification were already on their way: the server sends
    # them after it has the bridge's close frame, before its own close reply.
    server.send_raw(server_text_frame('{"id":1,"result":{}}'))
    server.send_raw(server_text_frame('{"method":"late"}'))
    assert bridge.next_line() == b'{"id":1,"result":{}}\n'
    assert bridge.next_line() == b'{"method":"late"}\n'
    assert bridge.proc.poll() is None  # the close has not completed yet: still relaying
    server.send(CloseConnection(code=1000))
    assert bridge.wait() == 0
    assert bridge.next_line() == b""  # nothing else was written


@pytest.mark.req("ACP-BR-10", "ACP-BR-09")
def test_the_server_closing_first_ends_the_bridge_with_status_zero(
    server: ScriptedServer, bridge: Bridge
) -> None:
    bridge.write('{"id":1}')
    assert isinstance(server.next_event(), TextMessage)
    server.send(TextMessage(data='{"id":1,"result":{}}'))
    server.send(CloseConnection(code=1000))  # standard input stays open
    assert bridge.next_line() == b'{"id":1,"result":{}}\n'
    assert bridge.wait() == 0
    reply = server.next_event()  # the bridge completes the closing handshake
    assert isinstance(reply, CloseConnection) and reply.code == 1000
    assert bridge.next_line() == b""
