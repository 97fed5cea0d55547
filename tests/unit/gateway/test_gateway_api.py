"""`POST /api/chat` and `GET /api/tools` with `requests` (policy.md POL-PATH-07..12,
acp.md ACP-GW-12)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import requests

from tests.unit.gateway.conftest import TOKEN, Running, demo_config
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import add_resolve_observer, remove_resolve_observer
from zeroclaw_ref.gateway.server import UNAUTHORIZED

Start = Callable[..., Running]
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DISABLED = """
[agents.off]
enabled = false
model_provider = "demo"
risk_profile = "p"
runtime_profile = "r"
"""
UNKNOWN = "Unknown agent `zz` — no [agents.zz] entry configured"


def post_chat(running: Running, body: object, raw: bytes | None = None) -> requests.Response:
    if raw is not None:
        return requests.post(running.http("/api/chat"), data=raw, headers=AUTH, timeout=30)
    return requests.post(running.http("/api/chat"), json=body, headers=AUTH, timeout=30)


@pytest.mark.req("POL-PATH-07", "POL-PATH-02")
def test_chat_runs_one_turn_for_the_only_agent(start_gateway: Start) -> None:
    running = start_gateway()
    minted: list[ResolvedAgentExecution] = []
    add_resolve_observer(minted.append)
    try:
        answer = post_chat(running, {"message": "hello"})
    finally:
        remove_resolve_observer(minted.append)
    assert answer.status_code == 200
    assert answer.json() == {"agent": "a", "response": "Echo: hello"}
    assert [m.path for m in minted] == ["gateway-chat"]


@pytest.mark.req("POL-PATH-09")
def test_chat_has_no_operator_so_a_prompted_tool_is_denied(start_gateway: Start) -> None:
    running = start_gateway()
    answer = post_chat(running, {"message": "write: out.txt hello"})
    assert answer.status_code == 200
    assert answer.json()["response"].startswith("file_write result: ")
    assert not (running.config_dir / "agents" / "a" / "workspace" / "out.txt").exists()


@pytest.mark.req("POL-PATH-08")
@pytest.mark.parametrize(
    ("raw", "status", "error"),
    [
        (b"not json", 400, "Request body must be a JSON object"),
        (b"[1]", 400, "Request body must be a JSON object"),
        (b"", 400, "Request body must be a JSON object"),
        (b'{"message": "  "}', 400, "Field `message` must be a non-blank string"),
        (b'{"message": 3}', 400, "Field `message` must be a non-blank string"),
        (b'{"message": "hi", "agent": 3}', 400, "Field `agent` must be a string"),
        (b'{"message": "hi", "agent": "zz"}', 404, UNKNOWN),
        (b'{"message": "hi", "agent": "off"}', 404, "Agent `off` is not enabled for dispatch"),
    ],
)
def test_chat_refusals_have_their_status_and_text(
    start_gateway: Start, raw: bytes, status: int, error: str
) -> None:
    running = start_gateway(demo_config(more=DISABLED))
    answer = post_chat(running, None, raw)
    assert (answer.status_code, answer.json()) == (status, {"error": error})


@pytest.mark.req("POL-PATH-02", "POL-PATH-08")
def test_chat_without_a_choosable_agent_is_400(start_gateway: Start) -> None:
    running = start_gateway(demo_config(agents=("a", "b")))
    answer = post_chat(running, {"message": "hi"})
    error = "No agent specified and no default agent is configured"
    assert (answer.status_code, answer.json()) == (400, {"error": error})
    named = post_chat(running, {"message": "hi", "agent": "b"})
    assert named.json() == {"agent": "b", "response": "Echo: hi"}


@pytest.mark.req("POL-PATH-08")
def test_chat_turn_failure_is_500(start_gateway: Start) -> None:
    failing = """
[providers.broken]
kind = "openai"
model = "m"
api_key = "k"
base_url = "http://127.0.0.1:9/v1"
[agents.x]
model_provider = "broken"
risk_profile = "p"
runtime_profile = "r"
"""
    running = start_gateway(demo_config(more=failing))
    answer = post_chat(running, {"message": "hi", "agent": "x"})
    assert answer.status_code == 500, answer.text
    assert answer.json()["error"].startswith("Agent turn failed: ")


@pytest.mark.req("POL-PATH-10", "POL-PATH-11")
def test_tools_lists_the_named_agents_tools_in_registry_order(start_gateway: Start) -> None:
    running = start_gateway(demo_config(agents=("a", "b")))
    minted: list[ResolvedAgentExecution] = []
    add_resolve_observer(minted.append)
    try:
        answer = requests.get(running.http("/api/tools?agent=b"), headers=AUTH, timeout=30)
    finally:
        remove_resolve_observer(minted.append)
    assert answer.status_code == 200
    body = answer.json()
    assert body["agent"] == "b"
    names = [t["name"] for t in body["tools"]]
    assert names == list(minted[0].io.tools.names)
    assert "tool_search" not in names and "deliver_file" not in names
    assert all(set(t) == {"name", "description", "parameters"} for t in body["tools"])
    assert [m.path for m in minted] == ["gateway-tools"]


@pytest.mark.req("POL-PATH-10")
def test_tools_for_an_unknown_agent_is_404_and_no_choice_is_400(start_gateway: Start) -> None:
    running = start_gateway(demo_config(agents=("a", "b")))
    unknown = requests.get(running.http("/api/tools?agent=zz"), headers=AUTH, timeout=30)
    assert (unknown.status_code, unknown.json()) == (404, {"error": UNKNOWN})
    unnamed = requests.get(running.http("/api/tools"), headers=AUTH, timeout=30)
    assert unnamed.status_code == 400


@pytest.mark.req("POL-PATH-12", "ACP-GW-12", "ACP-GW-04")
@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/api/tools"), ("POST", "/api/chat"), ("GET", "/nowhere")]
)
def test_every_api_route_is_authenticated_first(
    start_gateway: Start, method: str, path: str
) -> None:
    running = start_gateway()
    for headers in ({}, {"Authorization": "Bearer nope"}):
        answer = requests.request(method, running.http(path), headers=headers, timeout=30)
        assert (answer.status_code, answer.text) == (401, UNAUTHORIZED)
    via_query = requests.get(running.http(f"/api/tools?token={TOKEN}"), timeout=30)
    assert via_query.status_code == 200
    # the subprotocol form is for upgrades only (ACP-GW-12)
    proto = {"Sec-WebSocket-Protocol": f"bearer.{TOKEN}"}
    assert requests.get(running.http("/api/tools"), headers=proto, timeout=30).status_code == 401


@pytest.mark.req("POL-PATH-12", "CFG-GW-01")
def test_routes_are_mounted_under_the_path_prefix(start_gateway: Start) -> None:
    running = start_gateway(demo_config(gateway='path_prefix = "/zc"'))
    inside = requests.get(running.http("/zc/api/tools"), headers=AUTH, timeout=30)
    assert inside.status_code == 200
    outside = requests.get(running.http("/api/tools"), headers=AUTH, timeout=30)
    assert outside.status_code == 404


def test_pairing_not_required_lets_requests_through(start_gateway: Start) -> None:
    running = start_gateway(demo_config(tokens=(), gateway="require_pairing = false"))
    assert requests.get(running.http("/api/tools"), timeout=30).status_code == 200
    assert running.announced == []  # no pairing code when pairing is off
