"""Our client against a 2026-07-28 server on the official SDK (mcp.md §14), the modern peer
tests/peers/python_mcp_modern_peer.py, over stdio and Streamable HTTP, dual-era and
modern-only.

What a real modern server sees is read from the peer's journal (one JSON line per request,
and over HTTP one per HTTP request with its MCP headers), so each point is proven on the wire:

- discovery: which era each peer mode and each client setting ends in (MCP-MOD-01, -02, -10);
- the `_meta` envelope on every request, capabilities only for installed handlers (MCP-MOD-05);
- the HTTP headers, custom `Mcp-Param-*` ones in the base64 form where needed, and no session
  machinery (MCP-MOD-14, -15, -16, -17);
- multi round-trip requests answered by the elicitation handler, the state echoed byte for
  byte, nothing leaking into the next call (MCP-MOD-08, -09);
- list caching within `ttlMs`, and `subscriptions/listen` turning a change into a refresh in
  the modern era as `notifications/tools/list_changed` does in the legacy one (MCP-MOD-12, -13).

Skipped without the `mcp` package (failed instead under ZEROCLAW_REF_REQUIRE_PEERS=1). HTTP
peers are started once per module on free loopback ports and always terminated.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_peer, wait_for
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.mcp import ClientHandlers, McpOptions, McpRegistry
from zeroclaw_ref.mcp import era as eras

pytestmark = pytest.mark.peer("mcp-python-sdk")

PEER_SCRIPT = Path(__file__).resolve().parents[1] / "peers" / "python_mcp_modern_peer.py"
OPTS = McpOptions(init_timeout_s=30, list_timeout_s=30, default_tool_timeout_s=30)
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
SERVER = "m"
MODES = [("stdio", "dual"), ("stdio", "modern"), ("http", "dual"), ("http", "modern")]
MODE_IDS = [f"{t}-{e}" for t, e in MODES]
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
# The peer's requestState for ask_name (kept in step with the peer: quotes, spaces, non-ASCII).
STATE = 'peer-state: "ünïcode" {1}  two  spaces'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Peer:
    """One peer mode: how to reach it and what it has seen since `since`."""

    transport: str
    era: str
    journal: Path
    url: str | None = None
    since: int = 0

    def config(self, **fields: Any) -> McpServerConfig:
        if self.transport == "stdio":
            args = (str(PEER_SCRIPT), "--era", self.era, "--journal", str(self.journal))
            extra = tuple(fields.pop("extra_args", ()))
            return McpServerConfig(name=SERVER, command=sys.executable, args=args + extra, **fields)
        return McpServerConfig(name=SERVER, transport="http", url=self.url, **fields)

    def mark(self) -> None:
        """Forget what was seen so far (a network peer outlives one test)."""
        self.since = len(self._lines())

    def _lines(self) -> list[str]:
        text = self.journal.read_text(encoding="utf-8") if self.journal.is_file() else ""
        return text.splitlines()

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self._lines()[self.since :]]

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        seen = [e for e in self.entries() if "method" in e]
        return [e for e in seen if method is None or e["method"] == method]

    def http(self) -> list[dict[str, Any]]:
        return [e for e in self.entries() if "http" in e]


@pytest.fixture(scope="module")
def http_peers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Peer]]:
    """era -> a running HTTP peer of that era (started on first use)."""
    require_peer("mcp-python-sdk")
    logs = tmp_path_factory.mktemp("modern-peer")
    running: dict[str, tuple[subprocess.Popen[bytes], Peer]] = {}

    def start(era: str) -> Peer:
        if era in running:
            proc, peer = running[era]
            assert proc.poll() is None, f"modern peer ({era}) exited: {proc.returncode}"
            return peer
        port = _free_port()
        journal = logs / f"http-{era}.jsonl"
        log_path = logs / f"http-{era}.log"
        argv = [sys.executable, str(PEER_SCRIPT), "--transport", "http", "--port", str(port)]
        argv += ["--era", era, "--journal", str(journal)]
        with log_path.open("wb") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        peer = Peer("http", era, journal, f"http://127.0.0.1:{port}/mcp")
        running[era] = (proc, peer)
        wait_for(
            lambda: _listening(port) or proc.poll() is not None,
            f"modern peer ({era}) on port {port}",
            timeout=30,
            detail=lambda: log_path.read_text(errors="replace")[-2000:],
        )
        if proc.poll() is not None:
            pytest.fail(f"modern peer ({era}) exited:\n{log_path.read_text(errors='replace')}")
        return peer

    yield start
    for proc, _ in running.values():
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(params=MODES, ids=MODE_IDS)
def peer(request: pytest.FixtureRequest, http_peers: Callable[[str], Peer], tmp_path: Path) -> Peer:
    transport, era = request.param
    if transport == "stdio":
        return Peer("stdio", era, tmp_path / "journal.jsonl")
    found = http_peers(era)
    found.mark()
    return found


@pytest.fixture(autouse=True)
def fresh_eras() -> Iterator[None]:
    """Every test finds the era itself (the cache is per process, MCP-MOD-03)."""
    eras.clear()
    yield
    eras.clear()


Connect = Callable[..., McpRegistry]


@pytest.fixture
def connect() -> Iterator[Connect]:
    made: list[McpRegistry] = []

    def make(peer: Peer, handlers: ClientHandlers | None = None, **fields: Any) -> McpRegistry:
        registry = McpRegistry.connect_all([peer.config(**fields)], handlers=handlers, options=OPTS)
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()


def _answer(params: JSONObject) -> JSONObject:
    """An elicitation handler: `Ada` for a name, `blue` for a colour."""
    schema = params.get("requestedSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    field = next(iter(props)) if isinstance(props, dict) and props else "name"
    return {"action": "accept", "content": {field: "Ada" if field == "name" else "blue"}}


ELICIT = ClientHandlers(elicitation=_answer)


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


def _call(registry: McpRegistry, tool: str, arguments: JSONObject | None = None) -> str:
    return _text(registry.call_tool(f"{SERVER}__{tool}", arguments or {}))


# --- discovery ------------------------------------------------------------------------------


@pytest.mark.req("MCP-MOD-01", "MCP-MOD-02", "MCP-MOD-05", "MCP-MOD-10", "MCP-PEER-05")
def test_auto_detection_ends_modern_without_any_handshake(peer: Peer, connect: Connect) -> None:
    registry = connect(peer)
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    connection = registry.connection(SERVER)
    assert (connection.era, connection.protocol_version) == ("modern", MODERN)
    assert [t.name for t in registry.tools()][:5] == [
        "echo",
        "ask_name",
        "ask_twice",
        "grow",
        "region",
    ]
    assert _call(registry, "echo", {"message": "hi"}) == "Echo: hi"
    seen = peer.requests()
    assert seen[0]["method"] == "server/discover"  # the probe is the first thing it sees
    # [MCP-MOD-10] nothing of the handshake era reaches a modern server
    legacy_only = {"initialize", "notifications/initialized", "ping", "logging/setLevel"}
    assert not legacy_only & {e["method"] for e in seen}
    assert all(e["era"] == "modern" for e in seen), seen


@pytest.mark.req("MCP-MOD-01", "MCP-MOD-02")
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_dual_era_server_forced_legacy_speaks_the_handshake(
    transport: str, http_peers: Callable[[str], Peer], tmp_path: Path, connect: Connect
) -> None:
    peer = (
        Peer("stdio", "dual", tmp_path / "j.jsonl") if transport == "stdio" else http_peers("dual")
    )
    peer.mark()
    registry = connect(peer, era="legacy")
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    connection = registry.connection(SERVER)
    assert (connection.era, connection.protocol_version) == ("legacy", HANDSHAKE)
    seen = peer.requests()
    assert seen[0]["method"] == "initialize"
    assert "server/discover" not in {e["method"] for e in seen}
    assert all(e["era"] == "legacy" for e in seen)
    assert _call(registry, "echo", {"message": "old"}) == "Echo: old"


@pytest.mark.req("MCP-MOD-01", "MCP-HTTP-41")
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_modern_only_server_refuses_the_handshake_with_a_clear_reason(
    transport: str, http_peers: Callable[[str], Peer], tmp_path: Path, connect: Connect
) -> None:
    peer = (
        Peer("stdio", "modern", tmp_path / "j.jsonl")
        if transport == "stdio"
        else http_peers("modern")
    )
    peer.mark()
    registry = connect(peer, era="legacy")
    assert registry.servers() == ()
    reason = registry.connect_failure(SERVER) or ""
    if transport == "stdio":
        assert "-32022" in reason and "2026-07-28" in reason, reason
        assert [e["method"] for e in peer.requests()] == ["initialize"]
    else:
        # Over HTTP the refusal is a 400 before any JSON-RPC is served (MCP-HTTP-41 text).
        assert reason.endswith("MCP server returned HTTP 400"), reason
        assert [e["http"] for e in peer.http()] == ["POST"]


# --- the envelope and the headers -------------------------------------------------------------


@pytest.mark.req("MCP-MOD-05")
@pytest.mark.parametrize("handlers", [None, ELICIT], ids=["no-handlers", "elicitation"])
def test_every_request_carries_the_envelope_with_only_backed_capabilities(
    peer: Peer, connect: Connect, handlers: ClientHandlers | None
) -> None:
    registry = connect(peer, handlers)
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    _call(registry, "echo", {"message": "x"})
    seen = peer.requests()
    assert {e["method"] for e in seen} >= {"server/discover", "tools/list", "tools/call"}
    for entry in seen:
        meta = entry["meta"]
        assert meta[META_VERSION] == MODERN, entry
        assert meta[META_INFO]["name"] == "zeroclaw_ref"
        caps = meta[META_CAPS]
        assert set(caps) == (set() if handlers is None else {"elicitation"}), entry


@pytest.mark.req("MCP-MOD-14", "MCP-MOD-15", "MCP-MOD-16", "MCP-MOD-17")
@pytest.mark.parametrize("era", ["dual", "modern"])
def test_modern_posts_carry_the_mcp_headers_and_no_session(
    era: str, http_peers: Callable[[str], Peer], connect: Connect
) -> None:
    peer = http_peers(era)
    peer.mark()
    registry = connect(peer)
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    assert _call(registry, "region", {"region": "Zürich", "count": 3}) == "region=Zürich count=3"
    assert _call(registry, "region", {"region": "eu", "count": None}) == "region=eu count=None"
    registry.close()
    http = peer.http()
    assert http and {e["http"] for e in http} == {"POST"}  # no GET stream, no DELETE
    for entry in http:
        headers = entry["headers"]
        assert headers["mcp-protocol-version"] == MODERN
        assert "mcp-session-id" not in headers
        assert headers["mcp-method"]
    calls = [e["headers"] for e in http if e["headers"]["mcp-method"] == "tools/call"]
    assert [h.get("mcp-name") for h in calls] == ["region", "region"]
    zurich = "=?base64?" + base64.b64encode("Zürich".encode()).decode("ascii") + "?="
    assert (calls[0]["mcp-param-region"], calls[0]["mcp-param-count"]) == (zurich, "3")
    assert calls[1]["mcp-param-region"] == "eu" and "mcp-param-count" not in calls[1]


# --- multi round-trip requests --------------------------------------------------------------


@pytest.mark.req("MCP-MOD-08", "MCP-MOD-09", "MCP-MOD-18")
def test_an_input_round_is_answered_by_the_elicitation_handler(
    peer: Peer, connect: Connect
) -> None:
    registry = connect(peer, ELICIT)
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    peer.mark()
    assert _call(registry, "ask_name") == "Hello, Ada!"
    assert _call(registry, "echo", {"message": "after"}) == "Echo: after"
    calls = peer.requests("tools/call")
    first, retry, unrelated = calls
    assert (first["name"], retry["name"], unrelated["name"]) == ("ask_name", "ask_name", "echo")
    assert first["id"] != retry["id"]  # a new request id for each round
    assert (first["inputResponses"], first["requestState"]) == (None, None)
    assert retry["requestState"] == STATE  # byte for byte
    assert retry["inputResponses"] == {"name": {"action": "accept", "content": {"name": "Ada"}}}
    # [MCP-MOD-09] nothing of the round reaches the next request
    assert (unrelated["inputResponses"], unrelated["requestState"]) == (None, None)


@pytest.mark.req("MCP-MOD-08")
def test_two_input_rounds_each_echo_their_own_state(peer: Peer, connect: Connect) -> None:
    registry = connect(peer, ELICIT)
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    peer.mark()
    assert _call(registry, "ask_twice") == "Ada likes blue"
    states = [e["requestState"] for e in peer.requests("tools/call")]
    assert states == [None, "round-1", "round-2:Ada"]


@pytest.mark.req("MCP-MOD-08")
def test_without_a_handler_the_elicitation_is_declined(peer: Peer, connect: Connect) -> None:
    registry = connect(peer)
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    assert _call(registry, "ask_name") == "No name (decline)"


# --- caching and listen ------------------------------------------------------------------


@pytest.mark.req("MCP-MOD-12")
def test_a_list_is_answered_from_cache_within_its_ttl(peer: Peer, connect: Connect) -> None:
    registry = connect(peer)
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    connection = registry.connection(SERVER)
    connection.list_tools()
    connection.list_tools()
    assert len(peer.requests("tools/list")) == 1  # the connect's listing, then the cache


@pytest.mark.req("MCP-MOD-12")
def test_a_zero_ttl_is_never_cached(tmp_path: Path, connect: Connect) -> None:
    require_peer("mcp-python-sdk")
    peer = Peer("stdio", "dual", tmp_path / "j.jsonl")
    registry = connect(peer, extra_args=("--ttl-ms", "0"))
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    registry.connection(SERVER).list_tools()
    assert len(peer.requests("tools/list")) == 2


@pytest.mark.req("MCP-MOD-12", "MCP-MOD-13", "MCP-DISC-15", "MCP-DISC-17")
def test_a_change_on_the_listen_stream_refreshes_the_tools(peer: Peer, connect: Connect) -> None:
    registry = connect(peer)
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    connection = registry.connection(SERVER)
    wait_for(lambda: bool(peer.requests("subscriptions/listen")), "the listen request")
    before = {t.name for t in registry.tools()}
    added = _call(registry, "grow").removeprefix("added ")
    wait_for(lambda: connection.tools_stale, "tools_stale after the listen event")
    assert registry.refresh_if_stale() is True
    after = {t.name for t in registry.tools()}
    assert after - before == {added}  # the cached list was evicted, not served again
    assert len(peer.requests("tools/list")) == 2
    listen = peer.requests("subscriptions/listen")[0]
    assert listen["era"] == "modern"


@pytest.mark.req("MCP-DISC-15", "MCP-DISC-17")
def test_in_the_legacy_era_the_change_comes_as_a_notification(
    tmp_path: Path, connect: Connect
) -> None:
    require_peer("mcp-python-sdk")
    peer = Peer("stdio", "dual", tmp_path / "j.jsonl")
    registry = connect(peer, era="legacy")
    assert registry.servers() == (SERVER,), registry.connect_failure(SERVER)
    connection = registry.connection(SERVER)
    added = _call(registry, "grow").removeprefix("added ")
    wait_for(lambda: connection.tools_stale, "tools_stale after notifications/tools/list_changed")
    assert registry.refresh_if_stale() is True
    assert added in {t.name for t in registry.tools()}
    assert "subscriptions/listen" not in {e["method"] for e in peer.requests()}
