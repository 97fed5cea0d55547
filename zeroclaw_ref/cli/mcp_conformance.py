"""`zeroclaw_ref mcp-conformance-client <url>`: the driver the official MCP conformance suite
runs (mcp.md §15.1, MCP-CONF-01..06).

The harness starts a mock server, appends its URL as the last argument and names the scenario
in `MCP_CONFORMANCE_SCENARIO`. The driver connects to that URL as a Streamable HTTP server
through the ordinary `McpRegistry` (no configuration file), runs the scenario's flow and exits
0 on success, 1 on any client error and 2 for a missing or unknown scenario.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpConnectError,
    McpError,
    McpOptions,
    McpRegistry,
    accept_with_defaults,
)
from zeroclaw_ref.wire.acp import METHOD_INITIALIZE

log = logging.getLogger(__name__)

SCENARIO_ENV = "MCP_CONFORMANCE_SCENARIO"
# Design: a short, fixed server name; tools are addressed as `conformance__<tool>`.
SERVER = "conformance"
# Design: the harness's own timeout is 30 s; ours stays below it so that a hang is reported
# by the client (exit 1) rather than by the harness.
_TIMEOUT_S = 20


@dataclass(frozen=True, slots=True)
class Scenario:
    """What one scenario needs: the handlers to install and the tool to call, if any."""

    handlers: ClientHandlers
    tool: str | None = None
    arguments: JSONObject | None = None


SCENARIOS: dict[str, Scenario] = {
    # [MCP-CONF-02] connect (which lists tools) and close; the scenario is named after the
    # method, whose literal lives in wire/ (DESIGN §2.4)
    METHOD_INITIALIZE: Scenario(ClientHandlers()),
    # [MCP-CONF-03]
    "tools_call": Scenario(ClientHandlers(), "add_numbers", {"a": 5, "b": 3}),
    # [MCP-CONF-04] form-mode elicitation answered with the schema defaults; the request
    # arrives on the standalone GET stream (MCP-HTTP-31)
    "elicitation-sep1034-client-defaults": Scenario(
        ClientHandlers(elicitation=accept_with_defaults), "test_client_elicitation_defaults", {}
    ),
    # [MCP-CONF-05] the POST stream closes after a priming event with `retry: 500`; the
    # transport resumes with GET + Last-Event-ID (§4.5)
    "sse-retry": Scenario(ClientHandlers(), "test_reconnection", {}),
}


def _run(url: str, scenario: Scenario) -> None:
    """Connect, run the scenario's call and close.

    Raises:
        McpError: any client failure, including a server that could not be connected.
    """
    config = McpServerConfig(name=SERVER, transport="http", url=url)
    options = McpOptions(
        init_timeout_s=_TIMEOUT_S, list_timeout_s=_TIMEOUT_S, default_tool_timeout_s=_TIMEOUT_S
    )
    registry = McpRegistry.connect_all([config], handlers=scenario.handlers, options=options)
    with registry:
        if SERVER not in registry.servers():
            # connect_all logs and skips a failed server (MCP-LIFE-04); here it is fatal.
            raise McpConnectError(SERVER, f"Failed to connect to MCP server `{SERVER}`")
        if scenario.tool is not None:
            registry.call_tool(f"{SERVER}__{scenario.tool}", scenario.arguments or {})


def run_conformance_client(url: str, environ: Mapping[str, str], err: TextIO) -> int:
    """[MCP-CONF-01] run the scenario named in the environment against `url`; return the exit
    status (0 success, 1 client error, 2 missing or unknown scenario)."""
    name = environ.get(SCENARIO_ENV, "")
    scenario = SCENARIOS.get(name)
    if scenario is None:
        print(f"unknown conformance scenario: {name}", file=err)
        return 2
    try:
        _run(url, scenario)
    except McpError as exc:
        print(f"mcp-conformance-client: {exc}", file=err)
        return 1
    return 0
