"""Drain a blocking iterator on a helper thread so the consumer stays cancellable (DESIGN §7.6).

The provider generator runs on a pump thread and hands each item through a queue; the turn's
`CancelToken` puts `CANCELLED` into the same queue, so the worker's single blocking `get` wakes
at once for either reason. An abandoned pump sets `stop` (the provider sees it through
`ModelRequest.stop`) and its thread finishes at the provider's next step.

Each pumped source gets a thread of its own, which ends with the source. Only the network
providers are pumped (the others run inline, see `Pump`), and beside a network round trip a
thread start is noise; a source that is slow to notice `stop` holds only its own thread, so it
never delays another turn.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from typing import Generic, TypeVar

from zeroclaw_ref.core.cancel import CANCELLED, CancelToken, WaitCancelled

T = TypeVar("T")


class _End:
    pass


_END = _End()


class PumpError(Exception):
    """The drained iterator raised; `__cause__` holds the original exception."""


class Pump(Generic[T]):
    """Iterate `source` on a pump thread; iterate `items()` to receive them.

    With `inline=True` the source runs on the consumer's own thread instead. That is only
    correct for a source that never blocks except by waiting on `stop` (the demo and scripted
    providers): the token's callback sets `stop`, so such a source ends at once on a cancel,
    without a thread hop per event.
    """

    def __init__(
        self,
        source: Iterator[T],
        token: CancelToken,
        stop: threading.Event,
        inline: bool = False,
    ) -> None:
        self._source = source
        self._token = token
        self._stop = stop
        self._inline = inline
        self._queue: queue.SimpleQueue[T | _End | WaitCancelled | BaseException] = (
            queue.SimpleQueue()
        )

    def _run(self) -> None:
        try:
            for item in self._source:
                if self._stop.is_set():
                    break
                self._queue.put(item)
        except BaseException as exc:  # relayed to the consumer thread
            self._queue.put(exc)
            return
        finally:
            close = getattr(self._source, "close", None)
            if callable(close):
                close()
        self._queue.put(_END)

    def items(self) -> Generator[T | WaitCancelled, None, None]:
        """Yield the source's items; yields `CANCELLED` once and stops when the token fires.

        Raises:
            PumpError: the source raised; the turn reports it as a provider failure.
        """
        if self._inline:
            yield from self._inline_items()
            return
        unregister = self._token.add_callback(lambda: self._queue.put(CANCELLED))
        threading.Thread(target=self._run, name="pump", daemon=True).start()
        try:
            while True:
                item = self._queue.get()
                if isinstance(item, _End):
                    return
                if isinstance(item, WaitCancelled):
                    self._stop.set()  # before yielding: the consumer may never resume us
                    yield CANCELLED
                    return
                if isinstance(item, BaseException):
                    raise PumpError(str(item)) from item
                yield item
        finally:
            unregister()
            self._stop.set()

    def _inline_items(self) -> Generator[T | WaitCancelled, None, None]:
        unregister = self._token.add_callback(self._stop.set)
        source = self._source
        try:
            for item in source:
                if self._token.is_set():
                    yield CANCELLED
                    return
                yield item
            if self._token.is_set():
                yield CANCELLED
        except Exception as exc:
            raise PumpError(str(exc)) from exc
        finally:
            unregister()
            self._stop.set()
            close = getattr(source, "close", None)
            if callable(close):
                close()
