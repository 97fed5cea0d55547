"""Drain a blocking iterator on a helper thread so the consumer stays cancellable (DESIGN §7.6).

The provider generator runs on the pump's thread and hands each item through a queue; the
turn's `CancelToken` puts `CANCELLED` into the same queue, so the worker's single blocking
`get` wakes at once for either reason. An abandoned pump sets `stop` (the provider sees it
through `ModelRequest.stop`) and its thread ends at the provider's next step.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from typing import Generic, TypeVar

from zeroclaw_ref.core.cancel import CANCELLED, CancelToken, _Cancelled

T = TypeVar("T")


class _End:
    pass


_END = _End()


class PumpError(Exception):
    """The drained iterator raised; `__cause__` holds the original exception."""


class Pump(Generic[T]):
    """Iterate `source` on a daemon thread; iterate the pump to receive items."""

    def __init__(self, source: Iterator[T], token: CancelToken, stop: threading.Event) -> None:
        self._source = source
        self._token = token
        self._stop = stop
        self._queue: queue.Queue[T | _End | _Cancelled | BaseException] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="pump", daemon=True)

    def _run(self) -> None:
        try:
            for item in self._source:
                if self._stop.is_set():
                    break
                self._queue.put(item)
        except BaseException as exc:
            self._queue.put(exc)
            return
        self._queue.put(_END)

    def items(self) -> Generator[T | _Cancelled, None, None]:
        """Yield the source's items; yields `CANCELLED` once and stops when the token fires.

        Raises:
            PumpError: the source raised; the turn reports it as a provider failure.
        """
        unregister = self._token.add_callback(lambda: self._queue.put(CANCELLED))
        self._thread.start()
        try:
            while True:
                item = self._queue.get()
                if isinstance(item, _End):
                    return
                if isinstance(item, _Cancelled):
                    self._stop.set()  # before yielding: the consumer may never resume us
                    yield CANCELLED
                    return
                if isinstance(item, BaseException):
                    raise PumpError(str(item)) from item
                yield item
        finally:
            unregister()
            self._stop.set()
