"""Serial boards and their GPIO tools, shared by every execution of the process (policy.md §9).

Goals: a board is opened at most once per process and every execution that connects
peripherals talks to the same handle, one request at a time (POL-PERIPH-02); nothing here runs
unless `assemble()` asks for peripheral tools on a path that connects them (POL-PERIPH-01).

Plan: `peripheral_tools()` walks the configured boards in order (POL-PERIPH-03..07) through the
process-wide `PeripheralManager`, which keeps one `_Port` per device path. A `_Port` owns the
pyserial handle and a lock; a request writes one JSON line and reads lines until the matching
reply, the skip limit or the deadline (POL-PERIPH-09..12). An I/O error closes the handle and
the next request opens it again (POL-PERIPH-13).

Caveats: `serial` is imported lazily, inside the functions that open a device, so importing this
module (or answering `initialize`) never loads pyserial (DESIGN §5.3). A request is bounded by
its deadline, not by the cancel token; the token is checked before sending and on return
(DESIGN §7.6).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Final

from zeroclaw_ref.config.model import PeripheralBoard, PeripheralsConfig
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps, loads
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, argument, missing

if TYPE_CHECKING:
    import serial

log = logging.getLogger(__name__)

# [POL-PERIPH-11] one deadline covers writing the request and reading its reply. Design: kept
# here next to the protocol rather than in core/limits.py, which holds the ACP side's limits;
# tests shorten it per manager (`reset_for_tests(deadline_secs=…)`).
REQUEST_DEADLINE_SECS: Final = 5.0

# [POL-PERIPH-10] "the seventeenth non-matching frame MUST end the request"
MAX_SKIPPED_FRAMES: Final = 16
SKIP_LIMIT_TEXT: Final = (
    f"Serial response skip limit exceeded (maximum {MAX_SKIPPED_FRAMES} frames)"
)
DEVICE_FAILURE_TEXT: Final = "Device reported failure"  # [POL-PERIPH-12]
# Design: no spec text exists for a cancelled request; the engine reports the cancelled turn.
CANCELLED_TEXT: Final = "Serial request cancelled"
TOOL_NAMES: Final = ("gpio_read", "gpio_write")  # [POL-ASSEMBLE-18] in registry order


def timeout_text(deadline_secs: float) -> str:
    """[POL-PERIPH-11] the expiry failure; `5.0` gives `Serial request timed out after 5s`."""
    shown = int(deadline_secs) if float(deadline_secs).is_integer() else deadline_secs
    return f"Serial request timed out after {shown}s"


# [POL-PERIPH-09] request ids come from one process-wide counter starting at 0.
_ids_lock = threading.Lock()
_ids = itertools.count()


def _next_id() -> str:
    with _ids_lock:
        return str(next(_ids))


def _open_device(path: str, baud: int, deadline_secs: float) -> serial.Serial:
    """[POL-PERIPH-06] open at `baud`, 8N1, exclusively.

    Raises:
        serial.SerialException or OSError when the device cannot be opened; the caller logs
        it and skips the board (or fails the request, when reopening).
    """
    import serial  # lazily: only a connecting resolution may load pyserial (DESIGN §5.3)

    return serial.Serial(
        path,
        baudrate=baud,
        bytesize=serial.EIGHTBITS,
        parity=serial.PARITY_NONE,
        stopbits=serial.STOPBITS_ONE,
        exclusive=True,
        timeout=deadline_secs,
        write_timeout=deadline_secs,
    )


def _io_errors() -> tuple[type[Exception], ...]:
    import serial

    return (serial.SerialException, OSError)


@dataclass(eq=False)
class _Port:
    """One device path: its handle (None while closed after an I/O error) and its lock."""

    board: str
    path: str
    baud: int
    deadline_secs: float
    handle: serial.Serial | None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def request(self, cmd: str, args: JSONObject) -> ToolResult:
        """[POL-PERIPH-02] one request at a time per port; the deadline starts once we hold it."""
        import serial

        with self.lock:
            try:
                handle = self._ensure_open()
                deadline = time.monotonic() + self.deadline_secs
                return self._exchange(handle, cmd, args, deadline)
            except serial.SerialTimeoutException:
                return ToolResult.fail(timeout_text(self.deadline_secs))  # a stalled write
            except _io_errors() as exc:
                # [POL-PERIPH-13] close now; the next request opens the device again.
                self.close()
                return ToolResult.fail(f"Serial I/O error: {exc}")

    def _ensure_open(self) -> serial.Serial:
        if self.handle is None:
            try:
                self.handle = _open_device(self.path, self.baud, self.deadline_secs)
            except _io_errors() as exc:
                log.warning("Failed to open serial board %s at %s: %s", self.board, self.path, exc)
                raise
        return self.handle

    def _exchange(
        self, handle: serial.Serial, cmd: str, args: JSONObject, deadline: float
    ) -> ToolResult:
        request_id = _next_id()
        # [POL-PERIPH-09] one compact JSON line per request
        line = dumps({"id": request_id, "cmd": cmd, "args": args}) + "\n"
        handle.write_timeout = max(deadline - time.monotonic(), 0.001)
        handle.write(line.encode("utf-8"))
        skipped = 0
        while True:
            frame = self._read_line(handle, deadline)
            if frame is None:
                return ToolResult.fail(timeout_text(self.deadline_secs))
            reply = _parse_frame(frame)
            if reply is not None and reply.get("id") == request_id:
                return map_reply(reply)
            skipped += 1  # [POL-PERIPH-10] everything else is a non-matching frame
            if skipped > MAX_SKIPPED_FRAMES:
                return ToolResult.fail(SKIP_LIMIT_TEXT)

    @staticmethod
    def _read_line(handle: serial.Serial, deadline: float) -> bytes | None:
        """One line without its newline, or None when the deadline passes first."""
        pending = b""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            handle.timeout = remaining
            chunk: bytes = handle.read_until(b"\n")
            pending += chunk
            if pending.endswith(b"\n"):
                return pending[:-1]

    def close(self) -> None:
        handle, self.handle = self.handle, None
        if handle is not None:
            with contextlib.suppress(*_io_errors()):
                handle.close()


def _parse_frame(frame: bytes) -> JSONObject | None:
    """The frame as a JSON object, or None when it is anything else."""
    try:
        value = loads(frame.rstrip(b"\r"))
    except ValueError:  # covers invalid UTF-8 and malformed JSON
        return None
    return value if isinstance(value, dict) else None


def _text(value: JSON) -> str:
    return value if isinstance(value, str) else dumps(value)


def map_reply(reply: JSONObject) -> ToolResult:
    """[POL-PERIPH-12] a matching reply as a tool result.

    Design: an absent or null `result` gives empty output, and `ok` succeeds only when it is
    the JSON value true.
    """
    ok = reply.get("ok") is True
    result = reply.get("result")
    output = "" if result is None else _text(result)
    error = reply.get("error")
    if error is not None:
        return ToolResult(ok, output, _text(error))
    return ToolResult(ok, output, None if ok else DEVICE_FAILURE_TEXT)


class PeripheralManager:
    """The process-wide registry of open serial ports (POL-PERIPH-02, DESIGN §14)."""

    def __init__(self, deadline_secs: float = REQUEST_DEADLINE_SECS) -> None:
        self.deadline_secs = deadline_secs
        self._lock = threading.Lock()
        self._ports: dict[str, _Port] = {}

    def tools_for(self, config: PeripheralsConfig) -> tuple[Tool, ...]:
        """[POL-PERIPH-03..07] connect the boards in order; the first one provides the tools."""
        if not config.enabled:
            return ()  # [POL-PERIPH-01] defence in depth: assemble() already checks
        provider: _Port | None = None
        for board in config.boards:
            port = self._connect(board, config.allowed_path_prefixes)
            if port is None:
                continue
            if provider is None:
                provider = port
                continue
            for name in TOOL_NAMES:  # [POL-PERIPH-07] never replace the first board's tools
                log.warning(
                    "Skipping duplicate peripheral tool %s from board %s (provided by board %s)",
                    name,
                    board.board,
                    provider.board,
                )
        if provider is None:
            return ()
        return (GpioReadTool(provider), GpioWriteTool(provider))

    def _connect(self, board: PeripheralBoard, prefixes: tuple[str, ...]) -> _Port | None:
        if board.transport != "serial":  # [POL-PERIPH-03]
            log.warning("Skipping board %s: unsupported transport %s", board.board, board.transport)
            return None
        path = board.path
        # Design: an empty path is treated as no path; it could never name a device.
        if not path:  # [POL-PERIPH-04]
            log.warning("Skipping serial board %s: no path", board.board)
            return None
        if not any(path.startswith(prefix) for prefix in prefixes):  # [POL-PERIPH-05]
            log.warning("Serial path not allowed: %s. Allowed: %s", path, ", ".join(prefixes))
            return None
        with self._lock:
            port = self._ports.get(path)
            if port is not None:
                return port  # [POL-PERIPH-02] shared, even while closed after an I/O error
            try:
                handle = _open_device(path, board.baud, self.deadline_secs)
            except _io_errors() as exc:  # [POL-PERIPH-06] skip, never fail resolution
                log.warning("Failed to open serial board %s at %s: %s", board.board, path, exc)
                return None
            port = _Port(board.board, path, board.baud, self.deadline_secs, handle)
            self._ports[path] = port
            return port

    def close_all(self) -> None:
        with self._lock:
            ports, self._ports = list(self._ports.values()), {}
        for port in ports:
            with port.lock:
                port.close()


_manager_lock = threading.Lock()
_manager: PeripheralManager | None = None
_next_deadline = REQUEST_DEADLINE_SECS


def manager() -> PeripheralManager:
    """The process-wide manager, created on first use."""
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = PeripheralManager(_next_deadline)
        return _manager


def peripheral_tools(config: PeripheralsConfig) -> tuple[Tool, ...]:
    """`gpio_read` and `gpio_write` of the first board that connects, or nothing.

    Called only by `assemble()` step 1 on a path that connects peripherals (POL-ASSEMBLE-05);
    returns nothing, opening nothing, when `config.enabled` is false.
    """
    if not config.enabled:
        return ()
    return manager().tools_for(config)


def reset_for_tests(deadline_secs: float = REQUEST_DEADLINE_SECS) -> None:
    """Close every port, forget the manager and restart the id counter; the next manager
    uses `deadline_secs`."""
    global _manager, _ids, _next_deadline
    with _manager_lock:
        old, _manager, _next_deadline = _manager, None, deadline_secs
    if old is not None:
        old.close_all()
    with _ids_lock:
        _ids = itertools.count()


def _pin(arguments: JSON) -> int | None:
    pin = argument(arguments, "pin")
    is_pin = isinstance(pin, int) and not isinstance(pin, bool) and pin >= 0
    return pin if is_pin and isinstance(pin, int) else None


def _finish(result: ToolResult, context: ToolContext) -> ToolResult:
    return ToolResult.fail(CANCELLED_TEXT) if context.cancel.is_set() else result


def _pin_schema() -> JSONObject:
    return {"type": "integer", "minimum": 0, "description": "GPIO pin number on the board"}


@dataclass(frozen=True, slots=True)
class GpioReadTool:
    """[POL-PERIPH-14] read one pin of the board that provides the tools."""

    port: _Port
    name: ClassVar[str] = "gpio_read"
    description: ClassVar[str] = "Read the level of a GPIO pin on the connected serial board."
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {"pin": _pin_schema()},
        "required": ["pin"],
    }
    act: ClassVar[bool] = False  # [POL-PERIPH-08] a read tool

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        pin = _pin(arguments)
        if pin is None:
            return missing("pin")
        if context.cancel.is_set():
            return ToolResult.fail(CANCELLED_TEXT)
        return _finish(self.port.request("gpio_read", {"pin": pin}), context)


@dataclass(frozen=True, slots=True)
class GpioWriteTool:
    """[POL-PERIPH-15] drive one pin of the board that provides the tools."""

    port: _Port
    name: ClassVar[str] = "gpio_write"
    description: ClassVar[str] = "Set a GPIO pin on the connected serial board low (0) or high (1)."
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "pin": _pin_schema(),
            "value": {"type": "integer", "enum": [0, 1], "description": "0 = low, 1 = high"},
        },
        "required": ["pin", "value"],
    }
    act: ClassVar[bool] = True  # [POL-PERIPH-08] driving a pin is an action

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        pin = _pin(arguments)
        if pin is None:
            return missing("pin")
        value = argument(arguments, "value")
        if value is None:
            return missing("value")
        # Design: any present value other than the integers 0 and 1 (booleans included).
        if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1):
            return ToolResult.fail("value must be 0 or 1")
        if context.cancel.is_set():
            return ToolResult.fail(CANCELLED_TEXT)
        return _finish(self.port.request("gpio_write", {"pin": pin, "value": value}), context)
