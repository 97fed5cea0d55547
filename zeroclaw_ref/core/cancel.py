"""Cancellation tokens and one-shot reply boxes (DESIGN §7.5, §7.6).

A `CancelToken` is a flag, an Event made on the first wait, and callbacks that run once, on the
thread that fires it. A `Slot` is a queue of size one that accepts only its first offer, so an
answer and a cancellation racing each other resolve it exactly once, and the waiter makes a
single blocking `get(timeout)` that wakes for whichever comes first — no polling.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Final, Generic, TypeVar

T = TypeVar("T")


class WaitCancelled:
    """The type of `CANCELLED`, what a wait returns when it was cancelled rather than answered
    (`Slot.wait`, the pump's items, an ACP permission round trip).

    `CANCELLED` is its one instance; waiters narrow with `isinstance(value, WaitCancelled)`,
    which type checkers follow where `is CANCELLED` would not.
    """

    def __repr__(self) -> str:
        return "CANCELLED"


CANCELLED: Final = WaitCancelled()


class WaitTimedOut:
    """The type of `TIMED_OUT`, what `Slot.get` returns when its timeout passed first."""

    def __repr__(self) -> str:
        return "TIMED_OUT"


TIMED_OUT: Final = WaitTimedOut()


class CancelToken:
    """A turn's cancellation signal; firing it runs the registered callbacks once.

    Design: the `threading.Event` is built only when somebody waits on the token. Every
    prompt makes a token, few are ever waited on, and building an Event (a Condition and
    two locks) showed up in the prompt round trip (bench/acp_prompt_rtt).
    """

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._fired = False
        self._event: threading.Event | None = None
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0
        if parent is not None:
            # A child token fires with its parent (POL-DELEG-09), never the other way round.
            parent.add_callback(self.fire)

    def is_set(self) -> bool:
        return self._fired

    def wait(self, timeout: float) -> bool:
        """Block until fired or `timeout` seconds pass; True when fired."""
        with self._lock:
            if self._fired:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def fire(self) -> None:
        """Set the signal and run every callback registered so far (idempotent)."""
        with self._lock:
            if self._fired:
                return
            self._fired = True
            event = self._event
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        if event is not None:
            event.set()
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Register `callback`; it runs at once when the token already fired.

        Returns a function that unregisters it (call it after the guarded wait ends).
        """
        with self._lock:
            if not self._fired:
                key = self._next
                self._next += 1
                self._callbacks[key] = callback
                return lambda: self._remove(key)
        callback()
        return lambda: None

    def _remove(self, key: int) -> None:
        with self._lock:
            self._callbacks.pop(key, None)


class Slot(Generic[T]):
    """A one-shot reply box: the first `offer` wins, later offers are ignored."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[T | WaitCancelled] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._filled = False

    def offer(self, value: T | WaitCancelled) -> bool:
        """Deliver `value` unless something was delivered already; True when accepted."""
        with self._lock:
            if self._filled:
                return False
            self._filled = True
        self._queue.put_nowait(value)
        return True

    @property
    def filled(self) -> bool:
        return self._filled

    def get(self, timeout: float | None) -> T | WaitCancelled | WaitTimedOut:
        """Wait for the value, `CANCELLED`, or `TIMED_OUT` after `timeout` seconds."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return TIMED_OUT

    def wait(self, timeout: float, cancel: CancelToken | None) -> T | WaitCancelled | WaitTimedOut:
        """As `get`, and firing `cancel` (when given) offers `CANCELLED`, which wins unless a
        value came first."""
        if cancel is None:
            return self.get(timeout)
        unregister = cancel.add_callback(self._offer_cancelled)
        try:
            return self.get(timeout)
        finally:
            unregister()

    def _offer_cancelled(self) -> None:
        self.offer(CANCELLED)
