"""MCP stdio echo: `tools/call echo {message: "hello"}` → its result, against server-everything
spawned by each client (mcp.md MCP-PERF-01, MCP-PERF-02)."""

from __future__ import annotations

import json
from pathlib import Path

from cases.mcp_common import client_specs, run_session, server_argv
from cases.mcp_common import missing as missing  # run.py asks each case what it lacks
from client import AgentSpec

NAME = "mcp_stdio_echo"
CLIENTS = ("ours", "sdk", "minimal")
DESCRIPTION = "tools/call echo → result over stdio, server-everything, same session"


def specs(scratch: Path) -> list[AgentSpec]:
    """ours, the official SDK client and the minimal blocking client."""
    return client_specs(CLIENTS)


def rounds(quick: bool) -> tuple[int, int]:
    """(warm-up sessions discarded, measured sessions); each round runs every client once."""
    return (0, 2) if quick else (1, 5)


def sample(spec: AgentSpec, cwd: Path, quick: bool) -> list[float]:
    warm, n = (20, 100) if quick else (50, 500)
    return run_session(spec, "stdio", json.dumps(server_argv("stdio")), warm, n)
