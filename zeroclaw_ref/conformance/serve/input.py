"""serve's input: the client's lines as a queue of classified events ([TX-SERVE-01]).

Split out of play.py so the session logic stays readable; ``serve`` and the
``serve --suite`` coordinator both read a client through it (a pipe or a socket).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from types import FrameType

from ..core.agent import Message, Pollution, classify


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
        self.threads: list[threading.Thread] = []
        for target, args, name in (
            (self._read, (fd,), "serve-stdin"),
            (self._watch_sigterm, (), "serve-sigterm"),
        ):
            thread = threading.Thread(target=target, args=args, name=name)
            thread.daemon = True
            thread.start()
            self.threads.append(thread)

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
