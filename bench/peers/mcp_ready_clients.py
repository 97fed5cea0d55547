"""The clients the stdio start-up benchmark compares (MCP-PERF-04), each timing one start-up.

    python bench/peers/mcp_ready_clients.py <client> <server argv as JSON>

`ours` times `McpRegistry.connect_all([...])` from the call until it returns with the server
READY: spawned, `initialize` answered, `notifications/initialized` sent and the tools listed
(MCP-INIT-12). Our package surface (`zeroclaw_ref.mcp`) is imported before the clock starts
(its cost is MCP-PERF-05's); whatever `connect_all` imports on the way counts. `bare` times
the server's own start-up as a blocking client sees it: `Popen` until the `initialize` result
has been read (the write-a-line, block-on-`readline` loop of `mcp_echo_clients.minimal`).
`legacy` is ours with `era = "legacy"` (no `server/discover` probe): against a legacy-only
server, `ours` − `legacy` is what the probe of mcp.md §14.1 adds to a start-up (issue 16).
One start-up per process; prints the elapsed seconds as JSON on stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bare-bench-client", "version": "0"},
    },
}


def ours(argv: list[str], era: str | None = None) -> float:
    """Our start-up with the default options (era detection on), or with `era` forced."""
    from zeroclaw_ref.config.model import McpServerConfig
    from zeroclaw_ref.mcp import McpOptions, McpRegistry
    from zeroclaw_ref.mcp.lifecycle import State

    config = McpServerConfig(
        name="everything", transport="stdio", command=argv[0], args=tuple(argv[1:])
    )
    options = McpOptions() if era is None else McpOptions(era=era)  # type: ignore[arg-type]
    start = time.perf_counter()
    registry = McpRegistry.connect_all([config], options=options)
    elapsed = time.perf_counter() - start
    with registry:
        if "everything" not in registry.servers():
            raise RuntimeError("ours: could not connect to server-everything")
        state = registry.connection("everything").state
        if state is not State.READY:
            raise RuntimeError(f"ours: connect_all returned with the server {state}, not READY")
        if not any(t.prefixed_name == "everything__echo" for t in registry.tools()):
            raise RuntimeError("ours: the tool list lacks everything__echo")
    return elapsed


def bare(argv: list[str]) -> float:
    """Spawn, write `initialize`, block on `readline` until its result (nothing else)."""
    line = json.dumps(INITIALIZE, separators=(",", ":")).encode() + b"\n"
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(line)
        proc.stdin.flush()
        while True:
            answer = proc.stdout.readline()
            if not answer:
                raise RuntimeError("bare: server closed stdout before answering initialize")
            message = json.loads(answer)
            if message.get("id") == 1 and "method" not in message:
                break
        elapsed = time.perf_counter() - start
        if "result" not in message:
            raise RuntimeError(f"bare: initialize failed: {message.get('error')!r}")
        return elapsed
    finally:
        proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def legacy(argv: list[str]) -> float:
    """Ours without the probe: straight to `initialize`."""
    return ours(argv, "legacy")


CLIENTS: dict[str, Callable[[list[str]], float]] = {"ours": ours, "bare": bare, "legacy": legacy}


def main(argv: list[str]) -> int:
    client, target = argv
    sys.stdout.write(json.dumps(CLIENTS[client](json.loads(target))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
