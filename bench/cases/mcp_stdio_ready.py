"""MCP stdio spawn-to-ready: our client's start-up of server-everything against the server's own
start-up seen by a bare blocking client (mcp.md MCP-PERF-04). One start-up per fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cases.mcp_common import REPO, SESSION_TIMEOUT_S, server_argv
from cases.mcp_common import missing as missing  # run.py asks each case what it lacks
from client import AgentSpec

NAME = "mcp_stdio_ready"
DESCRIPTION = "spawn → READY with tools listed (ours) vs spawn → initialize answered (bare)"
CLIENTS = ("ours", "bare")
READY_CLIENTS = Path(__file__).resolve().parents[1] / "peers" / "mcp_ready_clients.py"


def specs(scratch: Path) -> list[AgentSpec]:
    """ours (`McpRegistry.connect_all`) and the bare blocking client."""
    return [AgentSpec(name, (sys.executable, str(READY_CLIENTS), name)) for name in CLIENTS]


def rounds(quick: bool) -> tuple[int, int]:
    """(warm-up rounds discarded, measured rounds); each round runs every client once."""
    return (1, 6) if quick else (2, 40)


def sample(spec: AgentSpec, cwd: Path, quick: bool) -> list[float]:
    argv = [*spec.argv, json.dumps(server_argv("stdio"))]
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=SESSION_TIMEOUT_S, check=False, cwd=REPO
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{spec.name} (stdio start-up) failed: {proc.stderr[-2000:]}")
    elapsed = json.loads(proc.stdout)
    if not isinstance(elapsed, float):
        raise RuntimeError(f"{spec.name}: expected one duration, got {proc.stdout!r}")
    return [elapsed]
