"""``serve``: the oracle plays the agent so that an ACP client can be judged (transcripts.md §14).

Usage::

    python -m zeroclaw_ref.conformance serve SCENARIO [--fixtures DIR] [--report FILE]
        [--allow-tail] [--idle-timeout S]

Configure the client under test to launch that command as its ACP agent, then
drive the client through the conversation of one servable scenario (``list
--servable`` names them, ``show SCENARIO`` prints the conversation: the ``-->``
lines are what the client must send). SCENARIO is a scenario id under the
fixtures directory or a path to a scenario file. serve writes the scenario's
``expect`` messages itself, waits for each ``send`` message from the client
and checks it, prints its verdict on stderr (and into FILE with ``--report``),
and exits 0 when the client passed, 1 when it failed and 2 when the scenario
cannot be served. A client that waits longer than ``--idle-timeout`` seconds
(default 30) between two messages fails; a client that keeps the pipe open
after the last message is let go after the same time.

Design: a reader thread turns stdin into classified lines on a queue, so every
wait is a bounded ``queue.get`` ([TX-RUN-11]); the main thread walks the frames
in order with the roles inverted ([TX-SERVE-03]). The rules that need no stream
(servability, invented values, the client checks) live in serve_values.py.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import BinaryIO

from .agent import Message, Pollution, classify
from .checks import check_frames
from .jsonlex import JSON, dumps, pretty, strict_equal
from .match import MatchContext, split_pointer
from .placeholders import PlaceholderError, substitute
from .report import HISTORY, Failed, FailureInfo, failure, render_failure, scrub, status_line
from .serve_values import (
    MISSING,
    HostNames,
    Instantiator,
    bind_workspace,
    check_client,
    send_kind,
    servable_problems,
)
from .transcript import Frame, Problem, Scenario, TranscriptError, load

DEFAULT_IDLE_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """The command-line options of ``serve``."""

    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    allow_tail: bool = False
    report: Path | None = None


class _Eof:
    """The client closed serve's stdin."""


class _Terminated(_Eof):
    """SIGTERM arrived: serve takes it as the end of the client's output [TX-SERVE-01]."""


ClientEvent = Message | Pollution | _Eof


class ClientInput:
    """serve's stdin as a queue of lines judged by the IUT framing rules [TX-SERVE-01].

    The thread reads the raw descriptor: a daemon thread blocked inside a buffered
    reader would make interpreter shutdown abort while the client keeps stdin open.

    A client that kills serve instead of closing stdin must still get a verdict
    [TX-SERVE-01], so SIGTERM becomes a ``_Terminated`` event on the same queue,
    read like end of input. The handler itself only writes one byte to a pipe:
    raising from it could escape from wherever the main thread was interrupted
    (an ``except`` or ``finally`` block included), and putting on the queue
    could deadlock on the queue's lock if the interrupted code holds it. A
    second thread turns that byte into the event.
    """

    def __init__(self, fd: int) -> None:
        self.events: queue.Queue[ClientEvent] = queue.Queue()
        self.closed = False
        self._end: _Eof | None = None
        self._term_r, self._term_w = os.pipe()
        for target, args, name in (
            (self._read, (fd,), "serve-stdin"),
            (self._watch_sigterm, (), "serve-sigterm"),
        ):
            thread = threading.Thread(target=target, args=args, name=name)
            thread.daemon = True
            thread.start()

    def _read(self, fd: int) -> None:
        partial: list[bytes] = []  # the pieces of a line not yet ended, joined once
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            if b"\n" not in chunk:
                partial.append(chunk)
                continue
            *lines, rest = chunk.split(b"\n")
            lines[0] = b"".join([*partial, lines[0]])
            partial = [rest] if rest else []
            for line in lines:
                self.events.put(classify(line + b"\n"))
        if partial:
            self.events.put(classify(b"".join(partial)))
        self.events.put(_Eof())

    def _watch_sigterm(self) -> None:
        try:
            signalled = os.read(self._term_r, 1)
        except OSError:
            signalled = b""
        finally:
            os.close(self._term_r)
        if signalled:  # b"" means close() ended the watch
            self.events.put(_Terminated())

    def next(self, timeout: float) -> ClientEvent | None:
        """The next event, or None when ``timeout`` seconds pass without one.

        After end of input (or SIGTERM) every call returns that same end at once.
        """
        if self._end is not None:
            return self._end
        try:
            event = self.events.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None
        if isinstance(event, _Eof):
            self._end, self.closed = event, True
        return event

    def on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        """The SIGTERM handler: never raises, takes no lock (see the class docstring)."""
        with contextlib.suppress(OSError):  # EBADF once close() has run
            os.write(self._term_w, b"T")

    def close(self) -> None:
        """Stop watching for SIGTERM; a later signal is ignored by this input."""
        fd, self._term_w = self._term_w, -1
        if fd >= 0:
            os.close(fd)


class ServeSession:
    """One scenario played as the agent against one client [TX-SERVE-03]."""

    def __init__(
        self,
        sc: Scenario,
        options: ServeOptions,
        stdin: int,
        stdout: BinaryIO,
        emit: Callable[[str], None],
    ) -> None:
        self.sc = sc
        self.options = options
        self.input = ClientInput(stdin)
        self.stdout = stdout
        self.emit = emit
        self.host = HostNames(sc.fixtures)
        self.bindings: dict[str, JSON] = {}
        self.values = Instantiator(self.host, self.bindings)
        # (the frame's literal id, the id the client really used) [TX-SERVE-05]
        self.ids: list[tuple[JSON, JSON]] = []
        self.history: dict[str, deque[str]] = {"acp": deque(maxlen=HISTORY)}
        self.ignore = [split_pointer(p) for p in sc.ignore]
        self.close_frame: Frame | None = None
        self.checked = 0
        self.written = 0
        self.notes: list[str] = []
        self.frame: Frame | None = None

    def run(self) -> int:
        """Play the scenario and return the exit status [TX-SERVE-01]."""
        try:
            try:
                for frame in self.sc.frames:
                    self.frame = frame
                    self._play(frame)
                self.frame = None
                self._ending()
            except Failed as failed:
                # [TX-SERVE-07] report at once, stop writing, wait for the client to go
                self.emit(self._failure_report(failed.info))
                self._drain()
                return 1
            except PlaceholderError as exc:
                line = self.frame.line if self.frame is not None else 1
                problem = Problem(self.sc.display, line, "TX-SERVE-04", str(exc))
                self.emit(f"{status_line('error', self.sc.id, self.sc.level)}\n{problem}")
                return 2
            self.emit(self._pass_report())
            return 0
        finally:
            self.input.close()
            self.host.cleanup()

    # -- frames ---------------------------------------------------------------

    def _play(self, frame: Frame) -> None:
        if frame.verb == "expect":
            value = self.values.instantiate(frame.value, frame.mods.get("example", MISSING))
            self._write(frame, self._client_id(value))
        elif frame.verb == "expect_unordered":
            for item in frame.value if isinstance(frame.value, list) else []:
                self._write(frame, self._client_id(self.values.instantiate(item)))
        elif frame.verb == "send":
            self._check(frame, self._await(frame))
        elif frame.verb == "do":
            # [TX-SERVE-02] the final close_input: the client ends the session
            self.close_frame = frame

    def _client_id(self, value: JSON) -> JSON:
        """A response to a client request carries the client's own id [TX-SERVE-05]."""
        if not isinstance(value, dict) or "id" not in value or "method" in value:
            return value
        if "result" not in value and "error" not in value:
            return value
        for frame_id, client_id in reversed(self.ids):
            if strict_equal(frame_id, value["id"]):
                return {k: client_id if k == "id" else v for k, v in value.items()}
        return value

    def _write(self, frame: Frame | None, value: JSON) -> None:
        text = dumps(value)
        try:
            self.stdout.write((text + "\n").encode("utf-8", "surrogatepass"))
            self.stdout.flush()
        except (OSError, ValueError):
            raise failure("unexpected-exit", frame, "the client stopped reading") from None
        self.history["acp"].append("<-- " + text)
        self.written += 1

    def _await(self, frame: Frame | None) -> JSON:
        idle = self.options.idle_timeout
        event = self.input.next(idle)
        if event is None:
            raise failure("timeout", frame, f"no client message within {idle:g} s")
        if isinstance(event, _Terminated):
            raise failure("unexpected-exit", frame, "serve was terminated (SIGTERM) first")
        if isinstance(event, _Eof):
            raise failure("unexpected-exit", frame, "the client closed its output first")
        if isinstance(event, Pollution):
            # [TX-SERVE-01] the client's output must follow the framing rules too
            raise failure("stdout-pollution", frame, f"{event.why}: {event.raw[:300]!r}")
        self.history["acp"].append("--> " + event.text)
        return event.value

    def _check(self, frame: Frame, actual: JSON) -> None:
        ctx = MatchContext(self.host, self.bindings, self.ignore)
        if not self.host.workspace_known:
            bind_workspace(frame, actual, self.host, ctx)
        miss, checked = check_client(frame, actual, ctx)
        if miss is not None:
            raise failure(
                "mismatch",
                frame,
                f"{miss.reason} at {miss.pointer or '(root)'} (checked: {checked})",
                mismatch=miss,
                expected=frame.value,
                actual=actual,
                has_messages=True,
            )
        self.checked += 1
        value = frame.value
        if send_kind(value) != "call" or not isinstance(value, dict) or "id" not in value:
            return
        if isinstance(actual, dict) and "id" in actual:
            self.ids.append((substitute(value["id"], self.host, self.bindings), actual["id"]))

    # -- ending -----------------------------------------------------------------

    def _ending(self) -> None:
        """[TX-SERVE-08] wait for EOF; a tail message fails unless --allow-tail."""
        idle = self.options.idle_timeout
        while True:
            event = self.input.next(idle)
            if event is None:
                if self.close_frame is not None:
                    message = f"the client did not close its output within {idle:g} s"
                    raise failure("timeout", self.close_frame, message)
                self.notes.append(f"the client kept its output open {idle:g} s after the end")
                return
            if isinstance(event, _Eof):
                return
            if isinstance(event, Pollution):
                raise failure("stdout-pollution", None, f"{event.why}: {event.raw[:300]!r}")
            self.history["acp"].append("--> " + event.text)
            self._tail(event.value)

    def _tail(self, value: JSON) -> None:
        if not self.options.allow_tail:
            raise failure(
                "unexpected-message",
                None,
                "the client sent a message after the last frame (see --allow-tail)",
                extra=["client message:", *("  " + line for line in pretty(value).splitlines())],
            )
        if isinstance(value, dict) and "id" in value and isinstance(value.get("method"), str):
            error: JSON = {"code": -32601, "message": f"Method not found: {value['method']}"}
            self._write(None, {"jsonrpc": "2.0", "id": value["id"], "error": error})
        self.notes.append("a message after the last frame was allowed by --allow-tail")

    def _drain(self) -> None:
        while True:
            event = self.input.next(self.options.idle_timeout)
            if event is None or isinstance(event, _Eof):
                return

    # -- reports ------------------------------------------------------------------

    def _failure_report(self, info: FailureInfo) -> str:
        text = render_failure(
            scenario=self.sc.id,
            description=self.sc.description,
            display=self.sc.display,
            failure=info,
            bindings=self.bindings,
            history=self.history,
            stderr_tail=[],
            host=self.host.resolved(),
        )
        # serve has no IUT stderr to show
        text = text[: text.rfind("\nstderr (last")]
        return f"{status_line('fail', self.sc.id, self.sc.level)}\n{text}"

    def _pass_report(self) -> str:
        lines = [
            status_line("pass", self.sc.id, self.sc.level),
            f"scenario: {self.sc.id}",
            f"description: {self.sc.description}",
            f"client messages checked: {self.checked}; messages written: {self.written}",
            *(f"note: {note}" for note in self.notes),
        ]
        return scrub("\n".join(lines), self.host.resolved())


def _locate(scenario: str, fixtures: Path) -> tuple[Path, Path]:
    """(scenario file, corpus root): an id under ``fixtures`` or a path to a file."""
    given = Path(scenario)
    if given.is_file():
        if not fixtures.is_dir():
            for parent in given.resolve().parents:
                if (parent / "VERSION").is_file():
                    return given, parent
        return given, fixtures
    return fixtures / (scenario.removesuffix(".jsonl") + ".jsonl"), fixtures


def serve_command(scenario: str, fixtures: Path, options: ServeOptions) -> int:
    """Entry point of ``python -m zeroclaw_ref.conformance serve``."""

    def emit(text: str) -> None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
        if options.report is not None:
            try:
                options.report.write_text(text + "\n", encoding="utf-8")
            except OSError as exc:
                sys.stderr.write(f"serve: cannot write {options.report}: {exc.strerror}\n")

    if not options.idle_timeout > 0:
        emit("error: --idle-timeout must be > 0")
        return 2
    path, root = _locate(scenario, fixtures)
    if not path.is_file():
        emit(f"error: no scenario {scenario!r} (looked for {path})")
        return 2
    try:
        sc = load(path, root)
    except TranscriptError as exc:
        emit(f"ERROR {scenario}\n{exc}")
        return 2
    problems = check_frames(sc) or servable_problems(sc)
    if problems:
        # [TX-SERVE-02] a scenario serve cannot play is a transcript error
        emit(f"{status_line('error', sc.id, sc.level)}\n" + "\n".join(map(str, problems)))
        return 2
    session = ServeSession(sc, options, sys.stdin.fileno(), sys.stdout.buffer, emit)
    if threading.current_thread() is not threading.main_thread():
        return session.run()  # only the main thread may install a signal handler
    previous = signal.signal(signal.SIGTERM, session.input.on_sigterm)
    try:
        return session.run()
    finally:
        # None: the handler was not installed from Python; the default is the best guess
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
