"""Minimal raw JSON-RPC stdio clients (stdlib only) that drive every benchmarked agent alike.

`RawClient`: one reader thread parses stdout lines into a queue; the caller writes a request and
takes messages off the queue until the response with its id arrives (notifications are counted
and dropped). `BlockingClient`: no thread at all on the message path; the caller writes a
request and reads lines itself until the response arrives, so the client adds no hand-off of
its own to a round trip. Both send stderr to a file so a chatty agent can never block on a full
pipe.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
WAIT = 10.0


@dataclass(frozen=True)
class AgentSpec:
    """How to start one agent under test."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


def agent_specs(scratch: Path) -> list[AgentSpec]:
    """Our agent and the SDK anchor, both with the same scratch HOME and config dir."""
    home = scratch / "home"
    config_dir = home / "config"
    config_dir.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "ZEROCLAW_CONFIG_DIR": str(config_dir),
    }
    return [
        AgentSpec("ours", (sys.executable, "-m", "zeroclaw_ref", "acp"), env),
        AgentSpec("sdk", (sys.executable, str(BENCH_DIR / "peers" / "sdk_echo_agent.py")), env),
    ]


class AgentDied(RuntimeError):
    pass


class RawClient:
    """Spawns `spec` and speaks newline-delimited JSON-RPC to it over stdio."""

    def __init__(self, spec: AgentSpec, cwd: Path) -> None:
        self.spec = spec
        # Lives as long as the client; close() closes it.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            spec.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=spec.env,
            cwd=cwd,
        )
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._next_id = 0
        self.notifications = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self._messages.put(json.loads(line))
        self._messages.put(None)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and return its response (the whole envelope)."""
        request_id = self._next_id
        self._next_id += 1
        data = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        assert self.proc.stdin is not None
        self.proc.stdin.write(data.encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + WAIT
        while True:
            try:
                message = self._messages.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AgentDied(self._explain(f"no response to {method} in {WAIT} s")) from None
            if message is None:
                raise AgentDied(self._explain(f"stdout closed while waiting for {method}"))
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise AgentDied(self._explain(f"{method} failed: {message['error']}"))
                return message
            self.notifications += 1

    def close(self) -> int:
        """Close stdin and wait for the agent to exit (kill it after 5 s)."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._stderr.close()
        return code

    def _explain(self, what: str) -> str:
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode("utf-8", "replace")
        return f"{self.spec.name}: {what}\n--- stderr ---\n{tail}"

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BlockingClient:
    """Spawns `spec` and speaks newline-delimited JSON-RPC to it from the calling thread only.

    A plain blocking `readline` has no timeout, so a watchdog kills the agent once `budget`
    seconds have passed since the spawn; the pending read then ends and raises `AgentDied`.
    """

    def __init__(self, spec: AgentSpec, cwd: Path, budget: float = 120.0) -> None:
        self.spec = spec
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            spec.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=spec.env,
            cwd=cwd,
        )
        self._watchdog = threading.Timer(budget, self.proc.kill)
        self._watchdog.daemon = True
        self._watchdog.start()
        self._next_id = 0
        self.notifications = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and return its response (the whole envelope)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request_id = self._next_id
        self._next_id += 1
        data = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        self.proc.stdin.write(data.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AgentDied(self._explain(f"stdout closed while waiting for {method}"))
            if not line.strip():
                continue
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise AgentDied(self._explain(f"{method} failed: {message['error']}"))
                return dict(message)
            self.notifications += 1

    def close(self) -> int:
        """Close stdin and wait for the agent to exit (kill it after 5 s)."""
        self._watchdog.cancel()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._stderr.close()
        return code

    def _explain(self, what: str) -> str:
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode("utf-8", "replace")
        return f"{self.spec.name}: {what}\n--- stderr ---\n{tail}"

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


INITIALIZE_PARAMS: dict[str, Any] = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
    "clientInfo": {"name": "zeroclaw-ref-bench", "version": "0"},
}
