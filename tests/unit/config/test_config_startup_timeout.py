"""`startup_timeout_secs` in `[[mcp.servers]]` (issue 16): the wait for a server's initialize
(and discover) answer, per server, unset meaning the client's default (mcp.md MCP-INIT-05)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from zeroclaw_ref.config.model import ConfigSnapshot

Loader = Callable[..., ConfigSnapshot]
Failer = Callable[..., list[str]]

BUNDLE = "[mcp_bundles.b]\nservers = []\n"


@pytest.mark.req("CFG-MCP-03", "MCP-INIT-05")
def test_a_server_accepts_startup_timeout_secs_and_leaves_it_unset_by_default(
    load: Loader,
) -> None:
    snapshot = load(
        "[[mcp.servers]]\nname = 'a'\ncommand = 'x'\nstartup_timeout_secs = 5\n"
        "[[mcp.servers]]\nname = 'h'\ntransport = 'http'\nurl = 'https://h/mcp'\n" + BUNDLE
    )
    a, h = snapshot.mcp.servers
    assert (a.startup_timeout_secs, h.startup_timeout_secs) == (5, None)


@pytest.mark.req("CFG-MCP-03", "CFG-VALID-07")
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", ["mcp.servers[0].startup_timeout_secs must be greater than 0"]),
        ("601", ["mcp.servers[0].startup_timeout_secs exceeds max 600"]),
    ],
)
def test_a_startup_timeout_outside_1_to_600_is_a_validation_error(
    fail: Failer, value: str, expected: list[str]
) -> None:
    text = f"[[mcp.servers]]\nname = 'a'\ncommand = 'x'\nstartup_timeout_secs = {value}\n"
    assert fail(text + BUNDLE) == expected


@pytest.mark.req("CFG-MCP-03")
def test_a_startup_timeout_that_is_not_an_integer_is_a_schema_error(fail: Failer) -> None:
    lines = fail("[[mcp.servers]]\nname = 'a'\ncommand = 'x'\nstartup_timeout_secs = 'soon'\n")
    assert len(lines) == 1 and "mcp.servers[0].startup_timeout_secs" in lines[0]
