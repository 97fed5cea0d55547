"""The MCP clients the echo benchmarks compare, each timing `tools/call echo` round trips.

    python bench/peers/mcp_echo_clients.py <client> stdio <server argv as JSON> <warm> <n>
    python bench/peers/mcp_echo_clients.py <client> http <url> <warm> <n>
    python bench/peers/mcp_echo_clients.py <client> modern-stdio <server argv as JSON> <warm> <n>
    python bench/peers/mcp_echo_clients.py <client> modern-http <url> <warm> <n>

`client` is `ours` (zeroclaw_ref's `McpRegistry`), `sdk` (the official MCP Python SDK 2.3.0:
`stdio_client` + `ClientSession` over stdio, `Client(url, mode="legacy")` over HTTP) or
`minimal` (stdio only: one thread that writes a line and blocks on `readline`, MCP-PERF-01).
The `modern-*` transports talk to a 2026-07-28 server (`mcp_modern_echo_server.py`): ours with
`era = "auto"`, the SDK as `Client(..., mode="auto")`, and each must end in the 2026-07-28 era
(checked before the clock starts) or the session fails.
One session per process, so no client shares an interpreter, threads or a GC heap with another:
connect, `warm` discarded calls, `n` timed calls, close; prints the timed calls (seconds) as a
JSON list on stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

ARGS = {"message": "hello"}
EXPECTED = "Echo: hello"
MODERN = "2026-07-28"


def _check(text: object) -> None:
    if text != EXPECTED:
        raise RuntimeError(f"echo answered {text!r}, not {EXPECTED!r}")


def _timed(call: Callable[[], object], warm: int, n: int) -> list[float]:
    samples: list[float] = []
    for i in range(warm + n):
        start = time.perf_counter()
        text = call()
        elapsed = time.perf_counter() - start
        _check(text)
        if i >= warm:
            samples.append(elapsed)
    return samples


# --- ours -----------------------------------------------------------------------------------


def ours(transport: str, target: str, warm: int, n: int) -> list[float]:
    from zeroclaw_ref.config.model import McpServerConfig
    from zeroclaw_ref.mcp import McpOptions, McpRegistry

    modern = transport.startswith("modern-")
    if transport.endswith("stdio"):
        argv = json.loads(target)
        config = McpServerConfig(
            name="everything", transport="stdio", command=argv[0], args=tuple(argv[1:])
        )
    else:
        config = McpServerConfig(name="everything", transport="http", url=target)
    options = McpOptions(era="auto") if modern else McpOptions()
    with McpRegistry.connect_all([config], options=options) as registry:
        if "everything" not in registry.servers():
            raise RuntimeError("ours: could not connect to the server")
        era = getattr(registry.connection("everything"), "era", "legacy")
        if modern and era != "modern":
            raise RuntimeError(f"ours: ended in the {era} era, not {MODERN}")

        def call() -> object:
            return registry.call_tool("everything__echo", ARGS)["content"][0]["text"]  # type: ignore[index,call-overload]

        return _timed(call, warm, n)


# --- the official SDK -----------------------------------------------------------------------


def sdk(transport: str, target: str, warm: int, n: int) -> list[float]:
    import asyncio

    runs = {
        "stdio": _sdk_stdio,
        "http": _sdk_http,
        "modern-stdio": _sdk_modern,
        "modern-http": _sdk_modern,
    }
    return asyncio.run(runs[transport](target, warm, n))


async def _sdk_timed(call: Callable[[], object], warm: int, n: int) -> list[float]:
    samples: list[float] = []
    for i in range(warm + n):
        start = time.perf_counter()
        result = await call()  # type: ignore[misc]
        elapsed = time.perf_counter() - start
        _check(result.content[0].text)
        if i >= warm:
            samples.append(elapsed)
    return samples


async def _sdk_stdio(target: str, warm: int, n: int) -> list[float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    argv = json.loads(target)
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    with open(os.devnull, "w") as devnull:  # noqa: PTH123
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await _sdk_timed(lambda: session.call_tool("echo", ARGS), warm, n)


async def _sdk_http(url: str, warm: int, n: int) -> list[float]:
    from mcp import Client

    async with Client(url, mode="legacy") as client:
        return await _sdk_timed(lambda: client.call_tool("echo", ARGS), warm, n)


async def _sdk_modern(target: str, warm: int, n: int) -> list[float]:
    """`Client(..., mode="auto")`: it probes, finds 2026-07-28 and stamps every request."""
    from mcp import Client, StdioServerParameters

    server: object = target
    if target.startswith("["):
        argv = json.loads(target)
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(server, mode="auto") as client:  # type: ignore[arg-type]
        if client.protocol_version != MODERN:
            raise RuntimeError(f"sdk: ended at {client.protocol_version}, not {MODERN}")
        return await _sdk_timed(lambda: client.call_tool("echo", ARGS), warm, n)


# --- minimal blocking client ----------------------------------------------------------------


def minimal(transport: str, target: str, warm: int, n: int) -> list[float]:
    """Write one line, block on `readline` until the answer with that id (stdio only)."""
    if transport != "stdio":
        raise RuntimeError("the minimal client speaks stdio only")
    proc = subprocess.Popen(
        json.loads(target),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    next_id = 0

    def send(message: dict[str, object]) -> None:
        stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        stdin.flush()

    def request(method: str, params: dict[str, object]) -> dict[str, object]:
        nonlocal next_id
        next_id += 1
        send({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params})
        while True:
            line = stdout.readline()
            if not line:
                raise RuntimeError("minimal: server closed stdout")
            message = json.loads(line)
            if message.get("id") == next_id and "method" not in message:
                return message  # type: ignore[no-any-return]
            if "method" in message and "id" in message:  # a server request: refuse it
                error = {"code": -32601, "message": "Method not found"}
                send({"jsonrpc": "2.0", "id": message["id"], "error": error})

    try:
        request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "minimal-bench-client", "version": "0"},
            },
        )
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "echo", "arguments": ARGS}
        return _timed(lambda: request("tools/call", call)["result"]["content"][0]["text"], warm, n)  # type: ignore[index]
    finally:
        stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


CLIENTS: dict[str, Callable[[str, str, int, int], list[float]]] = {
    "ours": ours,
    "sdk": sdk,
    "minimal": minimal,
}


def main(argv: list[str]) -> int:
    client, transport, target, warm, n = argv
    samples = CLIENTS[client](transport, target, int(warm), int(n))
    sys.stdout.write(json.dumps(samples) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
