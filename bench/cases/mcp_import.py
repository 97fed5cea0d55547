"""Import time of our MCP client's entry point against `import requests` (mcp.md MCP-PERF-05).

Each sample is a fresh interpreter (`python -c`) that times only the import statement with
`time.perf_counter`, so interpreter start-up and `site` are not counted.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from client import AgentSpec

NAME = "mcp_import"
DESCRIPTION = "`import zeroclaw_ref.mcp` vs `import requests`, fresh interpreter, import only"
CLIENTS = ("ours", "requests")
MODULES = {"ours": "zeroclaw_ref.mcp", "requests": "requests"}  # what each probe imports
TIMEOUT_S = 60
PROBE = (
    "import sys, time\n"
    "start = time.perf_counter()\n"
    "import {module}\n"
    "elapsed = time.perf_counter() - start\n"
    "sys.stdout.write(repr(elapsed))\n"
)


def specs(scratch: Path) -> list[AgentSpec]:
    """One probe per module; `ours` imports the MCP client's public surface."""
    return [
        AgentSpec(name, (sys.executable, "-c", PROBE.format(module=MODULES[name])))
        for name in CLIENTS
    ]


def rounds(quick: bool) -> tuple[int, int]:
    """(warm-up rounds discarded, measured rounds); each round runs every probe once."""
    return (2, 10) if quick else (3, 60)


def sample(spec: AgentSpec, cwd: Path, quick: bool) -> list[float]:
    proc = subprocess.run(
        spec.argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False, cwd=cwd
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{spec.name}: import failed: {proc.stderr[-2000:]}")
    return [float(proc.stdout)]
