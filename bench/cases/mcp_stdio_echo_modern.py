"""MCP stdio echo in the 2026-07-28 era: `tools/call echo {message: "hello"}` → its result,
against the lean echo server (peers/mcp_modern_lean_server.py) spawned by each client; ours with
`era = "auto"`, the SDK client as `Client(..., mode="auto")`, both checked to end modern
(issue 16: the modern counterpart of MCP-PERF-02)."""

from __future__ import annotations

import json
from pathlib import Path

from cases.mcp_common import client_specs, missing_modern, modern_server_argv, run_session
from client import AgentSpec

NAME = "mcp_stdio_echo_modern"
CLIENTS = ("ours", "sdk")
DESCRIPTION = "tools/call echo → result over stdio at 2026-07-28, the lean server"


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
    warm, n = (20, 100) if quick else (50, 500)
    return run_session(spec, "modern-stdio", json.dumps(modern_server_argv("stdio")), warm, n)
