"""The gateway against hostile clients: pairing guesses, foreign Host headers, slow or silent
sockets, and bursts of connections (acp.md ACP-GW-01, ACP-GW-02, ACP-GW-07, ACP-GW-11,
ACP-GW-12).

Every wait is bounded: a socket read with a timeout that expects the server to hang up, or
`wait_for`; nothing sleeps.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import requests

from tests.conftest import require_peer, wait_for
from tests.unit.gateway.conftest import MAX_MESSAGE, TOKEN, Running, demo_config
from tests.unit.gateway.test_gateway_ws import connect
from zeroclaw_ref.cli.agent import choose_agent
from zeroclaw_ref.config.store import ConfigStore
from zeroclaw_ref.core.clock import SystemClock
from zeroclaw_ref.core.ids import RandomIds
from zeroclaw_ref.gateway import pairing
from zeroclaw_ref.gateway.request import GatewayDeps
from zeroclaw_ref.gateway.server import WRONG_HOST, Gateway, host_allowed

Start = Callable[..., Running]
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BOUND = 10.0  # seconds any single wait in this file may take


@pytest.fixture
def websocket() -> ModuleType:
    module = require_peer("websocket-client")
    assert isinstance(module, ModuleType)
    return module


class FakeMonotonic:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.value = 1000.0

    def __call__(self) -> float:
        return self.value


def _code(running: Running) -> str:
    [line] = running.announced
    match = re.search(r"Pairing code: (\d{6})", line)
    assert match, line
    return match.group(1)


def _pair(running: Running, code: str) -> requests.Response:
    return requests.post(running.http("/pair"), headers={"X-Pairing-Code": code}, timeout=BOUND)


def _wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"


def _raw(port: int, data: bytes) -> bytes:
    """Send `data` on a fresh connection; read until the server closes it or, for a 101, to
    the end of the response head (bounded)."""
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
            if received.startswith(b"HTTP/1.1 101 ") and b"\r\n\r\n" in received:
                break
    return received


def _hung_up(sock: socket.socket, within: float) -> bool:
    """Whether the server closes `sock` within `within` seconds (data before the close is
    ignored; a reset counts as closed)."""
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except ConnectionError:
            return True
    return False


def _upgrade(path: str, host: str, token: str = TOKEN) -> bytes:
    key = base64.b64encode(b"0123456789abcdef").decode()
    return (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n"
        f"Authorization: Bearer {token}\r\n\r\n"
    ).encode()


# --- 1. pairing guesses --------------------------------------------------------------------


@pytest.mark.req("ACP-GW-11")
def test_five_wrong_codes_lock_pairing_out_with_429_even_for_the_right_code(
    start_gateway: Start,
) -> None:
    running = start_gateway(demo_config(tokens=()))
    clock = FakeMonotonic()
    running.gateway.state.pairing.now = clock
    code = _code(running)
    for _ in range(pairing.MAX_FAILURES):
        assert _pair(running, _wrong(code)).status_code == 403
    locked = _pair(running, code)  # right, but not even compared while locked
    assert locked.status_code == 429
    assert locked.headers["Retry-After"] == "300"
    assert "Too many wrong pairing codes" in locked.json()["error"]
    clock.value += 299.5
    assert _pair(running, code).headers["Retry-After"] == "1"
    clock.value += 0.5
    paired = _pair(running, code)  # the lock-out passed: the code still works, once
    assert paired.status_code == 200, paired.text
    assert paired.json()["token"].startswith("zc_")


@pytest.mark.req("ACP-GW-11")
def test_each_further_lock_out_doubles_up_to_a_day_and_success_clears_the_record() -> None:
    clock = FakeMonotonic()
    gate = pairing.Pairing(clock)
    pauses: list[int] = []
    for _ in range(12):
        for _ in range(pairing.MAX_FAILURES):
            assert gate.consume("x") is False  # no code at all: every guess is wrong
        with pytest.raises(pairing.PairingLocked) as caught:
            gate.consume("x")
        pauses.append(caught.value.retry_after)
        clock.value += caught.value.retry_after
    assert pauses[:4] == [300, 600, 1200, 2400]
    assert max(pauses) == pauses[-1] == 86_400

    gate._code = "123456"
    assert gate.consume("123456") is True
    for _ in range(pairing.MAX_FAILURES):
        gate.consume("x")
    with pytest.raises(pairing.PairingLocked) as caught:
        gate.consume("x")
    assert caught.value.retry_after == 300  # back to the first pause


@pytest.mark.req("ACP-GW-11")
def test_concurrent_guesses_cannot_overrun_the_budget(start_gateway: Start) -> None:
    running = start_gateway(demo_config(tokens=()))
    code = _code(running)
    statuses: list[int] = []
    lock = threading.Lock()
    go = threading.Barrier(40)

    def guess() -> None:
        go.wait(BOUND)
        status = _pair(running, _wrong(code)).status_code
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=guess) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND * 3)
    assert sorted(statuses) == [403] * pairing.MAX_FAILURES + [429] * 35


@pytest.mark.req("ACP-GW-11")
def test_the_code_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = pairing.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(pairing.hmac, "compare_digest", spy)
    gate = pairing.Pairing()
    gate._code = "123456"
    assert gate.consume("123457") is False
    assert gate.consume("123456") is True
    assert compared == [(b"123456", b"123457"), (b"123456", b"123456")]


# --- 2. the Host header --------------------------------------------------------------------

LOCAL = frozenset({"localhost", "127.0.0.1", "::1"})


@pytest.mark.req("ACP-GW-11", "ACP-GW-12")
@pytest.mark.parametrize(
    ("value", "names", "any_ip", "allowed"),
    [
        ("127.0.0.1", LOCAL, False, True),
        ("127.0.0.1:42617", LOCAL, False, True),
        ("LocalHost:1", LOCAL, False, True),
        ("[::1]", LOCAL, False, True),
        ("[::1]:42617", LOCAL, False, True),
        ("[0:0::1]:9", LOCAL, False, True),
        ("gw.lan:80", LOCAL | {"gw.lan"}, False, True),  # the configured bind name
        ("evil.example", LOCAL, False, False),
        ("evil.example:42617", LOCAL, False, False),
        ("localhost.evil.example", LOCAL, False, False),
        ("10.0.0.5", LOCAL, False, False),
        ("10.0.0.5:8080", LOCAL, True, True),  # a wildcard bind: any IP literal
        ("evil.example", LOCAL, True, False),  # ... but never a DNS name
        ("::1", LOCAL, False, False),  # an IPv6 literal needs brackets
        ("[localhost]", LOCAL, False, False),
        ("[::1", LOCAL, False, False),
        ("127.0.0.1:x", LOCAL, False, False),
        ("127.0.0.1:", LOCAL, False, False),
        ("", LOCAL, False, False),
    ],
)
def test_host_values(value: str, names: frozenset[str], any_ip: bool, allowed: bool) -> None:
    assert host_allowed(value, names, any_ip) is allowed


@pytest.mark.req("ACP-GW-11", "ACP-GW-12", "ACP-GW-02")
def test_a_foreign_host_is_refused_on_every_route_before_anything_else(
    start_gateway: Start,
) -> None:
    running = start_gateway(demo_config(tokens=()))
    code = _code(running)
    evil = {"Host": f"evil.example:{running.port}"}
    shown = requests.get(running.http("/pair/code"), headers=evil, timeout=BOUND)
    assert (shown.status_code, shown.json()) == (421, {"error": WRONG_HOST})
    assert code not in shown.text
    paired = requests.post(
        running.http("/pair"), headers={**evil, "X-Pairing-Code": code}, timeout=BOUND
    )
    assert paired.status_code == 421  # and the code was not consumed:
    token = _pair(running, code).json()["token"]

    auth = {"Authorization": f"Bearer {token}"}
    for path in ("/api/tools", "/config", "/nowhere"):
        refused = requests.get(running.http(path), headers={**auth, **evil}, timeout=BOUND)
        assert refused.status_code == 421, path
    upgrade = _raw(running.port, _upgrade("/acp", "evil.example", token))
    assert upgrade.startswith(b"HTTP/1.1 421 "), upgrade
    assert WRONG_HOST.encode() in upgrade

    for host in ("localhost", f"localhost:{running.port}", f"127.0.0.1:{running.port}"):
        fine = requests.get(
            running.http("/api/tools"), headers={**auth, "Host": host}, timeout=BOUND
        )
        assert fine.status_code == 200, host
    accepted = _raw(running.port, _upgrade("/acp", f"localhost:{running.port}", token))
    assert accepted.startswith(b"HTTP/1.1 101 "), accepted


@pytest.mark.req("ACP-GW-12", "ACP-BR-04")
def test_the_configured_host_name_is_accepted_even_when_bound_elsewhere(
    start_gateway: Start,
) -> None:
    running = start_gateway(demo_config(gateway='host = "gw.lan"'))  # bound to 127.0.0.1
    headers = {**AUTH, "Host": f"gw.lan:{running.port}"}
    assert requests.get(running.http("/api/tools"), headers=headers, timeout=BOUND).ok


@pytest.mark.req("ACP-GW-12")
def test_a_request_without_exactly_one_host_is_refused(start_gateway: Start) -> None:
    running = start_gateway()
    bare = _raw(running.port, b"GET /pair/code HTTP/1.0\r\n\r\n")
    assert bare.startswith(b"HTTP/1.1 400 "), bare
    twice = b"GET /pair/code HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n"
    assert _raw(running.port, twice).startswith(b"HTTP/1.1 400 ")


# --- 3. silent and slow sockets ------------------------------------------------------------


@pytest.mark.req("ACP-GW-01")
def test_a_silent_connection_is_dropped_after_the_header_budget(start_gateway: Start) -> None:
    running = start_gateway()
    running.gateway.limits.header_secs = 0.3
    with socket.create_connection(("127.0.0.1", running.port), timeout=BOUND) as sock:
        started = time.monotonic()
        assert _hung_up(sock, BOUND)
        assert time.monotonic() - started < BOUND / 2


@pytest.mark.req("ACP-GW-01")
def test_headers_sent_a_byte_at_a_time_are_bounded_in_total(start_gateway: Start) -> None:
    running = start_gateway()
    running.gateway.limits.header_secs = 0.5
    drip = b"GET /pair/code HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 10_000
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", running.port), timeout=BOUND) as sock:
        for index in range(len(drip)):
            assert time.monotonic() - started < BOUND, "never dropped"
            try:
                sock.sendall(drip[index : index + 1])
            except ConnectionError:
                break
            # pace the drip by waiting (up to 50 ms) for the hang-up we expect; each byte
            # arrives well inside any per-read timeout, so only a total budget ends this
            if _hung_up(sock, 0.05):
                break
        else:
            pytest.fail("the whole drip was accepted")
    assert time.monotonic() - started < BOUND / 2


@pytest.mark.req("ACP-GW-01", "ACP-GW-11")
def test_a_body_that_never_arrives_is_dropped_after_the_body_budget(
    start_gateway: Start,
) -> None:
    running = start_gateway(demo_config(tokens=()))
    running.gateway.limits.body_secs = 0.3
    head = b"POST /pair HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pairing-Code: 1\r\nContent-Length: 9\r\n"
    with socket.create_connection(("127.0.0.1", running.port), timeout=BOUND) as sock:
        sock.sendall(head + b"\r\nabc")
        assert _hung_up(sock, BOUND)


@pytest.mark.req("ACP-GW-07")
def test_an_established_websocket_outlives_the_header_budget(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway()
    running.gateway.limits.header_secs = 0.2
    client = connect(websocket, running)
    assert not _hung_up(client.ws.sock, 1.0)  # five header budgets of silence: still open
    client.ws.sock.settimeout(BOUND)
    assert client.call("initialize", {"protocolVersion": 1})["result"]["protocolVersion"] == 1
    client.ws.close()


@pytest.mark.req("ACP-GW-01", "ACP-GW-07")
def test_unauthenticated_connections_are_capped_and_websockets_do_not_count(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway()
    gateway = running.gateway
    gateway.limits.max_pending = 2
    client = connect(websocket, running)  # routed: holds no slot
    idle = [socket.create_connection(("127.0.0.1", running.port), timeout=BOUND) for _ in "ab"]
    wait_for(lambda: gateway.pending_connections == 2, "two idle connections admitted")
    with socket.create_connection(("127.0.0.1", running.port), timeout=BOUND) as third:
        assert _hung_up(third, BOUND)  # shed at once, though the header budget is 10 s
    idle.pop().close()
    wait_for(lambda: gateway.pending_connections == 1, "a slot freed")
    shown = requests.get(running.http("/pair/code"), timeout=BOUND)
    assert shown.json() == {"pairing_code": None}
    assert client.call("initialize", {})["result"]["protocolVersion"] == 1
    for sock in idle:
        sock.close()
    client.ws.close()


# --- 4. a burst of clients -----------------------------------------------------------------

BURST = 200


@pytest.fixture
def paused_gateway(tmp_path: Path) -> Iterator[Gateway]:
    """A gateway that listens but does not accept until the test calls `start()`."""
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(demo_config())
    store = ConfigStore(config_dir, config_dir / "data", {})
    deps = GatewayDeps(store, RandomIds(), SystemClock(), choose_agent, print, MAX_MESSAGE)
    gateway = Gateway(deps, "127.0.0.1", 0)
    yield gateway
    if gateway._serving is not None:
        gateway.close()


@pytest.mark.req("ACP-GW-01", "ACP-GW-07")
def test_two_hundred_clients_connecting_at_once_all_get_their_websocket(
    websocket: ModuleType, paused_gateway: Gateway
) -> None:
    port = paused_gateway.address[1]
    # Nothing accepts yet, so every connection waits in the listen queue: with socketserver's
    # backlog of 5 the seventh connect would time out.
    socks: list[socket.socket] = []
    try:
        for index in range(BURST):
            try:
                socks.append(socket.create_connection(("127.0.0.1", port), timeout=3))
            except TimeoutError:
                pytest.fail(f"connection {index + 1} of {BURST} was not queued")
        paused_gateway.start()
        answers: list[int] = []
        failures: list[str] = []
        lock = threading.Lock()

        def session(sock: socket.socket) -> None:
            try:
                ws = websocket.create_connection(
                    f"ws://127.0.0.1:{port}/acp",
                    socket=sock,
                    header=[f"Authorization: Bearer {TOKEN}"],
                    timeout=60,
                )
                ws.send(
                    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
                )
                reply = json.loads(ws.recv())
                ws.close()
                with lock:
                    answers.append(reply["result"]["protocolVersion"])
            except Exception as exc:  # collected, reported below
                with lock:
                    failures.append(repr(exc))

        threads = [threading.Thread(target=session, args=(s,)) for s in socks]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(90)
        assert failures == []
        assert answers == [1] * BURST
    finally:
        for sock in socks:
            sock.close()
