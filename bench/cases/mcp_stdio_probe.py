"""What era detection costs a legacy-only stdio server: our spawn-to-READY of server-everything
with the default `era = "auto"` (probe with `server/discover`, then fall back to `initialize`)
against the same client with `era = "legacy"` (issue 16; goal as MCP-PERF-04: ≤ 20 ms added).
One start-up per fresh process, so the per-process era cache never hides the probe."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cases.mcp_common import REPO, SESSION_TIMEOUT_S, server_argv
from cases.mcp_common import missing as missing  # run.py asks each case what it lacks
from client import AgentSpec

NAME = "mcp_stdio_probe"
DESCRIPTION = "spawn → READY of server-everything: era auto (probe + fallback) vs era legacy"
CLIENTS = ("ours", "legacy")
READY_CLIENTS = Path(__file__).resolve().parents[1] / "peers" / "mcp_ready_clients.py"


def specs(scratch: Path) -> list[AgentSpec]:
    """ours (era auto, the default) and ours with era legacy."""
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
