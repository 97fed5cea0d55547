"""A fake serial board on a pseudo-terminal, speaking the line protocol of policy.md §9.2.

The board owns the master side of `os.openpty()`; the code under test opens the slave path
(under `/dev/pts/`) with pyserial. A daemon thread reads request lines and answers each one as
the public switches say at the moment the request arrives:

- `noise`: non-matching frames sent before the reply (alternating a log object and a reply
  with another id);
- `garbage`: raw lines sent before the reply (anything: bad JSON, arrays, invalid UTF-8);
- `silent`: no reply at all (the request runs into its deadline);
- `reply`: the fields of the reply besides `id` (default: ok with a result naming the command);
- `pace_secs`: wait before replying, then record whether another request arrived meanwhile
  (`overlaps`) — the pacing is the behaviour under test (concurrent requests on one port);
- `gate`: an event the board waits for (bounded) before replying, so a test can act while a
  request is in flight;
- `disconnect_on_request`: hang up instead of answering (the client sees an I/O error).

`stop()` (or `disconnect()`) ends the thread; waits are bounded by a self-pipe wake-up.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import threading
from pathlib import Path
from typing import Any

import pytest
import serial

from zeroclaw_ref.config.model import PeripheralBoard, PeripheralsConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.tools import peripherals
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult


class FakeBoard:
    def __init__(self) -> None:
        self._master, self._slave = os.openpty()
        # The board keeps its own slave descriptor open so the master never reads EIO while
        # the code under test has the port closed.
        self.pts_path = os.ttyname(self._slave)
        self._wake_r, self._wake_w = os.pipe()
        self._stopped = threading.Event()
        self._close_lock = threading.Lock()
        self.noise = 0
        self.garbage: list[bytes] = []
        self.silent = False
        self.reply: dict[str, Any] | None = None
        self.pace_secs = 0.0
        self.disconnect_on_request = False
        self.gate: threading.Event | None = None
        self.lines: list[bytes] = []  # every request line received, without the newline
        self.requests: list[dict[str, Any]] = []
        self.overlaps = 0
        self._buffer = b""
        self._thread = threading.Thread(target=self._run, name="fake-board", daemon=True)
        self._thread.start()

    # -- switches used from the test thread ------------------------------------------------

    def stop(self) -> None:
        """Hang up (if not yet) and join the thread, bounded."""
        if not self._stopped.is_set():
            self._stopped.set()
            os.write(self._wake_w, b"x")
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "fake board thread did not end"
        self._hang_up()
        if self._wake_r >= 0:
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1

    def disconnect(self) -> None:
        """Unplug: close the pseudo-terminal, so the port's holder gets I/O errors."""
        self.stop()

    def _hang_up(self) -> None:
        with self._close_lock:
            if self._master >= 0:
                os.close(self._master)
                os.close(self._slave)
                self._master = self._slave = -1

    # -- the board thread --------------------------------------------------------------------

    def _send(self, line: bytes) -> None:
        os.write(self._master, line + b"\n")

    def _readable(self, timeout: float | None) -> bool:
        ready, _, _ = select.select([self._master, self._wake_r], [], [], timeout)
        return self._master in ready and not self._stopped.is_set()

    def _run(self) -> None:
        try:
            while not self._stopped.is_set():
                if not self._readable(None):
                    continue
                self._buffer += os.read(self._master, 65536)
                while b"\n" in self._buffer and not self._stopped.is_set():
                    line, self._buffer = self._buffer.split(b"\n", 1)
                    self._answer(line)
        except OSError:
            pass  # the pty was closed under us: the board is gone

    def _answer(self, line: bytes) -> None:
        self.lines.append(line)
        request = json.loads(line)
        self.requests.append(request)
        if self.disconnect_on_request:
            self._stopped.set()
            self._hang_up()
            return
        if self.pace_secs:
            # Pacing is the behaviour under test: a second request arriving now would mean the
            # port let two requests interleave.
            self._stopped.wait(self.pace_secs)
            if self._readable(0) or b"\n" in self._buffer:
                self.overlaps += 1
        if self.gate is not None:
            self.gate.wait(10)
        for index in range(self.noise):
            other = {"log": "boot"} if index % 2 == 0 else {"id": "not-" + request["id"]}
            self._send(json.dumps(other).encode())
        for raw in self.garbage:
            self._send(raw)
        if self.silent:
            return
        fields = self.reply or {"ok": True, "result": f"{request['cmd']} {request['args']}"}
        self._send(json.dumps({"id": request["id"], **fields}, separators=(",", ":")).encode())


def relink(link: Path, board: FakeBoard) -> None:
    """Point `link` at `board`'s device, as when a board is replugged at the same path."""
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    link.symlink_to(board.pts_path)


# -- building configurations and calling the tools -------------------------------------------


def board_cfg(name: str, path: str | None, transport: str = "serial") -> PeripheralBoard:
    return PeripheralBoard(board=name, transport=transport, path=path, baud=115200)


def config(
    *items: PeripheralBoard, prefixes: tuple[str, ...] = ("/dev/pts/",)
) -> PeripheralsConfig:
    return PeripheralsConfig(enabled=True, boards=items, allowed_path_prefixes=prefixes)


def ctx(cancel: CancelToken | None = None) -> ToolContext:
    return ToolContext(cancel=cancel or CancelToken())


def tools_of(*fakes: FakeBoard) -> dict[str, Tool]:
    """One "execution": the tools `peripheral_tools` gives for these boards, by name."""
    cfg = config(*(board_cfg(f"b{i}", fake.pts_path) for i, fake in enumerate(fakes)))
    return {tool.name: tool for tool in peripherals.peripheral_tools(cfg)}


def read(tools: dict[str, Tool], pin: int = 2) -> ToolResult:
    return tools["gpio_read"].execute({"pin": pin}, ctx())


def count_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every device path handed to pyserial, in order."""
    seen: list[str] = []
    real = serial.Serial

    def counting(path: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(serial, "Serial", counting)
    return seen


def refuse_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any attempt to open a serial device fail the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a serial device must not be opened here")

    monkeypatch.setattr(serial, "Serial", refuse)


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The lines the peripherals module logged, in order."""
    return [r.getMessage() for r in caplog.records if r.name == peripherals.__name__]
