"""Shared by the MCP echo cases: the clients under test, server-everything, one session.

Each sample is one session in a fresh process (`peers/mcp_echo_clients.py`): connect, the
warm-up calls (discarded), the timed calls, close. server-everything runs on the machine's
Node from `.peers/` (mcp.md §15.3); the 2026-07-28 cases use `peers/mcp_modern_lean_server.py`
instead (server-everything speaks only the handshake era; see that file for why it is lean).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from client import AgentSpec

BENCH_DIR = Path(__file__).resolve().parents[1]
REPO = BENCH_DIR.parent
EVERYTHING = REPO / ".peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
CLIENTS = BENCH_DIR / "peers" / "mcp_echo_clients.py"
MODERN_SERVER = BENCH_DIR / "peers" / "mcp_modern_lean_server.py"
SESSION_TIMEOUT_S = 300


def missing() -> str | None:
    """Why the MCP cases cannot run here, or None."""
    if shutil.which("node") is None:
        return "node not on PATH"
    if not EVERYTHING.is_file():
        return "npm install @modelcontextprotocol/server-everything@2026.8.31 (in .peers/)"
    if importlib.util.find_spec("mcp") is None:
        return "pip install mcp==2.3.0 (the `test` extra)"
    return None


def missing_modern() -> str | None:
    """Why the 2026-07-28 cases cannot run here, or None (they need only the SDK)."""
    if importlib.util.find_spec("mcp") is None:
        return "pip install mcp==2.3.0 (the `test` extra)"
    return None


def modern_server_argv(mode: str, port: int | None = None) -> list[str]:
    """The 2026-07-28 echo server: `stdio`, or `http` on `port`."""
    return [sys.executable, str(MODERN_SERVER), mode, *([] if port is None else [str(port)])]


def client_specs(names: tuple[str, ...]) -> list[AgentSpec]:
    return [AgentSpec(name, (sys.executable, str(CLIENTS), name)) for name in names]


def server_argv(mode: str) -> list[str]:
    node = shutil.which("node")
    assert node is not None
    return [node, str(EVERYTHING), mode]


def run_session(spec: AgentSpec, transport: str, target: str, warm: int, n: int) -> list[float]:
    """One session of `spec`'s client; returns the timed round trips in seconds."""
    argv = [*spec.argv, transport, target, str(warm), str(n)]
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=SESSION_TIMEOUT_S, check=False, cwd=REPO
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{spec.name} ({transport}) failed: {proc.stderr[-2000:]}")
    samples: list[float] = json.loads(proc.stdout)
    if len(samples) != n:
        raise RuntimeError(f"{spec.name}: {len(samples)} samples, expected {n}")
    return samples


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class HttpServer:
    """server-everything in `streamableHttp` mode on a free loopback port (context manager);
    with `modern`, the lean 2026-07-28 echo server instead."""

    def __init__(self, modern: bool = False) -> None:
        self.port = _free_port()
        env = {**os.environ, "PORT": str(self.port)}
        argv = modern_server_argv("http", self.port) if modern else server_argv("streamableHttp")
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> HttpServer:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the HTTP server exited at start-up: {self.proc.args}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.02)
        self.__exit__()
        raise RuntimeError(f"the HTTP server did not listen within 20 s: {self.proc.args}")

    def __exit__(self, *_exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
