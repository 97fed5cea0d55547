"""MCP Streamable HTTP echo: `tools/call echo {message: "hello"}` → its result, keep-alive,
against a fresh server-everything (`streamableHttp`) per session (mcp.md MCP-PERF-03)."""

from __future__ import annotations

from pathlib import Path

from cases.mcp_common import HttpServer, client_specs, run_session
from cases.mcp_common import missing as missing  # run.py asks each case what it lacks
from client import AgentSpec

NAME = "mcp_http_echo"
CLIENTS = ("ours", "sdk")
DESCRIPTION = "tools/call echo → result over Streamable HTTP, server-everything, same session"


def specs(scratch: Path) -> list[AgentSpec]:
    """ours and the official SDK client (`Client(url, mode="legacy")`)."""
    return client_specs(CLIENTS)


def rounds(quick: bool) -> tuple[int, int]:
    """(warm-up sessions discarded, measured sessions); each round runs every client once."""
    return (0, 2) if quick else (1, 5)


def sample(spec: AgentSpec, cwd: Path, quick: bool) -> list[float]:
    warm, n = (20, 100) if quick else (50, 300)
    with HttpServer() as server:
        return run_session(spec, "http", server.url, warm, n)
