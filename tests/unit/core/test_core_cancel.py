"""Cancel tokens, one-shot slots and the pump (DESIGN §7.5, §7.6)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from zeroclaw_ref.core.cancel import CANCELLED, TIMED_OUT, CancelToken, Slot
from zeroclaw_ref.core.pump import Pump, PumpError


def test_a_slot_keeps_only_its_first_offer() -> None:
    slot: Slot[int] = Slot()
    assert slot.offer(1) is True
    assert slot.offer(CANCELLED) is False
    assert slot.get(timeout=1) == 1


def test_a_slot_wait_times_out_with_a_sentinel() -> None:
    assert Slot[int]().get(timeout=0.01) is TIMED_OUT


@pytest.mark.req("ACP-PERM-13")
def test_firing_a_token_wakes_a_slot_wait_through_its_callback() -> None:
    token, slot = CancelToken(), Slot[int]()
    token.add_callback(lambda: slot.offer(CANCELLED))
    threading.Thread(target=token.fire).start()
    assert slot.get(timeout=5) is CANCELLED


def test_callbacks_run_once_and_late_ones_run_at_once() -> None:
    token = CancelToken()
    calls: list[str] = []
    unregister = token.add_callback(lambda: calls.append("a"))
    token.add_callback(lambda: calls.append("b"))
    unregister()
    token.fire()
    token.fire()
    token.add_callback(lambda: calls.append("late"))
    assert calls == ["b", "late"]


def test_a_child_token_fires_with_its_parent_only() -> None:
    parent = CancelToken()
    child = CancelToken(parent)
    child.fire()
    assert not parent.is_set()
    other = CancelToken(parent)
    parent.fire()
    assert other.is_set()


def test_the_pump_relays_items_then_ends() -> None:
    stop = threading.Event()
    assert list(Pump(iter([1, 2, 3]), CancelToken(), stop).items()) == [1, 2, 3]
    assert stop.is_set()  # the source is told to stop once the consumer is done


@pytest.mark.req("ACP-RT-04")
def test_a_cancel_wakes_the_consumer_while_the_source_blocks() -> None:
    token, stop, gate = CancelToken(), threading.Event(), threading.Event()

    def source() -> Iterator[int]:
        yield 1
        gate.wait(10)  # blocks until released, like a slow network read
        yield 2

    items = Pump(source(), token, stop).items()
    assert next(items) == 1
    token.fire()
    assert next(items) is CANCELLED
    assert stop.is_set()
    gate.set()


def test_an_exception_in_the_source_reaches_the_consumer() -> None:
    def source() -> Iterator[int]:
        yield 1
        raise RuntimeError("boom")

    items = Pump(source(), CancelToken(), threading.Event()).items()
    assert next(items) == 1
    with pytest.raises(PumpError) as caught:
        next(items)
    assert isinstance(caught.value.__cause__, RuntimeError)
