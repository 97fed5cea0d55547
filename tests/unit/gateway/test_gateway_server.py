"""Authentication, the prefix, the hosted scheduler and the reloading configuration of
`gateway/server.py` (acp.md ACP-GW-02, ACP-GW-03, policy.md POL-PATH-12, POL-PATH-18).

ACP-GW-08: the gateway reads its configuration from the reloading `ConfigStore`: a new
connection starts from the current snapshot, and every `session/new`, `session/load` and
`session/resume` resolves against the snapshot current at that moment; a broken edit keeps the
last good one (acp.md §13, config.md CFG-LOAD-10)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from email.message import Message
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import require_peer
from tests.unit.gateway.conftest import TOKEN, Running, demo_config, digest
from tests.unit.gateway.test_gateway_ws import Client, connect
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import add_resolve_observer, remove_resolve_observer
from zeroclaw_ref.gateway.request import HttpRequest
from zeroclaw_ref.gateway.server import _strip_prefix, presented_token, token_accepted

Start = Callable[..., Running]


def _request(path: str, headers: dict[str, str], query: dict[str, str]) -> HttpRequest:
    message = Message()
    for name, value in headers.items():
        message[name] = value
    fake: Any = None
    return HttpRequest("GET", path, query, message, b"", "127.0.0.1", fake, fake, fake)


@pytest.mark.req("ACP-GW-02", "ACP-GW-12")
@pytest.mark.parametrize(
    ("path", "headers", "query", "expected"),
    [
        ("/acp", {"Authorization": "Bearer  a "}, {"token": "c"}, "a"),
        ("/acp", {"Authorization": "Bearer "}, {"token": "c"}, "c"),
        ("/acp", {"Authorization": "bearer a"}, {}, None),
        ("/acp", {"Sec-WebSocket-Protocol": "zeroclaw.acp.v1, bearer.b"}, {"token": "c"}, "b"),
        ("/acp", {"Sec-WebSocket-Protocol": "bearer."}, {"token": "c"}, "c"),
        ("/api/tools", {"Sec-WebSocket-Protocol": "bearer.b"}, {}, None),
        ("/api/tools", {}, {"token": ""}, None),
    ],
)
def test_token_is_the_first_non_empty_carrier(
    path: str, headers: dict[str, str], query: dict[str, str], expected: str | None
) -> None:
    assert presented_token(_request(path, headers, query)) == expected


@pytest.mark.req("ACP-GW-03")
def test_tokens_match_by_digest_only(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(demo_config())
    config = load_config(tmp_path, tmp_path / "data", {})
    assert token_accepted(config, TOKEN)
    assert not token_accepted(config, digest(TOKEN))  # the digest itself is not a token
    assert not token_accepted(config, None)
    assert not token_accepted(config, TOKEN + "x")


@pytest.mark.req("POL-PATH-12")
@pytest.mark.parametrize(
    ("path", "prefix", "expected"),
    [
        ("/api/chat", None, "/api/chat"),
        ("/zc/api/chat", "/zc", "/api/chat"),
        ("/zc", "/zc", "/"),
        ("/zcx/api/chat", "/zc", None),
        ("/api/chat", "/zc", None),
    ],
)
def test_routes_live_below_the_prefix(path: str, prefix: str | None, expected: str | None) -> None:
    assert _strip_prefix(path, prefix) == expected


@pytest.mark.req("POL-PATH-18")
def test_gateway_hosts_the_scheduler_only_when_enabled(start_gateway: Start) -> None:
    off = start_gateway()
    assert off.gateway._scheduler is None
    on = start_gateway(demo_config().replace("enabled = false", "enabled = true"))
    assert on.gateway._scheduler is not None


@pytest.fixture
def websocket() -> ModuleType:
    module = require_peer("websocket-client")
    assert isinstance(module, ModuleType)
    return module


@pytest.fixture
def resolved() -> Iterator[list[tuple[str, int]]]:
    """(agent alias, max_tool_iterations) of every execution resolved during the test."""
    seen: list[tuple[str, int]] = []

    def record(execution: ResolvedAgentExecution) -> None:
        seen.append((execution.agent_alias, execution.knobs.max_tool_iterations))

    add_resolve_observer(record)
    yield seen
    remove_resolve_observer(record)


class Editor:
    """Rewrites config.toml; each edit gets a new modification time, so the store sees it."""

    def __init__(self, running: Running) -> None:
        self.path = running.config_dir / "config.toml"
        self.stamp = self.path.stat().st_mtime_ns

    def write(self, text: str) -> None:
        self.path.write_text(text)
        self.stamp += 1_000_000_000
        os.utime(self.path, ns=(self.stamp, self.stamp))


def _config(agents: tuple[str, ...], iterations: int, more: str = "") -> str:
    text = demo_config(agents=agents, more=more)
    return text.replace(
        "[runtime_profiles.r]\n", f"[runtime_profiles.r]\nmax_tool_iterations = {iterations}\n"
    )


@pytest.mark.req("ACP-GW-08")
def test_a_new_connection_starts_from_the_configuration_current_when_it_opens(
    websocket: ModuleType, start_gateway: Start
) -> None:
    running = start_gateway(_config(("a",), 10, more="[acp]\nmax_sessions = 4\n"))
    editor = Editor(running)
    first = connect(websocket, running)
    assert first.call("initialize", {})["result"]["_meta"]["zeroclaw"]["maxSessions"] == 4
    editor.write(_config(("a",), 10, more="[acp]\nmax_sessions = 2\n"))
    second = connect(websocket, running)
    assert second.call("initialize", {})["result"]["_meta"]["zeroclaw"]["maxSessions"] == 2
    first.ws.close()
    second.ws.close()


@pytest.mark.req("ACP-GW-08")
def test_session_new_load_and_resume_resolve_against_the_snapshot_current_at_that_moment(
    websocket: ModuleType, start_gateway: Start, resolved: list[tuple[str, int]]
) -> None:
    running = start_gateway(_config(("a",), 10))
    editor = Editor(running)
    client: Client = connect(websocket, running)
    first = client.new_session()
    assert resolved[-1] == ("a", 10)
    # an agent added and a runtime knob changed while the connection stays open
    editor.write(_config(("a", "b"), 3))
    second = client.new_session(agentAlias="b")
    assert resolved[-1] == ("b", 3)
    assert client.call("session/close", {"sessionId": first})["result"] == {}
    assert client.call("session/close", {"sessionId": second})["result"] == {}
    # the stored alias `a` is no longer dispatchable: restores fall back to the new default
    disabled = _config(("b",), 5, more='[acp]\ndefault_agent = "b"\n')
    disabled += '[agents.a]\nenabled = false\nmodel_provider = "demo"\nrisk_profile = "p"\n'
    disabled += 'runtime_profile = "r"\n'
    editor.write(disabled)
    assert client.call("session/resume", {"sessionId": first})["result"] == {}
    assert resolved[-1] == ("b", 5)
    assert client.call("session/close", {"sessionId": first})["result"] == {}
    editor.write(disabled.replace("max_tool_iterations = 5", "max_tool_iterations = 7"))
    assert client.call("session/load", {"sessionId": first})["result"] == {}
    assert resolved[-1] == ("b", 7)
    client.ws.close()


@pytest.mark.req("ACP-GW-08")
def test_a_broken_edit_keeps_the_last_good_snapshot_for_old_and_new_connections(
    websocket: ModuleType, start_gateway: Start, resolved: list[tuple[str, int]]
) -> None:
    running = start_gateway(_config(("a",), 10))
    editor = Editor(running)
    client = connect(websocket, running)
    editor.write(_config(("a",), 6))
    client.new_session()
    assert resolved[-1] == ("a", 6)
    editor.write("[agents.a\nthis is not toml")
    client.new_session()  # still served, from the last good snapshot
    assert resolved[-1] == ("a", 6)
    other = connect(websocket, running)
    other.new_session()
    assert resolved[-1] == ("a", 6)
    editor.write(_config(("a",), 8))  # a good edit is picked up again
    other.new_session()
    assert resolved[-1] == ("a", 8)
    client.ws.close()
    other.ws.close()
