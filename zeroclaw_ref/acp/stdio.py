"""`python -m zeroclaw_ref acp`: the stdio front door (acp.md §1.1, §1.7).

Goals: stdout carries only JSON-RPC (ACP-TR-02) — even a stray `print` or a child process that
inherits fd 1 cannot pollute it, because the protocol stream is a private duplicate of fd 1 and
fd 1 itself is pointed at stderr; the main thread is the reader, so SIGINT/SIGTERM end the read
like end of input (ACP-TR-37, DESIGN §7.2); shutdown runs the named steps of ACP-TR-35.
The process lives as long as the editor does, so sessions are built from a reloading snapshot
(`StdioOptions.config_source`, config.md CFG-LOAD-10) rather than from the one loaded at start.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.affinity import pin_current_thread
from zeroclaw_ref.core.clock import Clock
from zeroclaw_ref.core.ids import IdFactory
from zeroclaw_ref.core.limits import MAX_INBOUND_LINE_BYTES, SHUTDOWN_BUDGET_SECS
from zeroclaw_ref.rpc.reader import StopReading, read_lines
from zeroclaw_ref.rpc.writer import Writer
from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.store.sessions import SessionStore

from .server import AcpServer, ServerOptions

log = logging.getLogger(__name__)

_WAKE = signal.SIGUSR1  # sent to the main thread when stdout breaks (ACP-TR-36)


@dataclass(frozen=True, slots=True)
class StdioOptions:
    reaper_interval: float
    pin_cpu: bool = False  # core/affinity.py: one CPU for the server's threads (`acp` sets it)
    # [CFG-LOAD-10] the current snapshot for each new, loaded or resumed session; None: `config`
    config_source: Callable[[], ConfigSnapshot] | None = field(default=None, compare=False)


class _Input:
    """Reads stdin; a stop request interrupts only the blocking read itself."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.stopping = threading.Event()
        self._in_read = False

    def read(self, size: int) -> bytes:
        if self.stopping.is_set():
            return b""
        self._in_read = True
        try:
            return os.read(self._fd, size)
        finally:
            self._in_read = False

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping.set()
        if self._in_read:
            raise StopReading  # PEP 475 would otherwise retry the read


def _protocol_sink() -> Callable[[bytes], None]:
    """Keep a private copy of stdout for JSON-RPC and send everything else to stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    return write


def serve_stdio(config: ConfigSnapshot, ids: IdFactory, clock: Clock, opts: StdioOptions) -> int:
    """Run the server until end of input; returns the exit status (always 0, ACP-TR-35)."""
    if opts.pin_cpu:
        # Before the first thread starts, so that every thread of the server inherits it.
        pin_current_thread()
    stdin = _Input(0)
    main_ident = threading.get_ident()

    def broken() -> None:
        stdin.stopping.set()
        signal.pthread_kill(main_ident, _WAKE)

    store = open_store(config)  # [ACP-STORE-02] once, before the first message is read
    writer = Writer(_protocol_sink(), on_broken=broken, joins=True)
    options = ServerOptions(config_source=opts.config_source)
    server = AcpServer(config, writer.send, ids, clock, options, store)
    for signum in (signal.SIGTERM, signal.SIGINT, _WAKE):
        signal.signal(signum, stdin.on_signal)
    reaper_stop = threading.Event()
    reaper = threading.Thread(
        target=_reap_loop, args=(server, reaper_stop, opts.reaper_interval), daemon=True
    )
    reaper.start()

    def on_line(line: bytes | object) -> None:
        server.endpoint.dispatch(line)  # type: ignore[arg-type]
        if stdin.stopping.is_set():
            raise StopReading

    read_lines(stdin.read, on_line, MAX_INBOUND_LINE_BYTES)
    # [ACP-TR-35] stop reading; cancel turns; resolve pending requests; drain; flush; exit 0.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    reaper_stop.set()
    server.shutdown(SHUTDOWN_BUDGET_SECS)
    writer.close()
    reaper.join(1.0)
    if store is not None:
        store.close()
    return 0


def open_store(config: ConfigSnapshot) -> SessionStore | None:
    """[ACP-STORE-04] a store that cannot be opened leaves the server running in memory."""
    try:
        return SessionStore.open(config.data_dir)
    except StoreError as exc:
        log.warning("Failed to open ACP session store: %s", exc)
        return None


def _reap_loop(server: AcpServer, stop: threading.Event, interval: float) -> None:
    """[ACP-REAP-01] every interval, drop idle sessions past session_timeout_secs."""
    while not stop.wait(interval):
        server.reap_idle()
