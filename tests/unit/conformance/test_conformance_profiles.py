"""Profiles and needs: which hooks a setup implies and which needs an agent misses."""

from __future__ import annotations

import pytest

from zeroclaw_ref.conformance.jsonlex import JSON
from zeroclaw_ref.conformance.profiles import all_needs, has_capability, implied_hooks, missing

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
