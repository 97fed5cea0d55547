"""The server's side of the `landlock` backend's fork server (see confine.py).

Goals: a confined command costs a fork, not an interpreter start; a timeout or cancel can
always kill it; the server never forks itself (it is threaded). Plan: one fork server per
process, started on the first command from a clean environment, proved by a `--probe`
request, then sent one request per command over a SOCK_SEQPACKET socket: the options as
NUL-separated words, and four descriptors (a fresh reply socket, stdin, stdout, stderr).
Caveat: a fork server that died is restarted once per request; a second failure is the
command's failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from zeroclaw_ref.core.affinity import unpinned

CONFINE = Path(__file__).with_name("confine.py")
PROBE_TIMEOUT = 10.0


class SandboxStartError(Exception):
    """The fork server could not start or could not confine; the text says why."""


class Confined:
    """One running confined command: its process group, exit status and kill."""

    def __init__(self, reply: socket.socket) -> None:
        self._reply = reply
        self._buffer = b""
        self.pid = self._expect("pid", None)
        self.returncode: int | None = None

    def _expect(self, word: str, timeout: float | None) -> int:
        """The number after `word` in the next reply line; TimeoutError past `timeout`.

        Raises:
            EOFError: the reply socket closed (the process was killed).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._reply.settimeout(left)
            else:
                self._reply.settimeout(None)
            try:
                chunk = self._reply.recv(64)
            except TimeoutError:
                raise
            except OSError as exc:
                raise EOFError from exc
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        name, _, value = line.decode("ascii", "replace").partition(" ")
        if name != word:
            raise EOFError
        return int(value)

    def wait(self, timeout: float | None) -> int | None:
        """The command's exit code (minus the signal number when killed), None on timeout."""
        if self.returncode is None:
            try:
                self.returncode = self._expect("exit", timeout)
            except TimeoutError:
                return None
            except (EOFError, ValueError):
                self.returncode = -signal.SIGKILL
        return self.returncode

    def kill(self) -> None:
        """Kill the whole group. Safe while the reply socket is open: the wrapper process
        waits for it to close before exiting, so its pid cannot have been reused."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def close(self) -> None:
        """Kill what is left and let the wrapper go."""
        self.kill()
        self._reply.close()


class ForkServer:
    """The process-wide fork server (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._control: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, "-I", "-S", str(CONFINE), "--serve", str(theirs.fileno())]
        try:
            with unpinned():  # the fork server and every command get every CPU
                self._process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    env={},  # it inherits no secret; each request carries its own environment
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,
                )
        except OSError as exc:
            ours.close()
            raise SandboxStartError(f"cannot start the sandbox fork server: {exc}") from exc
        finally:
            theirs.close()
        self._control = ours
        return ours

    def run(self, words: list[str], stdin: int, stdout: int, stderr: int) -> Confined:
        """Start one confined command; the descriptors are the caller's to close."""
        # Paths and values that are not UTF-8 travel as the bytes they are (surrogateescape).
        payload = "\0".join(words).encode("utf-8", "surrogateescape")
        for attempt in (1, 2):
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                with self._lock:
                    control = self._control or self._start()
                    socket.send_fds(control, [payload], [theirs.fileno(), stdin, stdout, stderr])
            except OSError as exc:
                ours.close()
                self._forget()
                if attempt == 2:
                    raise SandboxStartError(f"the sandbox fork server is gone: {exc}") from exc
                continue
            finally:
                theirs.close()
            try:
                return Confined(ours)
            except (EOFError, ValueError) as exc:
                ours.close()
                self._forget()
                if attempt == 2:
                    raise SandboxStartError("the sandbox fork server did not answer") from exc
        raise AssertionError("unreachable")

    def probe(self, words: list[str]) -> str | None:
        """Run a `--probe` request (confine, then exit); the problem it reports, or None."""
        read_end, write_end = os.pipe()
        try:
            with Path(os.devnull).open("rb") as null:
                running = self.run([*words, "--probe"], null.fileno(), write_end, write_end)
            os.close(write_end)
            write_end = -1
            code = running.wait(PROBE_TIMEOUT)
            running.close()
            with os.fdopen(read_end, "rb", closefd=False) as stream:
                text = stream.read(4096).decode("utf-8", "replace").strip()
        except SandboxStartError as exc:
            return str(exc)
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
        if code == 0:
            return None
        return text.removeprefix("zeroclaw sandbox: ") or f"the probe exited with {code}"

    def _forget(self) -> None:
        with self._lock:
            if self._control is not None:
                self._control.close()
            self._control = None
            if self._process is not None:
                with contextlib.suppress(OSError):
                    self._process.kill()
                self._process.wait()
            self._process = None


FORK_SERVER = ForkServer()
