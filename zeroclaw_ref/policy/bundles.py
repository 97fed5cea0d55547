"""`mcp_bundles` → the MCP servers an agent is granted (policy.md §2.2, POL-BUNDLE-01..05)."""

from __future__ import annotations

from zeroclaw_ref.config.model import ConfigSnapshot, McpServerConfig


def mcp_servers_for_agent(config: ConfigSnapshot, alias: str) -> tuple[McpServerConfig, ...]:
    """The granted server entries, in first-seen order; unknown names grant nothing."""
    agent = config.agents.get(alias)
    if agent is None or not agent.mcp_bundles or not config.mcp.enabled:
        return ()  # [POL-BUNDLE-01] [POL-BUNDLE-05]
    bundles = [config.mcp_bundles[b] for b in agent.mcp_bundles if b in config.mcp_bundles]
    denied = {name for bundle in bundles for name in bundle.exclude}  # deny wins everywhere
    names: list[str] = []
    for bundle in bundles:
        for name in bundle.servers:
            if name not in names and name not in denied:
                names.append(name)  # [POL-BUNDLE-02]
    by_name = {server.name: server for server in config.mcp.servers}  # [POL-BUNDLE-04] exact
    return tuple(by_name[n] for n in names if n in by_name)  # [POL-BUNDLE-03]
