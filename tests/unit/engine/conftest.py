"""Shared set-up for the engine tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from zeroclaw_ref.tools import peripherals


@pytest.fixture(autouse=True)
def _fresh_peripherals() -> Iterator[None]:
    """The peripheral manager is process-wide: start and end every test without open boards,
    so a port one test opened never leaks into the next."""
    peripherals.reset_for_tests()
    yield
    peripherals.reset_for_tests()
