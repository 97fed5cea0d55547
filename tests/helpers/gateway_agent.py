"""An ACP agent on stdio made of the gateway plus the bridge (acp.md §13), for the oracle.

Run as `python tests/helpers/gateway_agent.py` wherever the conformance runner would run
`python -m zeroclaw_ref acp`. It reads the environment the runner gives every agent
(transcripts.md TX-HOST-02: ZEROCLAW_CONFIG_DIR, ZEROCLAW_DATA_DIR, HOME, …), then:

1. mints a bearer token and starts `python -m zeroclaw_ref gateway --host 127.0.0.1 --port 0`
   with that environment plus one override, `ZEROCLAW_gateway__paired_tokens`, holding the
   token's SHA-256 digest (ACP-GW-03; an override is never written to `config.toml`,
   CFG-ENV-11, so the scenario's files stay as the runner made them);
2. waits, bounded and without sleeping, for the gateway's `listening <host>:<port>` line
   (ACP-GW-01). A gateway that exits first (a startup error) makes the launcher exit with its
   status, its `ERROR:` lines having gone to stderr like the stdio agent's;
3. writes a private config dir holding only a `[gateway]` table that points at that port with
   pairing required, and runs `python -m zeroclaw_ref acp-bridge --config-dir <it>` with the
   token in `ZEROCLAW_ACP_BRIDGE_TOKEN` (ACP-BR-04, ACP-BR-05). The bridge inherits the
   launcher's stdin and stdout, so stdout carries only the bridge's JSON-RPC lines
   (TX-HOST-10); everything else (the gateway's stdout included) goes to stderr;
4. when the bridge exits, stops the gateway (SIGTERM, then SIGKILL after a bound) and exits with
   the bridge's status.

No orphans: both children stay in the launcher's process group, which the runner kills as a
whole (it starts each agent in its own session); on Linux the gateway also gets SIGTERM from
the kernel if the launcher dies on its own (PR_SET_PDEATHSIG). SIGTERM or SIGINT sent to the
launcher alone is passed to the bridge, and the gateway is stopped as in step 4.

Standard library only, so it runs under any interpreter that has the checkout on its path.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parents[2]
LISTEN_TIMEOUT_SECS = 30.0  # bounds the gateway's start-up (interpreter start and config load)
STOP_TIMEOUT_SECS = 10.0  # bounds the gateway's shutdown before SIGKILL
LISTENING = b"listening "
_PR_SET_PDEATHSIG = 1


def _log(text: str) -> None:
    sys.stderr.write(f"gateway_agent: {text}\n")
    sys.stderr.flush()


def _child_env(base: dict[str, str]) -> dict[str, str]:
    """The runner's environment, with this checkout first on the module path."""
    env = dict(base)
    inherited = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + inherited if inherited else "")
    return env


def _die_with_parent() -> None:
    """In the gateway child: SIGTERM when the launcher dies without cleaning up (Linux only)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the runner's process-group kill still covers us


def _start_gateway(env: dict[str, str]) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "zeroclaw_ref", "gateway", "--host", "127.0.0.1", "--port", "0"]
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=None,  # the runner's stderr file: free-form, never judged (TX-HOST-10)
        env=env,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )


def _await_listening(gateway: subprocess.Popen[bytes]) -> tuple[str, int] | None:
    """Read the gateway's stdout up to `listening <host>:<port>`; None when it exits first or
    the deadline passes. Lines before it are copied to stderr."""
    assert gateway.stdout is not None
    fd = gateway.stdout.fileno()
    deadline = time.monotonic() + LISTEN_TIMEOUT_SECS
    pending = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                _log(f"no `listening` line within {LISTEN_TIMEOUT_SECS}s")
                return None
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.startswith(LISTENING):
                    host, _, port = line[len(LISTENING) :].decode("ascii").strip().rpartition(":")
                    _drain(gateway, pending)
                    return host.strip("[]"), int(port)
                sys.stderr.buffer.write(line + b"\n")
                sys.stderr.flush()


def _drain(gateway: subprocess.Popen[bytes], first: bytes) -> None:
    """Copy whatever else the gateway prints on stdout to stderr, so it never blocks."""
    stream = gateway.stdout
    assert stream is not None

    def copy() -> None:
        data = first
        while data:
            sys.stderr.buffer.write(data)
            sys.stderr.flush()
            data = os.read(stream.fileno(), 4096)

    threading.Thread(target=copy, name="gateway-stdout", daemon=True).start()


def _bridge_config(host: str, port: int) -> Path:
    """A config dir for the bridge alone: only the `[gateway]` table it reads (ACP-BR-04)."""
    # Under the scenario's HOME when there is one, which the runner deletes with the scenario
    # even when it had to SIGKILL us before the `finally` below could.
    home = os.environ.get("HOME")
    parent = home if home and Path(home).is_dir() else None
    folder = Path(tempfile.mkdtemp(prefix=".zc-bridge-", dir=parent))
    shown = f"[{host}]" if ":" in host else host
    _log(f"gateway at {shown}:{port}")
    (folder / "config.toml").write_text(
        f'[gateway]\nhost = "{host}"\nport = {port}\nrequire_pairing = true\n', encoding="utf-8"
    )
    return folder


def _stop(gateway: subprocess.Popen[bytes]) -> None:
    if gateway.poll() is None:
        gateway.terminate()
        try:
            gateway.wait(STOP_TIMEOUT_SECS)
        except subprocess.TimeoutExpired:
            _log("gateway ignored SIGTERM; killing it")
            gateway.kill()
            gateway.wait()
    if gateway.returncode not in (0, -signal.SIGTERM):
        _log(f"gateway exited with status {gateway.returncode}")


def _forward_signals(target: Callable[[], subprocess.Popen[bytes] | None]) -> None:
    def forward(signum: int, frame: FrameType | None) -> None:
        child = target()
        if child is not None and child.poll() is None:
            child.send_signal(signum)
        else:
            raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)


def main() -> int:
    base = _child_env(dict(os.environ))
    token = "zc_" + secrets.token_hex(32)
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
    gateway_env = dict(base)
    gateway_env["ZEROCLAW_gateway__paired_tokens"] = f'["{digest}"]'  # [ACP-GW-03]
    bridge: subprocess.Popen[bytes] | None = None
    _forward_signals(lambda: bridge)
    gateway = _start_gateway(gateway_env)
    folder: Path | None = None
    try:
        address = _await_listening(gateway)
        if address is None:
            status = gateway.poll()  # None: still running past the deadline
            _log(f"gateway did not start (status {status})")
            return status if status is not None and status > 0 else 1
        folder = _bridge_config(*address)
        bridge_env = dict(base)
        bridge_env["ZEROCLAW_ACP_BRIDGE_TOKEN"] = token  # [ACP-BR-05]
        argv = [sys.executable, "-m", "zeroclaw_ref", "acp-bridge", "--config-dir", str(folder)]
        # stdin and stdout are inherited: the bridge talks to the runner directly (ACP-BR-09).
        bridge = subprocess.Popen(argv, env=bridge_env)
        status = bridge.wait()
        return status if status >= 0 else 128 - status  # a death by signal, shell-style
    finally:
        _stop(gateway)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
