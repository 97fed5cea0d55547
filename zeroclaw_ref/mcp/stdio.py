"""The stdio transport: one child process per incarnation (mcp.md §3; DESIGN §7.3, §7.8).

Plan: each child (a *generation*) gets three daemon threads: a stdout reader that routes
messages, a stderr drain that keeps a bounded tail and forwards lines to the log, and an exit
waiter blocked in `Popen.wait()`, so that exit is noticed even while a grandchild holds stdout
open (MCP-STDIO-17). Whichever of reader (EOF) and waiter (exit) comes first reports the death,
once. Writes go through a per-connection lock with one write and a flush (MCP-STDIO-06), so the
caller learns synchronously whether its line left (MCP-STDIO-27).
Each child leads a process group of its own, and closing signals the group (procgroup.py), so
that a launcher's grandchildren (`npx` → `npm exec` → `node`) end with it.
Caveats: a thread blocked reading a pipe is never joined without a bound; closing abandons it
(its generation has ended, MCP-STDIO-24).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.affinity import unpinned
from zeroclaw_ref.core.cancel import Slot
from zeroclaw_ref.core.jsontypes import JSONObject, dumps, loads
from zeroclaw_ref.mcp import errors, procgroup
from zeroclaw_ref.mcp.options import McpOptions
from zeroclaw_ref.mcp.scrubber import scrub_secrets
from zeroclaw_ref.mcp.transport import Outcome, PreWriteError, Router, Transport

log = logging.getLogger(__name__)

CHUNK = 65_536  # [MCP-STDIO-12] [MCP-STDIO-14] stderr read size and log piece size
EXIT_DRAIN_S = 0.25  # [MCP-STDIO-17] [MCP-STDIO-18] [MCP-STDIO-20]
SIGTERM_GRACE_S = 2.0  # [MCP-STDIO-23]
EXCERPT_BYTES = 500  # [MCP-STDIO-21]
_BOM = b"\xef\xbb\xbf"


@dataclass(eq=False)
class _Child:
    proc: subprocess.Popen[bytes]
    generation: int
    tail: bytearray = field(default_factory=bytearray)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ended: threading.Event = field(default_factory=threading.Event)
    reader_done: threading.Event = field(default_factory=threading.Event)
    drain_done: threading.Event = field(default_factory=threading.Event)
    closing: bool = False
    reported: bool = False


def merged_env(config: McpServerConfig) -> dict[str, str]:
    """[MCP-STDIO-02] the parent environment plus the configured entries."""
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in config.env.items()})
    return env


def excerpt(tail: bytes) -> str:
    """[MCP-STDIO-21] the last <=500 bytes at a character boundary, trimmed, secrets scrubbed."""
    cut = tail[-EXCERPT_BYTES:]
    while cut and len(tail) > EXCERPT_BYTES and (cut[0] & 0xC0) == 0x80:
        cut = cut[1:]
    text = scrub_secrets(cut.decode("utf-8", errors="replace").strip())
    return text or "(empty)"


def exit_status(code: int | None) -> str:
    """[MCP-STDIO-20]"""
    if code is None:
        return "exit status unknown"
    return f"exit code {code}" if code >= 0 else f"signal {-code}"


class StdioTransport(Transport):
    """Spawns `[command] + args` without a shell; every incarnation is a new child."""

    serial = False

    def __init__(self, config: McpServerConfig, options: McpOptions, router: Router) -> None:
        self._config = config
        self._options = options
        self._router = router
        self._name = config.name
        self._write_lock = threading.Lock()
        self._child: _Child | None = None
        self._server_log = logging.getLogger(f"zeroclaw_ref.mcp.server.{config.name}")

    # --- incarnations ---------------------------------------------------------------------

    def open(self, generation: int, deadline: float) -> None:
        """[MCP-STDIO-01..04] spawn and start the three threads."""
        env = merged_env(self._config)
        command = self._config.command
        executable = shutil.which(command, path=env.get("PATH")) or command
        try:
            with unpinned():  # the server gets every CPU, not the ACP server's pin
                proc = subprocess.Popen(  # [MCP-STDIO-03] no cwd: the parent's is inherited
                    [executable, *self._config.args],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    # [MCP-STDIO-23] a group of its own, so that closing reaches the whole tree
                    start_new_session=True,
                )
        except OSError as exc:
            raise errors.McpConnectError(
                self._name,
                f"failed to create transport for MCP server `{self._name}`: failed to spawn MCP "
                f"server `{self._name}`: {exc}",
            ) from exc
        child = _Child(proc, generation)
        self._child = child
        for target, role in ((self._read, "stdout"), (self._drain, "stderr"), (self._wait, "exit")):
            threading.Thread(
                target=target, args=(child,), name=f"mcp-{self._name}-{role}", daemon=True
            ).start()

    def reset(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            self._terminate(child)

    def close(self) -> None:
        self.reset()

    @property
    def pid(self) -> int | None:
        """The current child's process id (diagnostics and tests)."""
        return self._child.proc.pid if self._child is not None else None

    # --- writing --------------------------------------------------------------------------

    def send_request(
        self, message: JSONObject, request_id: int, slot: Slot[Outcome], deadline: float, op: str
    ) -> None:
        self._write(message)

    def send_message(self, message: JSONObject) -> None:
        self._write(message)

    def _write(self, message: JSONObject) -> None:
        """[MCP-STDIO-06] [MCP-STDIO-27] one line, one write, one flush, under the lock."""
        child = self._child
        data = (dumps(message) + "\n").encode("utf-8")
        if child is None or child.ended.is_set() or child.proc.stdin is None:
            raise PreWriteError(self._write_error("the process is not running"))
        with self._write_lock:
            try:
                child.proc.stdin.write(data)
                child.proc.stdin.flush()
            except (OSError, ValueError) as exc:
                raise PreWriteError(self._write_error(str(exc) or type(exc).__name__)) from exc

    def _write_error(self, reason: str) -> errors.McpError:
        return errors.McpConnectError(
            self._name, f"failed to write to MCP server `{self._name}`: {reason}"
        )

    # --- the three threads ----------------------------------------------------------------

    def _read(self, child: _Child) -> None:
        """[MCP-STDIO-07] [MCP-STDIO-09] [MCP-STDIO-15] bounded lines, routed by generation."""
        out = child.proc.stdout
        assert out is not None
        limit = self._options.stdio_max_message_bytes
        first = True
        try:
            while True:
                try:
                    line = out.readline(limit + 1)
                except (OSError, ValueError):
                    break
                if not line:
                    break
                if not line.endswith(b"\n") and len(line) > limit:
                    self._oversized(child, limit)
                    return
                line = line.removesuffix(b"\n").removesuffix(b"\r")
                if first:
                    line, first = line.removeprefix(_BOM), False
                if not line:
                    continue
                if child.ended.is_set():
                    return  # [MCP-STDIO-10]
                try:
                    value = loads(line)
                except ValueError:
                    log.debug("MCP server `%s`: skipping a non-JSON stdout line", self._name)
                    continue
                self._router.route(value, child.generation)
        finally:
            child.reader_done.set()
            with contextlib.suppress(OSError):
                out.close()
        self._on_eof(child)

    def _on_eof(self, child: _Child) -> None:
        """[MCP-STDIO-19] [MCP-STDIO-20] EOF: give the process 250 ms to exit, then report."""
        if child.ended.is_set():
            return
        try:
            code: int | None = child.proc.wait(EXIT_DRAIN_S)
        except subprocess.TimeoutExpired:
            code = None
        self._report(child, exit_status(code))
        if code is None:
            self._terminate(child)

    def _wait(self, child: _Child) -> None:
        """[MCP-STDIO-17] [MCP-STDIO-18] exit seen even while a grandchild holds stdout."""
        code = child.proc.wait()
        child.reader_done.wait(EXIT_DRAIN_S)
        self._report(child, exit_status(code))

    def _drain(self, child: _Child) -> None:
        """[MCP-STDIO-12..14] keep a bounded tail; forward complete lines at INFO."""
        err = child.proc.stderr
        assert isinstance(err, io.BufferedReader)
        keep = self._options.stderr_tail_bytes
        partial = bytearray()
        try:
            while True:
                try:
                    chunk = err.read1(CHUNK)
                except (OSError, ValueError):
                    break
                if not chunk:
                    break
                with child.lock:
                    child.tail += chunk
                    del child.tail[: max(0, len(child.tail) - keep)]
                partial += chunk
                while (end := partial.find(b"\n")) >= 0:
                    self._forward(bytes(partial[:end]))
                    del partial[: end + 1]
                while len(partial) >= CHUNK:
                    self._forward(bytes(partial[:CHUNK]))
                    del partial[:CHUNK]
            if partial:
                self._forward(bytes(partial))
        finally:
            child.drain_done.set()
            with contextlib.suppress(OSError):
                err.close()

    def _forward(self, line: bytes) -> None:
        text = line.removesuffix(b"\r").decode("utf-8", errors="replace")
        self._server_log.info("%s", text)

    # --- death and closing ----------------------------------------------------------------

    def _report(self, child: _Child, status: str) -> None:
        """Report the death of `child` once, unless it is being closed on purpose."""
        with child.lock:
            if child.reported or child.closing:
                child.ended.set()
                return
            child.reported = True
        child.ended.set()
        child.drain_done.wait(EXIT_DRAIN_S)
        with child.lock:
            tail = bytes(child.tail)
        full = tail.decode("utf-8", errors="replace")
        # [MCP-STDIO-22] the whole retained tail, logged and attached to the exception
        log.warning("MCP server `%s` exited (%s); stderr tail:\n%s", self._name, status, full)
        cause = f"process exited ({status}); stderr tail: {excerpt(tail)}"
        self._router.transport_failed(child.generation, cause, full)

    def _oversized(self, child: _Child, limit: int) -> None:
        """[MCP-STDIO-16] a fatal protocol error: report, then close the child."""
        with child.lock:
            child.reported = True
        child.ended.set()
        self._router.transport_failed(child.generation, f"message exceeded the {limit}-byte limit")
        self._terminate(child)

    def _terminate(self, child: _Child) -> None:
        """[MCP-STDIO-23] stdin closed, grace, SIGTERM, grace, SIGKILL, always reaped.

        Every step addresses the child's process group: a grace period ends when the child and
        every member of its group have exited, and the signals go to the group. A grandchild
        that ignores end of input therefore gets SIGTERM (then SIGKILL) even after the child
        itself has exited, and a launcher cannot leave the real server behind.
        """
        with child.lock:
            child.closing = True
        child.ended.set()
        proc = child.proc
        grace = self._options.close_grace_s
        if self._write_lock.acquire(timeout=grace):
            try:
                if proc.stdin is not None:
                    with contextlib.suppress(OSError, ValueError):
                        proc.stdin.close()
            finally:
                self._write_lock.release()
        # The child leads its group: the group id is its pid (start_new_session in open()).
        pgid = proc.pid
        if _wait_tree(proc, pgid, time.monotonic() + grace):
            return
        # A group already gone (everyone exited meanwhile) is not an error at either signal.
        if procgroup.signal_group(pgid, signal.SIGTERM) and not _wait_tree(
            proc, pgid, time.monotonic() + SIGTERM_GRACE_S
        ):
            procgroup.signal_group(pgid, signal.SIGKILL)
        proc.wait()


def _wait_tree(proc: subprocess.Popen[bytes], pgid: int, deadline: float) -> bool:
    """Wait until `proc` and every other member of its group have exited, up to `deadline`."""
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return procgroup.wait_group(pgid, deadline)
