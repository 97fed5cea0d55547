"""`zeroclaw_ref mcp-conformance-client <url>`: the driver the official MCP conformance suite
runs (mcp.md §15.1, MCP-CONF-01..07).

The harness starts a mock server, appends its URL as the last argument and names the scenario
in `MCP_CONFORMANCE_SCENARIO`; the 0.2.0 prereleases also name the protocol version the mock
speaks in `MCP_CONFORMANCE_PROTOCOL_VERSION` and pass scenario data (JSON) in
`MCP_CONFORMANCE_CONTEXT`. The driver connects to that URL as a Streamable HTTP server through
the ordinary `McpRegistry` (no configuration file), runs the scenario's flow and exits 0 on
success, 1 on any client error and 2 for a missing or unknown scenario.

Era: a 2026-07-28 leg runs with `era = "auto"` (the probe finds the modern server, MCP-MOD-02);
a handshake-era leg, and the 0.1.16 harness that predates the version variable, run with
`era = "legacy"`, as the official Python SDK's conformance client does: those mocks speak only
the handshake and judge every request a client sends them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TextIO

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
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
VERSION_ENV = "MCP_CONFORMANCE_PROTOCOL_VERSION"
CONTEXT_ENV = "MCP_CONFORMANCE_CONTEXT"
# The protocol versions of the stateless era (mcp.md §14); any other value is a handshake leg.
MODERN_VERSIONS = ("2026-07-28",)
# Design: a short, fixed server name; tools are addressed as `conformance__<tool>`.
SERVER = "conformance"
SEPARATOR = "__"
# Design: the harness's own timeout is 30 s; ours stays below it so that a hang is reported
# by the client (exit 1) rather than by the harness.
_TIMEOUT_S = 20

Era = Literal["legacy", "auto"]


@dataclass(frozen=True, slots=True)
class Run:
    """One scenario run: the connected registry and the harness's context object."""

    registry: McpRegistry
    context: JSONObject

    def tool_names(self) -> list[str]:
        """The server's tools as listed (unprefixed), in listing order."""
        return [t.name for t in self.registry.tools()]

    def call(self, tool: str, arguments: JSONObject) -> JSONObject:
        return self.registry.call_tool(f"{SERVER}{SEPARATOR}{tool}", arguments)

    def try_call(self, tool: str, arguments: JSONObject) -> None:
        """A call whose failure the scenario tolerates: logged, never fatal."""
        try:
            self.call(tool, arguments)
        except McpError as exc:
            log.warning("conformance: call of `%s` failed: %s", tool, exc)


Flow = Callable[[Run], None]


def _nothing(run: Run) -> None:
    """Connecting lists the tools; that is the whole flow."""


def _call(tool: str, arguments: JSONObject | None = None) -> Flow:
    def flow(run: Run) -> None:
        run.call(tool, arguments or {})

    return flow


def _stub_arguments(schema: JSONObject) -> JSONObject:
    """Arguments that satisfy the `required` list of `schema` with a value of each type."""
    by_type: dict[str, JSON] = {
        "string": "x", "integer": 0, "number": 0, "boolean": False, "object": {}, "array": [],
    }  # fmt: skip
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    out: JSONObject = {}
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str):
            prop = props.get(name)
            kind = prop.get("type") if isinstance(prop, dict) else None
            out[name] = by_type.get(kind, "x") if isinstance(kind, str) else "x"
    return out


def _call_every_tool(run: Run) -> None:
    """Every tool the client kept (a tool dropped for invalid annotations is never called)."""
    for tool in run.registry.tools():
        run.try_call(tool.name, _stub_arguments(tool.input_schema))


def _every_primitive(run: Run) -> None:
    """Each tool, resource and prompt once, so every header check sees its method."""
    _call_every_tool(run)
    registry = run.registry
    if registry.supports(SERVER, "resources"):
        listed = registry.list_resources(SERVER)
        for item in _items(listed, "resources"):
            uri = item.get("uri")
            if isinstance(uri, str):
                registry.read_resource(f"{SERVER}{SEPARATOR}{uri}")
    if registry.supports(SERVER, "prompts"):
        listed = registry.list_prompts(SERVER)
        for item in _items(listed, "prompts"):
            name = item.get("name")
            if isinstance(name, str):
                registry.get_prompt(f"{SERVER}{SEPARATOR}{name}")


def _items(result: JSON, key: str) -> list[JSONObject]:
    items = result.get(key) if isinstance(result, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _replay_tool_calls(run: Run) -> None:
    """The calls the harness put in the context, for the tools the client kept."""
    calls = run.context.get("toolCalls")
    kept = set(run.tool_names())
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            continue
        name = str(call["name"])
        if name not in kept:
            log.info("conformance: `%s` was dropped from the listing; not calling it", name)
            continue
        arguments = call.get("arguments")
        run.try_call(name, arguments if isinstance(arguments, dict) else {})


def _preserve_schema(run: Run) -> None:
    """Echo the focal tool's inputSchema back exactly as listed."""
    focal = next((t for t in run.registry.tools() if t.name == "json_schema_2020_12_tool"), None)
    if focal is None:
        raise McpError(SERVER, "the focal tool `json_schema_2020_12_tool` was not listed")
    run.call("json_schema_echo", {"schema": focal.input_schema})


def _request_state(run: Run) -> None:
    for tool in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state"):
        run.call(tool, {})
    run.call("test_mrtr_no_result_type", {})


def _confirm(params: JSONObject) -> JSONObject:
    return {"action": "accept", "content": {"confirmed": True}}


def _no_roots() -> list[JSONObject]:
    return []


def _empty_sample(params: JSONObject) -> JSONObject:
    return {"role": "assistant", "content": {"type": "text", "text": ""}, "model": "stub"}


@dataclass(frozen=True, slots=True)
class Scenario:
    """What one scenario needs: the handlers to install and the flow after connecting."""

    handlers: ClientHandlers = field(default_factory=ClientHandlers)
    flow: Flow = _nothing


EVERY_HANDLER = ClientHandlers(roots=_no_roots, sampling=_empty_sample, elicitation=_confirm)

SCENARIOS: dict[str, Scenario] = {
    # [MCP-CONF-02] connect (which lists tools) and close; the scenario is named after the
    # method, whose literal lives in wire/ (DESIGN §2.4)
    METHOD_INITIALIZE: Scenario(),
    # [MCP-CONF-03] (both eras)
    "tools_call": Scenario(flow=_call("add_numbers", {"a": 5, "b": 3})),
    # [MCP-CONF-04] form-mode elicitation answered with the schema defaults; the request
    # arrives on the standalone GET stream (MCP-HTTP-31)
    "elicitation-sep1034-client-defaults": Scenario(
        ClientHandlers(elicitation=accept_with_defaults),
        _call("test_client_elicitation_defaults"),
    ),
    # [MCP-CONF-05] the POST stream closes after a priming event with `retry: 500`; the
    # transport resumes with GET + Last-Event-ID (§4.5)
    "sse-retry": Scenario(flow=_call("test_reconnection")),
    # [MCP-CONF-07] the 2026-07-28 scenarios (and the schema one of both eras)
    "json-schema-2020-12-preservation": Scenario(flow=_preserve_schema),
    "json-schema-ref-no-deref": Scenario(),
    # [MCP-MOD-05] [MCP-MOD-06] every capability declared; the first request gets -32022
    "request-metadata": Scenario(EVERY_HANDLER),
    # [MCP-MOD-14] Mcp-Method / Mcp-Name on every kind of request
    "http-standard-headers": Scenario(flow=_every_primitive),
    # [MCP-MOD-15] [MCP-MOD-16] Mcp-Param-* with the base64 form, null omitted
    "http-custom-headers": Scenario(flow=_replay_tool_calls),
    # [MCP-MOD-16] tools with invalid x-mcp-header annotations are dropped, never called
    "http-invalid-tool-headers": Scenario(flow=_call_every_tool),
    # [MCP-MOD-07] [MCP-MOD-08] [MCP-MOD-09] MRTR: requestState echoed, fresh ids, no leaks
    "sep-2322-client-request-state": Scenario(ClientHandlers(elicitation=_confirm), _request_state),
}


def era_for(version: str | None) -> Era:
    """`auto` on a 2026-07-28 leg, `legacy` on a handshake leg or without the variable."""
    return "auto" if version in MODERN_VERSIONS else "legacy"


def _context(environ: Mapping[str, str]) -> JSONObject:
    text = environ.get(CONTEXT_ENV, "")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise McpError(SERVER, f"{CONTEXT_ENV} is not JSON: {exc}") from exc
    return value if isinstance(value, dict) else {}


def _run(url: str, scenario: Scenario, era: Era, context: JSONObject) -> None:
    """Connect, run the scenario's flow and close.

    Raises:
        McpError: any client failure, including a server that could not be connected.
    """
    config = McpServerConfig(name=SERVER, transport="http", url=url)
    options = McpOptions(
        init_timeout_s=_TIMEOUT_S,
        list_timeout_s=_TIMEOUT_S,
        default_tool_timeout_s=_TIMEOUT_S,
        era=era,
    )
    registry = McpRegistry.connect_all([config], handlers=scenario.handlers, options=options)
    with registry:
        if SERVER not in registry.servers():
            # connect_all logs and skips a failed server (MCP-LIFE-04); here it is fatal.
            reason = registry.connect_failure(SERVER) or f"Failed to connect to `{SERVER}`"
            raise McpConnectError(SERVER, reason)
        scenario.flow(Run(registry, context))


def run_conformance_client(url: str, environ: Mapping[str, str], err: TextIO) -> int:
    """[MCP-CONF-01] run the scenario named in the environment against `url`; return the exit
    status (0 success, 1 client error, 2 missing or unknown scenario)."""
    name = environ.get(SCENARIO_ENV, "")
    scenario = SCENARIOS.get(name)
    if scenario is None:
        print(f"unknown conformance scenario: {name}", file=err)
        return 2
    try:
        _run(url, scenario, era_for(environ.get(VERSION_ENV)), _context(environ))
    except McpError as exc:
        print(f"mcp-conformance-client: {exc}", file=err)
        return 1
    return 0
