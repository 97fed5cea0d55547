"""MCP Streamable HTTP echo in the 2026-07-28 era: `tools/call echo {message: "hello"}` → its
result, keep-alive, against a fresh lean echo server (peers/mcp_modern_lean_server.py) per
session; ours with `era = "auto"`, the SDK client as `Client(url, mode="auto")`, both checked
to end modern (issue 16: the modern counterpart of MCP-PERF-03)."""

from __future__ import annotations

from pathlib import Path

from cases.mcp_common import HttpServer, client_specs, missing_modern, run_session
from client import AgentSpec

NAME = "mcp_http_echo_modern"
CLIENTS = ("ours", "sdk")
DESCRIPTION = "tools/call echo → result over Streamable HTTP at 2026-07-28, the lean server"


def missing() -> str | None:
    """What run.py lacks to run this case (the SDK only), or None."""
    return missing_modern()


def specs(scratch: Path) -> list[AgentSpec]:
    """ours and the official SDK client, both in the modern era."""
    return client_specs(CLIENTS)


def rounds(quick: bool) -> tuple[int, int]:
    """(warm-up sessions discarded, measured sessions); each round runs every client once."""
    return (0, 2) if quick else (1, 5)


def sample(spec: AgentSpec, cwd: Path, quick: bool) -> list[float]:
    warm, n = (20, 100) if quick else (50, 300)
    with HttpServer(modern=True) as server:
        return run_session(spec, "modern-http", server.url, warm, n)
