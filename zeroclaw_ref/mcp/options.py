"""The tuning knobs of the MCP client with their defaults (MCP-API-04, mcp.md §0.5, §7.1)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal


@dataclass(frozen=True, slots=True)
class McpOptions:
    """[MCP-API-04] every timeout is in seconds and every size in bytes."""

    init_timeout_s: float = 30
    list_timeout_s: float = 30
    default_tool_timeout_s: float = 180
    max_tool_timeout_s: float = 600
    max_reconnect_attempts: int = 2
    stdio_max_message_bytes: int = 67_108_864
    stderr_tail_bytes: int = 65_536
    close_grace_s: float = 2
    max_list_pages: int = 100
    max_resumptions: int = 10
    handler_workers: int = 4
    # [MCP-MOD-01] the era of servers whose configuration sets none: "auto" probes for the
    # 2026-07-28 revision and falls back to `initialize`; "legacy" never probes; "modern"
    # never falls back
    era: Literal["auto", "legacy", "modern"] = "auto"
    # [MCP-MOD-01] the longest wait for the answer to the stdio and HTTP probe
    probe_timeout_s: float = 5

    def for_server(self, startup_timeout_secs: float | None) -> McpOptions:
        """[MCP-INIT-05] a server's own `startup_timeout_secs` replaces `init_timeout_s` for
        that server: its handshake (probe included), GET-stream and endpoint waits, recovery."""
        if startup_timeout_secs is None or startup_timeout_secs <= 0:
            return self
        return replace(self, init_timeout_s=float(startup_timeout_secs))

    def tool_timeout(self, configured: float | None) -> float:
        """[MCP-TIME-01] the configured timeout or the default, never above the cap."""
        chosen = configured if configured is not None and configured > 0 else None
        value = self.default_tool_timeout_s if chosen is None else chosen
        return min(value, self.max_tool_timeout_s)
