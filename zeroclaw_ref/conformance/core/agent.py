"""The implementation under test as a child process (transcripts.md §7.1, §4).

Design: one reader thread per process turns stdout into events on a queue, so
the runner waits with deadlines instead of polling ([TX-RUN-11]). The reader
also enforces the output discipline: every line must be one UTF-8 JSON value
ended by a lone LF ([TX-FLOW-05]).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .jsonlex import JSON, JsonError, loads


@dataclass(frozen=True, slots=True)
class Message:
    """One well-formed line from the IUT."""

    value: JSON
    text: str


@dataclass(frozen=True, slots=True)
class Pollution:
    """A stdout line that breaks the output discipline."""

    raw: bytes
    why: str


@dataclass(frozen=True, slots=True)
class StdoutClosed:
    """The IUT's stdout reached EOF."""


StdoutEvent = Message | Pollution | StdoutClosed


def classify(line: bytes) -> Message | Pollution:
    """Judge one raw line as read from stdout (with its LF, if any)."""
    if not line.endswith(b"\n"):
        return Pollution(line, "partial line at EOF")
    body = line[:-1]
    if body.endswith(b"\r"):
        return Pollution(line, "CR before LF")
    if body == b"":
        return Pollution(line, "empty line")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return Pollution(line, "not UTF-8")
    try:
        value = loads(text, allow_duplicates=True)
    except JsonError:
        return Pollution(line, "not a JSON value")
    return Message(value, text)


class AgentProcess:
    """A running IUT: stdin writer, stdout event queue, stderr to a file."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, stderr: Path) -> None:
        # [TX-HOST-01] no shell, no added arguments, stderr captured to a file
        with stderr.open("ab") as err:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        self.events: queue.Queue[StdoutEvent] = queue.Queue()
        self.polluted: Pollution | None = None
        self.input_closed = False
        self._reader = threading.Thread(target=self._read, name="iut-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stream: IO[bytes] | None = self.proc.stdout
        assert stream is not None
        for line in iter(stream.readline, b""):
            event = classify(line)
            if isinstance(event, Pollution) and self.polluted is None:
                self.polluted = event
            self.events.put(event)
        self.events.put(StdoutClosed())

    def write(self, data: bytes) -> bool:
        """Write to stdin; False when the IUT no longer reads it."""
        if self.input_closed or self.proc.stdin is None:
            return False
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return False
        return True

    def close_input(self) -> None:
        if self.input_closed:
            return
        self.input_closed = True
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def wait(self, timeout: float) -> int | None:
        """The exit status, or None when the process is still running at the deadline."""
        try:
            return self.proc.wait(timeout=max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            return None

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        """SIGKILL the IUT and everything it started in its session ([TX-FRAME-08])."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()

    def join_reader(self, timeout: float) -> bool:
        """Wait until stdout is at EOF; False at the deadline."""
        self._reader.join(max(timeout, 0.0))
        return not self._reader.is_alive()

    def queued(self) -> list[StdoutEvent]:
        """Every event already read, without waiting (the reader may still add more)."""
        found: list[StdoutEvent] = []
        with contextlib.suppress(queue.Empty):
            while True:
                found.append(self.events.get_nowait())
        return found

    def finish(self) -> None:
        """Kill whatever is left and release the pipes ([TX-RUN-04] step 7)."""
        if self.proc.poll() is None:
            self.kill()
        else:
            # children in the IUT's session may outlive it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.close_input()
        self._reader.join(5.0)
        if self.proc.stdout is not None:
            with contextlib.suppress(OSError):
                self.proc.stdout.close()
