"""`zeroclaw_ref mcp tools [--agent ALIAS] [--json]`: the tools an agent would be offered (and,
with `--json`, the protocol era each granted server was found to speak).

The listing goes through `resolve()` on the `gateway-tools` path (policy.md POL-PATH-10,
POL-PATH-11), so it shows exactly what that front door shows: admitted deferred MCP stubs as
ordinary tools, no `tool_search`, no serial device opened, and never another agent's tools.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, TextIO

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.jsontypes import JSON

if TYPE_CHECKING:
    from zeroclaw_ref.engine.execution import ResolvedAgentExecution


def add_mcp_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser("mcp", help="inspect the MCP tools an agent would be offered")
    mcp.add_argument("--config-dir", dest="sub_config_dir", metavar="DIR")
    mcp.add_argument("action", choices=("tools",))
    mcp.add_argument("--agent", dest="agent_alias", metavar="ALIAS")
    mcp.add_argument("--json", action="store_true", help="print the /api/tools body instead")


def run_mcp_tools(
    config: ConfigSnapshot, requested: str | None, as_json: bool, out: TextIO, err: TextIO
) -> int:
    """Print one `<name>  <description>` line per tool in registry order (or JSON); exit 1
    with `ERROR: ` when the agent cannot be resolved."""
    # Imported here so that building the command parser stays cheap (DESIGN §5.4).
    from zeroclaw_ref.cli.agent import choose_agent
    from zeroclaw_ref.engine.resolve import PathRequest, ResolveError, resolve

    try:
        alias = choose_agent(config, requested)  # [POL-PATH-02]
        execution = resolve(config, alias, PathRequest("gateway-tools"))
    except ResolveError as exc:
        print(f"ERROR: {exc}", file=err)
        return 1
    try:
        tools = list(execution.io.tools)
        if as_json:
            listed: list[JSON] = [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in tools
            ]
            body = {"agent": alias, "tools": listed, "servers": _eras(config, execution)}
            out.write(json.dumps(body, indent=2) + "\n")
        else:
            width = max((len(t.name) for t in tools), default=0)
            for tool in tools:
                summary = tool.description.splitlines()[0] if tool.description else ""
                out.write(f"{tool.name.ljust(width)}  {summary}\n")
    finally:
        execution.close()  # [POL-RESOLVE-15] the listing's MCP connections
    return 0


def _eras(config: ConfigSnapshot, execution: ResolvedAgentExecution) -> list[JSON]:
    """[MCP-MOD-03] each granted server with the protocol era its connect found (None when it
    did not connect or was not connected on this path) and whether it was detected or forced."""
    from zeroclaw_ref.mcp import era

    granted = set(execution.mcp.granted_servers)
    servers: list[JSON] = []
    for server in config.mcp.servers:
        if server.name not in granted:
            continue
        seen = era.seen(server)
        servers.append(
            {
                "name": server.name,
                "era": seen.era if seen else None,
                "protocolVersion": seen.protocol_version if seen else None,
                "detected": seen.detected if seen else None,
            }
        )
    return servers
