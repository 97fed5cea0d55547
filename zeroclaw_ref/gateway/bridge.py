"""`zeroclaw-acp-bridge`: ACP between standard streams and the gateway's `/acp` (acp.md §13.3).

Plan (DESIGN §7.9): the main thread reads standard input and queues one text frame per line on
the connection's `FrameChannel`; one thread reads the socket and writes each received message
to standard output followed by a newline. End of input sends a close frame and waits, bounded,
for the close to complete (ACP-BR-10); when the server closes first, the socket thread wakes the
main thread with a signal (a blocking read is only interruptible that way, as in `acp/stdio.py`).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import BinaryIO, TextIO

import requests
from wsproto import WSConnection
from wsproto.connection import ConnectionState, ConnectionType
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)

from zeroclaw_ref.config.model import ConfigError
from zeroclaw_ref.config.write import read_document
from zeroclaw_ref.wire.jsonrpc import Invalid, classify, error_line

from .ws import SUBPROTOCOL, Assembler, FrameChannel

# [ACP-BR-03] two spaces after `found.` and after `host?`.
NO_CONFIG = (
    "ERROR: config.toml not found.  Are you sure the bridge and ZeroClaw are running on the "
    "same host?  Tool use will not work remotely!"
)
# [ACP-BR-07]
NO_TOKEN = (
    "ERROR: Gateway pairing is active but no ACP bridge token is cached. Take the pairing code "
    "the gateway printed at startup, then run `zeroclaw-acp-bridge --pair-code <code>`, or set "
    "ZEROCLAW_ACP_BRIDGE_TOKEN."
)
TOKEN_FILE = "acp-bridge-token"
CONNECT_TIMEOUT_SECS = 10.0  # Design: bounds the TCP connect, the handshake and pairing calls
CLOSE_WAIT_SECS = 10.0  # Design: how long end of input waits for the close to complete
_WAKE = signal.SIGUSR1
_NO_LIMIT = 1 << 62  # the bridge relays whatever the gateway sends


@dataclass(frozen=True, slots=True)
class BridgeOptions:
    """What the command line and the environment say (read in `cli/`, DESIGN §14)."""

    config_dir: Path
    env_token: str | None = None  # ZEROCLAW_ACP_BRIDGE_TOKEN
    env_pair_code: str | None = None  # ZEROCLAW_ACP_PAIRING_CODE
    pair_code: str | None = None  # --pair-code


@dataclass(frozen=True, slots=True)
class Target:
    """The gateway address from `[gateway]` (Table 13-1)."""

    host: str
    port: int
    prefix: str
    require_pairing: bool

    @property
    def authority(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """[ACP-BR-04] no `?agent=`, ever."""
        return f"ws://{self.authority}{self.prefix}/acp"

    @property
    def http_base(self) -> str:
        return f"http://{self.authority}{self.prefix}"


class BridgeError(Exception):
    """A startup failure: the message is the exact stderr line; exit status 1."""


def read_target(config_dir: Path) -> Target:
    """[ACP-BR-03] [ACP-BR-04] only `[gateway]` is read; wrong types fall back to defaults.

    Raises:
        BridgeError: no config.toml, or one that does not parse.
    """
    try:
        document = read_document(config_dir / "config.toml")
    except FileNotFoundError:
        raise BridgeError(NO_CONFIG) from None
    except ConfigError as exc:
        raise BridgeError("\n".join(f"ERROR: {line}" for line in exc.lines)) from None
    raw = document.get("gateway")
    table = raw if isinstance(raw, dict) else {}
    host, port = table.get("host"), table.get("port")
    prefix, pairing = table.get("path_prefix"), table.get("require_pairing")
    return Target(
        host=host if isinstance(host, str) and host else "127.0.0.1",
        port=port if isinstance(port, int) and not isinstance(port, bool) else 42617,
        prefix=prefix.rstrip("/") if isinstance(prefix, str) else "",
        require_pairing=pairing if isinstance(pairing, bool) else True,
    )


def obtain_token(opts: BridgeOptions, target: Target) -> str | None:
    """[ACP-BR-05] [ACP-BR-06] the environment, the cached file, else a pairing exchange.

    Raises:
        BridgeError: the gateway could not be reached for pairing (ACP-BR-08).
    """
    if not target.require_pairing:
        return None
    if opts.env_token and opts.env_token.strip():
        return opts.env_token.strip()
    cached = opts.config_dir / TOKEN_FILE
    try:
        text = cached.read_text("utf-8").strip()
    except OSError:
        text = ""
    if text:
        return text
    token = _pair(opts, target)
    if token is None:
        raise BridgeError(NO_TOKEN)
    fd = os.open(cached, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    cached.chmod(0o600)
    return token


def _pair(opts: BridgeOptions, target: Target) -> str | None:
    code = (opts.pair_code or opts.env_pair_code or "").strip()
    try:
        if not code:
            answer = requests.get(f"{target.http_base}/pair/code", timeout=CONNECT_TIMEOUT_SECS)
            fetched = answer.json().get("pairing_code") if answer.ok else None
            code = fetched if isinstance(fetched, str) else ""
        if not code:
            return None
        answer = requests.post(
            f"{target.http_base}/pair",
            headers={"X-Pairing-Code": code},
            timeout=CONNECT_TIMEOUT_SECS,
        )
        token = answer.json().get("token") if answer.ok else None
    except requests.ConnectionError as exc:
        raise BridgeError(f"failed to connect to {target.url}: {exc}") from None
    except (requests.RequestException, ValueError, AttributeError):
        return None
    return token if isinstance(token, str) and token else None


def connect(target: Target, token: str | None) -> tuple[socket.socket, WSConnection, bytes]:
    """Open the socket and complete the handshake; returns any bytes read past it.

    Raises:
        BridgeError: with the ACP-BR-08 line (refused connection, 401, bad handshake).
    """
    fail = f"failed to connect to {target.url}: "
    try:
        sock = socket.create_connection((target.host, target.port), CONNECT_TIMEOUT_SECS)
    except OSError as exc:
        raise BridgeError(fail + str(exc)) from None
    proto = WSConnection(ConnectionType.CLIENT)
    headers = [(b"Authorization", f"Bearer {token}".encode())] if token else []
    request = Request(
        host=target.authority,
        target=f"{target.prefix}/acp",
        subprotocols=[SUBPROTOCOL],
        extra_headers=headers,
    )
    try:
        sock.sendall(proto.send(request))
        rejected: RejectConnection | None = None
        body = b""
        while True:
            data = sock.recv(65536)
            proto.receive_data(data or None)
            for event in proto.events():
                if isinstance(event, AcceptConnection):
                    sock.settimeout(None)
                    return sock, proto, b""
                if isinstance(event, RejectConnection):
                    rejected = event
                elif isinstance(event, RejectData):
                    body += bytes(event.data)
                    if event.body_finished and rejected is not None:
                        text = body.decode("utf-8", "replace").strip()
                        raise BridgeError(f"{fail}HTTP {rejected.status_code}: {text}")
            if not data:
                raise BridgeError(fail + "connection closed during the handshake")
    except OSError as exc:
        sock.close()
        raise BridgeError(fail + str(exc)) from None
    except BridgeError:
        sock.close()
        raise


class _Stdin:
    """Line reader over fd 0 whose blocking read a signal can interrupt (PEP 475)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.stopping = threading.Event()
        self._in_read = False

    def lines(self) -> Iterator[bytes]:
        """Each input line without its terminator, as bytes (decoding is the caller's)."""
        pending = b""
        while not self.stopping.is_set():
            self._in_read = True
            try:
                chunk = os.read(self._fd, 65536)
            finally:
                self._in_read = False
            if not chunk:
                break
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                yield line.removesuffix(b"\r")
        if pending and not self.stopping.is_set():
            yield pending.removesuffix(b"\r")

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping.set()
        if self._in_read:
            raise InterruptedError


def _pump_socket(
    sock: socket.socket,
    channel: FrameChannel,
    write_line: Callable[[bytes], None],
    closed: Callable[[], None],
) -> None:
    """[ACP-BR-09] every received message to stdout plus `\\n`, flushed; ends at the close."""
    assembler = Assembler(_NO_LIMIT)
    try:
        while True:
            try:
                data: bytes | None = sock.recv(65536) or None
            except OSError:
                data = None
            for event in channel.feed(data):
                if isinstance(event, TextMessage | BytesMessage):
                    message = assembler.add(event)
                    if message is not None:
                        write_line(message[0])
                elif isinstance(event, Ping):
                    channel.send_pong(bytes(event.payload))
                elif isinstance(event, CloseConnection):
                    if channel.state is ConnectionState.REMOTE_CLOSING:
                        channel.send_close(event.code)
                    return
            if data is None:
                return
    finally:
        closed()


def _answer_locally(raw: bytes, write_line: Callable[[bytes], None]) -> None:
    """[ACP-TR-09] [ACP-TR-12] a line that is not UTF-8 gets the stdio server's own answer.

    Design: such a line cannot travel as a text frame (RFC 6455 §5.6), and forwarding a
    repaired copy would have the server act on text the client never sent. So the bridge
    answers it the way `acp` over stdio does: a parse error with a null id, from the same
    classifier, so the texts cannot drift apart.
    """
    verdict = classify(raw)
    if isinstance(verdict, Invalid) and verdict.reply is not None:
        write_line(error_line(verdict.id, verdict.reply).encode("utf-8"))


def run_bridge(opts: BridgeOptions, out: BinaryIO, err: TextIO) -> int:
    """Relay until either side closes; returns the exit status (ACP-BR-01..10)."""
    try:
        target = read_target(opts.config_dir)
        token = obtain_token(opts, target)
        sock, proto, _ = connect(target, token)
    except BridgeError as exc:
        err.write(f"{exc}\n")
        err.flush()
        return 1
    channel = FrameChannel(proto, sock)
    stdin = _Stdin(0)
    main_ident = threading.get_ident()
    server_gone = threading.Event()

    def closed() -> None:
        server_gone.set()
        if not stdin.stopping.is_set():
            stdin.stopping.set()
            signal.pthread_kill(main_ident, _WAKE)  # wake the blocked stdin read

    previous = signal.signal(_WAKE, stdin.on_signal)
    out_lock = threading.Lock()

    def write_line(data: bytes) -> None:
        # Two writers (the socket pump, and the main thread's local answers): each line whole.
        with out_lock:
            out.write(data + b"\n")
            out.flush()

    reader = threading.Thread(
        target=_pump_socket,
        args=(sock, channel, write_line, closed),
        name="bridge-socket",
        daemon=True,
    )
    reader.start()
    try:
        for raw in stdin.lines():
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                _answer_locally(raw, write_line)
                continue
            channel.send_text(line)
    except InterruptedError:
        pass
    finally:
        stdin.stopping.set()
    if not server_gone.is_set():
        channel.send_close(1000)  # [ACP-BR-10] then keep writing what arrives until it closes
        server_gone.wait(CLOSE_WAIT_SECS)
    reader.join(CLOSE_WAIT_SECS)
    channel.close()
    sock.close()
    signal.signal(_WAKE, previous)
    return 0
