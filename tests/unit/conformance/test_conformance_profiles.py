"""Profiles and needs: which hooks a setup implies and which needs an agent misses."""

from __future__ import annotations

import pytest

from zeroclaw_ref.conformance.core.exchange import (
    BARRIER_ID,
    Exchange,
    is_barrier_answer,
    match_stderr,
)
from zeroclaw_ref.conformance.core.jsonlex import JSON
from zeroclaw_ref.conformance.core.match import MatchContext
from zeroclaw_ref.conformance.core.profiles import all_needs, has_capability, implied_hooks, missing

CAPS: JSON = {
    "loadSession": True,
    "promptCapabilities": {"image": False, "embeddedContext": True},
    "sessionCapabilities": {"resume": {}, "close": None},
}


@pytest.mark.req("TX-NEEDS-02")
def test_setup_and_channels_imply_their_hooks() -> None:
    assert implied_hooks({}, 0) == frozenset()
    assert implied_hooks({"env": {"A": "b"}}, 0) == frozenset()
    assert implied_hooks({"config_dir": "_support/x"}, 0) == {"config"}
    assert implied_hooks({}, 1) == {"config"}
    setup: dict[str, JSON] = {"config": "", "model": "m", "workspace": "w"}
    assert implied_hooks(setup, 0) == {"config", "model", "workspace"}
    assert all_needs(["loadSession", "config"], {"config": ""}, 0) == ["config", "loadSession"]


@pytest.mark.req("TX-NEEDS-03")
@pytest.mark.parametrize(
    ("name", "offered"),
    [
        ("loadSession", True),
        ("promptCapabilities.image", False),
        ("promptCapabilities.audio", False),
        ("promptCapabilities.embeddedContext", True),
        ("sessionCapabilities.resume", True),
        ("sessionCapabilities.close", False),
        ("sessionCapabilities.list", False),
    ],
)
def test_a_capability_is_offered_when_present_and_neither_null_nor_false(
    name: str, offered: bool
) -> None:
    assert has_capability(CAPS, name) is offered


@pytest.mark.req("TX-NEEDS-04")
def test_missing_names_hooks_at_once_and_capabilities_once_known() -> None:
    needs = ["config", "model", "sessionCapabilities.list", "loadSession"]
    assert missing(needs, frozenset({"config"}), None) == ["hook model"]
    assert missing(needs, frozenset({"config", "model"}), CAPS) == [
        "capability sessionCapabilities.list"
    ]
    assert missing(
        needs, frozenset({"config", "model"}), {"sessionCapabilities": {"list": {}}}
    ) == ["capability loadSession"]


@pytest.mark.req("TX-BARRIER-01", "TX-BARRIER-02", "TX-NEEDS-03")
def test_the_exchange_is_settled_only_when_every_request_is_answered() -> None:
    ex = Exchange()
    assert ex.settled()
    ex.sent(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n')
    assert not ex.settled() and ex.capabilities is None
    assert ex.received({"jsonrpc": "2.0", "id": 1, "result": {"agentCapabilities": CAPS}})
    assert ex.settled() and ex.capabilities == CAPS
    ex.sent(b'{"jsonrpc":"2.0","id":"1","method":"session/prompt"}\n')  # "1" is not 1
    ex.sent(b'{"jsonrpc":"2.0","method":"session/cancel"}\n')  # a notification opens nothing
    ex.sent(b"not json at all\n")
    assert ex.to_agent == {'"1"': "session/prompt"}
    ex.received({"jsonrpc": "2.0", "id": "zc-out-0", "method": "session/request_permission"})
    ex.received({"jsonrpc": "2.0", "id": "1", "result": {"stopReason": "cancelled"}})
    assert not ex.settled()  # the agent's own request still waits for the client
    ex.sent(b'{"jsonrpc":"2.0","id":"zc-out-0","result":{"outcome":{"outcome":"cancelled"}}}\n')
    assert ex.settled()
    assert not ex.received({"jsonrpc": "2.0", "id": 1, "result": {"agentCapabilities": {}}})
    assert ex.capabilities == CAPS  # only the first initialize answer counts
    assert is_barrier_answer({"jsonrpc": "2.0", "id": BARRIER_ID, "error": {"code": -32601}})
    assert not is_barrier_answer({"jsonrpc": "2.0", "id": BARRIER_ID, "method": "x"})


@pytest.mark.req("TX-STDERR-01")
def test_stderr_patterns_match_in_order_and_bind() -> None:
    def ctx() -> MatchContext:
        return MatchContext({"CONFIG_DIR": "/c"}, {})

    lines = ["note", "ERROR: /c/config.toml:2: a.b: unknown key", "ERROR: second"]
    unmatched, found = match_stderr(
        ["ERROR: ${CONFIG_DIR}/config.toml:${n:int}: ${_}"], lines, ctx, False
    )
    assert unmatched == [] and found is not None and found.bindings == {"n": 2}
    assert match_stderr(["ERROR: second", "ERROR: /c${_}"], lines, ctx, False)[1] is None
    assert match_stderr(["ERROR: ${_}", "ERROR: ${_}"], lines, ctx, True)[1] is None
    assert match_stderr(["${_}", "ERROR: ${_}", "ERROR: second"], lines, ctx, True)[1] is not None
