"""A minimal stdlib ACP client that drives `python -m zeroclaw_ref acp` for tests.

Every wait is bounded; on expiry it fails with what it waited for and the recent traffic.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

DEFAULT_WAIT = 10.0


class AcpProcess:
    def __init__(
        self,
        config_dir: Path,
        *args: str,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        full_env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(config_dir.parent),
            "LANG": "C.UTF-8",
            "ZEROCLAW_CONFIG_DIR": str(config_dir),
        }
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "zeroclaw_ref", "acp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd or config_dir.parent,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.traffic: list[str] = []
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._pump_out, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    def _pump_out(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self.lines.put(line)
        except (ValueError, OSError):
            pass  # the test closed our end of the pipe on purpose
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace"))

    def send(self, message: dict[str, Any] | str | bytes) -> None:
        if isinstance(message, dict):
            data = json.dumps(message).encode() + b"\n"
        elif isinstance(message, str):
            data = message.encode() + b"\n"
        else:
            data = message
        self.traffic.append("--> " + data.decode("utf-8", "replace").rstrip("\n"))
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self, what: str = "a message", timeout: float = DEFAULT_WAIT) -> dict[str, Any]:
        try:
            raw = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(self._explain(f"timed out waiting for {what}")) from None
        if raw is None:
            raise AssertionError(self._explain(f"stdout closed while waiting for {what}"))
        text = raw.decode("utf-8")
        self.traffic.append("<-- " + text.rstrip("\n"))
        assert text.endswith("\n") and not text.endswith("\r\n"), text
        value = json.loads(text)
        assert isinstance(value, dict)
        return value

    def request(self, msg_id: Any, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def response(self, msg_id: Any, collect: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Read until the response with `msg_id`; other messages go to `collect`."""
        while True:
            message = self.recv(f"the response to {msg_id!r}")
            if message.get("id") == msg_id and ("result" in message or "error" in message):
                return message
            if collect is None:
                raise AssertionError(self._explain(f"unexpected message {message}"))
            collect.append(message)

    def close_input(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=DEFAULT_WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(self._explain("agent did not exit after EOF")) from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=DEFAULT_WAIT)

    def _explain(self, headline: str) -> str:
        recent = "\n".join(self.traffic[-10:])
        err = "".join(self.stderr_lines[-20:])
        return f"{headline}\nrecent traffic:\n{recent}\nstderr:\n{err}"
